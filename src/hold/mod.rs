//! The vocabulary every hold shares: the `Hold` trait, fenced writes, work while held.
//!
//! A hold is what a recipe gives while it holds: a [`LockGuard`](crate::LockGuard) (a mutex's, or a
//! side of a read-write lock's), a [`Lease`](crate::Lease) (a semaphore's), a
//! [`Leadership`](crate::election::Leadership) (a term of an election), a
//! [`MultiLockGuard`](crate::MultiLockGuard) (several locks at once). Each stands for a node of
//! ours in a lock's queue (a `MultiLockGuard` for one per lock), and tells the same things of it:
//!
//! - The loss signal. A hold can be lost while it is held: its session expires, its client is
//!   cut off for longer than its [`LossPolicy`](crate::LossPolicy) allows, someone deletes its
//!   node. `is_held()` tells without a request, and `lost().await` resolves with the
//!   [`LossReason`](crate::LossReason) the moment it happens.
//! - Fencing tokens. `fencing_token()` is the node's czxid (with a
//!   [`LocalHandoff`](crate::LocalHandoff), counted on per holder), strictly increasing from one
//!   holder to the next: hand it to what you write, and have it refuse a token lower than the
//!   highest it has seen. A `MultiLockGuard` has one per lock (`fencing_tokens()`).
//! - Fenced writes. `multi_writer()` makes a [`FencedWrite`], a ZooKeeper transaction whose first
//!   operation checks that our node still exists, and `commit` sends it: its writes land only
//!   while the hold stands.
//! - Running work while held. A recipe's `run_while_held` (a latch's `run_while_leading`) and
//!   [`Hold::while_held`] run work only while the hold stands: the work is dropped the moment
//!   the hold ends, and the [`RunEnd`] says which came first ([`WhileHeld`] is that future; the
//!   work handed to a recipe is an async closure given the hold, `async |guard| …`).
//!
//! [`Hold`] says all of it once, for a `LockGuard`, a `Lease` and a `Leadership`: code that runs
//! under any kind of hold takes a `&dyn Hold`. A `MultiLockGuard` is several holds, each of its
//! `guards()` one. The guide's page: loss-and-fencing.md in docs/.
//!
//! ```no_run
//! use std::time::Duration;
//! use zklock::hold::{Hold, RunEnd};
//!
//! /// Writes the state under whatever hold it is given, only while the hold stands.
//! async fn write_state(hold: &dyn Hold) -> Result<(), Box<dyn std::error::Error>> {
//!     let mut write = hold.multi_writer();
//!     write.add_set_data("/app/state/writer", &hold.fencing_token().to_be_bytes(), None)?;
//!     hold.commit(write).await?;
//!     Ok(())
//! }
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let client = zklock::Client::connect("127.0.0.1:2181").await?;
//! let mutex = zklock::InterProcessMutex::new(&client, "/app/locks/writer")?;
//! let ran = mutex.run_while_held(Duration::from_secs(5), async |guard| write_state(guard).await).await?;
//! match ran {
//!     RunEnd::Done(written) => written?,
//!     RunEnd::Lost(reason) => eprintln!("lock lost ({reason}): stopped"),
//!     end => eprintln!("not written: {end:?}"),
//! }
//! # Ok(())
//! # }
//! ```

// What a held node is and everything that tells of its loss: the node behind every guard
// (`held_node.rs`: path, fencing token, fenced writes, delete), what every hold offers, said
// once (`hold_trait.rs`), a semaphore's `Lease` (`lease.rs`, at the crate root), and all loss
// detection: the signal a hold's watchers share (`hold_signal.rs`), the session's state under the
// `LossPolicy` (`session_watch.rs`), the watch on our own node, set at once or after a second
// (`node_watch.rs`, `delayed_node_watch.rs`), the maximum hold time's timer (`max_hold.rs`),
// fenced transactions (`fenced_write.rs`), and work run only while a hold stands
// (`while_held.rs`). A `LockGuard` is a hold too, but it lives with the hold table it counts in
// (`lock/`), as a `Leadership` lives with its election.

pub(crate) mod delayed_node_watch;
pub(crate) mod fenced_write;
pub(crate) mod held_node;
pub(crate) mod hold_signal;
pub(crate) mod hold_trait;
pub(crate) mod lease;
pub(crate) mod max_hold;
pub(crate) mod node_watch;
pub(crate) mod session_watch;
pub(crate) mod while_held;

pub use fenced_write::FencedWrite;
pub use hold_trait::{Hold, HoldFuture};
pub use while_held::{RunEnd, WhileHeld};
