//! Taking a hold (a lock, a lease, leadership) and keeping it: alone on its path, patiently
//! with a line on the terminal, for the chain of `zklock`s it is a link of; watched while it
//! lasts, let go of when asked, kept without a command, taken again after a lost session.

pub mod acquire;
pub mod chain;
pub mod held;
pub mod intruders;
pub mod keep;
pub mod retake;
pub mod revocation;
pub mod take_alone;
pub mod waiting_line;
