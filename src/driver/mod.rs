//! Pure logic, no I/O: lock path rules, node naming and ordering, and the decision "hold, or
//! watch whom". Everything here is unit tested without a server.

pub(crate) mod decide;
pub(crate) mod naming;
pub mod path;
