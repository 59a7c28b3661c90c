//! Pure logic, no I/O: lock path rules (`path.rs`), node naming and ordering (`naming.rs`), the
//! decision "hold, watch whom, or wait for room" (`decide.rs`), how each kind of lock object
//! enters the queue, read-write rules included (`entry.rs`), and the opening: what an acquire
//! sends with its create (`opening.rs`), the wait-for graph of tasks and sessions over lock
//! queues with its cycles, the deadlocks (`wait_for.rs`), the kinds of lock it reads and which
//! of their nodes hold (`lock_kind.rs`), and the owner tag a lock node's uuid
//! carries for it (`owner_tag.rs`). Everything here is unit tested without a server.

pub(crate) mod decide;
pub(crate) mod entry;
pub(crate) mod lock_kind;
pub(crate) mod naming;
pub(crate) mod opening;
pub(crate) mod owner_tag;
pub mod path;
pub(crate) mod wait_for;
