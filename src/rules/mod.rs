//! Pure logic, no I/O: lock path rules, node naming and ordering, the decision "hold, or
//! watch whom", the read-write lock's rules, and the opening (what an acquire sends with its
//! create). Everything here is unit tested without a server.

pub(crate) mod decide;
pub(crate) mod naming;
pub(crate) mod opening;
pub mod path;
pub(crate) mod read_write;
