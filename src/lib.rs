//! zklock
