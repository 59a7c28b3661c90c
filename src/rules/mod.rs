//! Pure logic, no I/O: lock path rules (`path.rs`), node naming and ordering (`naming.rs`), the
//! decision "hold, watch whom, or wait for room" (`decide.rs`), how each kind of lock object
//! enters the queue, read-write rules included (`entry.rs`), and the opening: what an acquire
//! sends with its create (`opening.rs`), the wait-for graph of tasks and sessions over lock
//! queues (`wait_for.rs`) and its rings, the deadlocks (`rings.rs`), the kinds of lock it reads
//! and what each of their nodes waits behind (`lock_kind.rs`), and the owner tag (or election
//! mark) a lock node's uuid carries for it (`owner_tag.rs`), and kazoo's semaphore layout: its
//! paths, lease names, stored maximum and lease count (`kazoo_leases.rs`). Everything here is unit tested without a server.

pub(crate) mod decide;
pub(crate) mod entry;
pub(crate) mod kazoo_leases;
pub(crate) mod lock_kind;
pub(crate) mod naming;
pub(crate) mod opening;
pub(crate) mod owner_tag;
pub mod path;
pub(crate) mod rings;
pub(crate) mod wait_for;
