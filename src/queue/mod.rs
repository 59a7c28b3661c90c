//! The queue every recipe stands in, and the only layer that talks to ZooKeeper: create a
//! protected node (`node.rs`), list and sort the queue, watch the one node the driver names and
//! wait (`queue.rs`, `take_lease.rs`), delete the node on every way out, retry what is transient
//! (`retry.rs`), and tell a held lock's loss (`hold_signal.rs`, `session_watch.rs`,
//! `node_watch.rs`, `delayed_node_watch.rs`, with `session_end.rs` the one mapping from a
//! session's end to errors and loss reasons). It sends what the driver decides.

pub(crate) mod deadline;
pub(crate) mod delayed_node_watch;
pub(crate) mod hold_signal;
pub(crate) mod node;
pub(crate) mod node_watch;
pub(crate) mod queue;
pub(crate) mod retry;
pub(crate) mod session_end;
pub(crate) mod session_watch;
pub(crate) mod take_lease;
