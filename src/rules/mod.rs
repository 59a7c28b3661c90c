//! Pure logic, no I/O: lock path rules (`path.rs`), node naming and ordering (`naming.rs`), the
//! decision "hold, watch whom, or wait for room" (`decide.rs`), how each kind of lock object
//! enters the queue, read-write rules included (`entry.rs`), and the opening: what an acquire
//! sends with its create (`opening.rs`), and the wait-for graph of sessions over lock queues with
//! its cycles, the deadlocks (`wait_for.rs`). Everything here is unit tested without a server.

pub(crate) mod decide;
pub(crate) mod entry;
pub(crate) mod naming;
pub(crate) mod opening;
pub mod path;
pub(crate) mod wait_for;
