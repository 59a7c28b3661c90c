//! Talking to ZooKeeper, below every recipe: sessions, their ends, retries, patience.
//!
//! It knows nothing of queues, holds or elections; each file's first line says what it holds.

pub(crate) mod background;
pub(crate) mod deadline;
pub(crate) mod retry;
pub(crate) mod session;
pub(crate) mod session_end;
