//! ZooKeeper lock recipes for async Rust, in the style of Apache Curator and wire-compatible
//! with it: a Java service using Curator's `InterProcessMutex` and a Rust service using
//! [`InterProcessMutex`] can share one lock.
//!
//! Locks are built on the [`zookeeper_client`] crate (with its `tokio` feature) and tokio. Each
//! acquire puts an ephemeral sequential node in a queue under the lock path; the first node
//! holds the lock, and every waiter watches only the node just before its own. Crashed holders
//! release by themselves when their session ends, waiters are served in order, and an
//! uncontended acquire costs one round trip.
//!
//! ```no_run
//! use zklock::InterProcessMutex;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let client = zookeeper_client::Client::connect("127.0.0.1:2181").await?;
//! let mutex = InterProcessMutex::new(&client, "/app/locks/migrations")?;
//! let guard = mutex.acquire().await?;
//! // ... the critical section: no other participant is here ...
//! guard.release().await?;
//! # Ok(())
//! # }
//! ```
//!
//! The recipes: [`InterProcessMutex`], [`InterProcessReadWriteLock`], [`InterProcessSemaphoreV2`],
//! [`InterProcessSemaphoreMutex`], [`InterProcessMultiLock`], and [`revoke`] to ask a holder to
//! let go. [`NodeSchema::Kazoo`] makes a mutex share its lock with Python's kazoo instead.
//! Leader election: [`LeaderLatch`] and [`LeaderSelector`] (Curator's, on the same queue), whose
//! [`Leadership`] has the locks' loss signal and an epoch to fence with.
//!
//! Runnable versions are in `examples/`; `scripts/example` starts a throwaway ZooKeeper for
//! them. Every acquire is cancel safe, and [`LockGuard::fencing_token`] gives a strictly
//! increasing token to fence the resources the lock protects.
//!
//! Every recipe takes the same options through `Type::builder(...)` (ACLs through
//! [`AclProvider`], [`LossPolicy`], node data); the mutexes are reentrant per tokio task (two
//! futures of one task share a hold) unless built with `reentrant(false)`. Events go through
//! `tracing` (target `zklock`), metrics through the `metrics` facade with the `metrics` feature.
#![deny(missing_docs, missing_debug_implementations)]

mod election;
mod error;
mod hold;
mod lock;
mod observe;
mod options;
mod queue;
mod rules;

pub use election::{
    ElectionParticipant, ElectionState, LeaderLatch, LeaderLatchBuilder, LeaderSelector, LeaderSelectorBuilder,
    Leadership, TermEnd,
};
pub use error::{Error, LossReason, Result};
pub use hold::{FencedWrite, Hold, HoldFuture, Lease};
pub use lock::{
    revoke, InterProcessMultiLock, InterProcessMutex, InterProcessReadWriteLock, InterProcessSemaphoreMutex,
    InterProcessSemaphoreV2, LockGuard, MultiLockBuilder, MultiLockGuard, MutexBuilder, NodeSchema,
    ReadWriteLockBuilder, SemaphoreBuilder, SemaphoreMutexBuilder,
};
pub use observe::metrics;
pub use options::{AclProvider, LocalHandoff, LossPolicy};
pub use queue::participant_node::ParticipantNode;
pub use queue::session::{Connection, ConnectionState, Session};
pub use rules::path::validate_lock_path;
/// The client crate zklock is built on, re-exported so that a user's `Client`, `Acl` and
/// `MultiWriteResult` are always the very types zklock takes and returns.
pub use zookeeper_client;

/// README.md's Rust examples, compiled as doctests so that they cannot rot.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
