//! Talking to ZooKeeper, below every recipe: the [`Session`](crate::Session) that connects a new
//! client after an expiry and the [`Connection`](crate::session::Connection) a recipe is built on
//! (`session.rs`), how a session is set up and connected (`session_builder.rs`), how a session ends
//! and what each end means for errors and losses (`session_end.rs`), which request failures are
//! transient and retrying them (`retry.rs`) as the user's
//! [`RetryPolicy`](crate::session::RetryPolicy) paces and bounds them (`retry_policy.rs`), one
//! patience for every call that may wait (`deadline.rs`), and where the work a drop leaves runs, on
//! the caller's runtime or zklock's own (`background.rs`). It knows nothing of queues, holds or
//! elections.

pub(crate) mod background;
pub(crate) mod deadline;
pub(crate) mod retry;
pub(crate) mod retry_policy;
pub(crate) mod session;
pub(crate) mod session_builder;
pub(crate) mod session_end;
