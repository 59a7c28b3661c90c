//! Leader election, Curator's two recipes on one engine (`engine.rs`): a background task takes a
//! non-reentrant [`InterProcessMutex`](crate::InterProcessMutex) over and over, and each hold is
//! one term ([`Leadership`], `leadership.rs`), which ends with a [`TermEnd`] (`term_end.rs`).
//! [`LeaderLatch`] (`latch.rs`) queues with Curator's `latch-` names; [`LeaderSelector`]
//! (`selector.rs`) runs the caller's work once per term; what the two say alike is written once
//! in `handle.rs`. `state.rs` and `participant.rs` are what they report;
//! [`LeaderView`] (`view.rs`) follows an election without joining it.

pub(crate) mod engine;
pub(crate) mod handle;
pub(crate) mod latch;
pub(crate) mod leadership;
pub(crate) mod participant;
pub(crate) mod selector;
pub(crate) mod stage;
pub(crate) mod state;
pub(crate) mod term_end;
pub(crate) mod view;
