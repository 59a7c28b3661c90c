//! Talking to ZooKeeper, below every recipe: the [`Session`](crate::Session) that connects a new
//! client after an expiry and the [`Connection`](crate::Connection) a recipe is built on
//! (`session.rs`), how a session ends and what each end means for errors and losses
//! (`session_end.rs`), which request failures are transient and how long to wait before trying
//! again (`retry.rs`), one patience for every call that may wait (`deadline.rs`), and where the work a
//! drop leaves runs, on the caller's runtime or zklock's own (`background.rs`). It knows nothing
//! of queues, holds or elections.

pub(crate) mod background;
pub(crate) mod deadline;
pub(crate) mod retry;
pub(crate) mod session;
pub(crate) mod session_end;
