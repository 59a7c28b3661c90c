//! Pure logic, no I/O: what every recipe decides, each with its proof.
//!
//! Lock paths and node names, the decision "hold, watch whom, or wait for room", the rule each lock
//! object queues under, the opening, the wait-for graph and its rings, owner tags and kazoo's
//! semaphore layout; each file's first line says which it holds. Everything here is unit tested
//! without a server.

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
