//! Leader election: Curator's `LeaderLatch` and `LeaderSelector`, and a leader's view.
//!
//! A [`LeaderLatch`] leads while its node is first, a [`LeaderSelector`] runs the leader's work
//! once per term. Each term is a [`Leadership`] (a loss signal and a fencing token, as a lock's
//! hold has), which ends with a [`TermEnd`]; a participant's [`ElectionState`] is what it reports,
//! and a [`LeaderView`] follows who leads without joining. The participants and the leader are
//! nodes in the election's queue, each a [`QueueNode`](crate::queue::QueueNode) whose
//! [`id`](crate::queue::QueueNode::id) is the participant's id.
//!
//! `LeaderLatch` and `LeaderSelector` are also at the crate root; the rest of the election's
//! vocabulary is here only. The guide's pages: leader-latch.md and leader-selector.md in docs/.
//!
//! ```no_run
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use zklock::election::{Leadership, TermEnd};
//! use zklock::hold::Hold;
//!
//! let client = zklock::Client::connect("127.0.0.1:2181").await?;
//! let latch = zklock::LeaderLatch::new(&client, "/app/leader", "web-3")?;
//! latch.start().await?;
//! let term: Leadership = latch.await_leadership().await?;
//! let end: TermEnd = term.ended().await;
//! eprintln!("led with token {}, until {end:?}", term.fencing_token());
//! # Ok(())
//! # }
//! ```

// The engine: a background task takes a non-reentrant `InterProcessMutex` over and over, and
// each hold is one term (`engine.rs`, its stages in `stage.rs`; a term is `leadership.rs`, its end
// `term_end.rs`). `latch.rs` queues with Curator's `latch-` names, `selector.rs` runs the caller's
// work per term; what the two say alike is written once in `handle.rs`. `state.rs` is what they
// report; `view.rs` follows an election without joining it.

pub(crate) mod engine;
pub(crate) mod handle;
pub(crate) mod latch;
pub(crate) mod leadership;
pub(crate) mod selector;
pub(crate) mod stage;
pub(crate) mod state;
pub(crate) mod term_end;
pub(crate) mod view;

pub use latch::{LeaderLatch, LeaderLatchBuilder};
pub use leadership::Leadership;
pub use selector::{LeaderSelector, LeaderSelectorBuilder};
pub use state::ElectionState;
pub use term_end::TermEnd;
pub use view::LeaderView;
