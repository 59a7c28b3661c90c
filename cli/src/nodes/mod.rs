//! A lock path's nodes as zklock writes and reads them: what its own node says, which kinds of
//! lock already hold the path, who holds and who waits (and how `zklock list` shows them), and
//! the ACL the nodes it creates get.

pub mod acl;
pub mod layout;
pub mod list_output;
pub mod node_data;
pub mod queue;
