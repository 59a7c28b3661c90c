//! A lock's queue as its participants see it: `QueueNode`, `QueuePosition`, `watch_queue`.
//!
//! Every recipe queues its acquires as nodes under the lock path, and the first holds.
//! [`watch_queue`] runs an acquire and publishes where it stands while it waits (a
//! [`QueuePosition`]: how many are ahead, and the holder at the head);
//! [`participants_with_data`](crate::InterProcessMutex::participants_with_data) (of the mutex, the
//! semaphores and the multi-lock) reads the queue. A node in a queue is a [`QueueNode`] wherever
//! one is shown, an election's participants and leader included.
//!
//! The guide's page: queue-view.md in docs/.
//!
//! ```no_run
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use zklock::queue::{watch_queue, QueuePosition};
//!
//! let client = zklock::Client::connect("127.0.0.1:2181").await?;
//! let mutex = zklock::InterProcessMutex::new(&client, "/app/locks/nightly")?;
//! let (position, seen) = tokio::sync::watch::channel(None::<QueuePosition>);
//! let guard = watch_queue(position, mutex.acquire()).await?;
//! eprintln!("held after {:?}", seen.borrow().as_ref().map(|at| at.waiting_since.elapsed()));
//! guard.release().await?;
//! # Ok(())
//! # }
//! ```

// The queue engine every recipe stands in: create a protected node, and delete what an acquire
// that did not hold may have left of it (`node.rs`), list and sort the queue, watch the one node
// `rules` names and wait for our turn, or for room among a semaphore's leases (`turn.rs`), delete
// a released node (`delete.rs`); read the queue as its participants (`listing.rs`, a node as
// `queue_node.rs` shows it); tell a watched acquire where it stands (`position.rs`); read the lock
// folders under a root as a wait-for graph and find its deadlocks, for `zklock deadlocks` and for
// a waiting acquire that gives up as a deadlock's victim (`deadlock.rs`, public as
// `zklock::deadlock`). It sends what `rules` decides, through `client`; it knows nothing of
// guards, holds or elections.

pub(crate) mod deadlock;
pub(crate) mod delete;
pub(crate) mod listing;
pub(crate) mod node;
pub(crate) mod position;
pub(crate) mod queue_node;
pub(crate) mod turn;

pub use position::{watch_queue, QueuePosition};
pub use queue_node::QueueNode;
