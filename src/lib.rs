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
//! let client = zklock::Client::connect("127.0.0.1:2181").await?;
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
//! let go. [`NodeSchema::Kazoo`] makes a mutex, a read-write lock or a [`LeaderSelector`] share
//! its path with Python's kazoo (`Lock`, `ReadLock`/`WriteLock`, `Election`) instead.
//! Leader election: [`LeaderLatch`] and [`LeaderSelector`] (Curator's, on the same queue), whose
//! [`Leadership`] has the locks' loss signal and a fencing token to fence with.
//!
//! Deadlocks across processes (two processes that each hold a lock the other waits on):
//! [`find_deadlocks`] reads them from ZooKeeper, and an acquire built with
//! [`MutexBuilder::fail_on_deadlock`] gives up with [`Error::Deadlock`] when it is one's victim.
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

pub mod blocking;
mod client;
mod election;
mod error;
mod hold;
mod lock;
mod observe;
mod options;
mod queue;
mod rules;

// The public API, each item from its home (the folders re-export nothing).
pub use client::background::finish_releases;
pub use client::retry_policy::{Backoff, RetryPolicy};
pub use client::session::{Connection, ConnectionState, Session};
pub use client::session_builder::SessionBuilder;
pub use election::latch::{LeaderLatch, LeaderLatchBuilder};
pub use election::leadership::Leadership;
pub use election::participant::ElectionParticipant;
pub use election::selector::{LeaderSelector, LeaderSelectorBuilder};
pub use election::state::ElectionState;
pub use election::term_end::TermEnd;
pub use election::view::{Leader, LeaderView};
pub use error::{Deadlock, DeadlockHop, Error, LockWait, LossReason, Result};
pub use hold::fenced_write::FencedWrite;
pub use hold::hold_trait::{Hold, HoldFuture};
pub use hold::lease::Lease;
pub use hold::while_held::{RunEnd, WhileHeld};
pub use lock::guard::LockGuard;
pub use lock::multi::{InterProcessMultiLock, MultiLockBuilder, MultiLockGuard};
pub use lock::mutex::InterProcessMutex;
pub use lock::mutex_builder::{MutexBuilder, NodeSchema};
pub use lock::revoke::revoke;
pub use lock::rwlock::{InterProcessReadWriteLock, ReadWriteLockBuilder};
pub use lock::semaphore::{InterProcessSemaphoreV2, SemaphoreBuilder};
pub use lock::semaphore_mutex::{InterProcessSemaphoreMutex, SemaphoreMutexBuilder};
pub use observe::metrics;
pub use options::{AclProvider, LocalHandoff, LossPolicy};
pub use queue::deadlock::{find_deadlocks, DeadlockReport};
pub use queue::participant_node::ParticipantNode;
pub use queue::position::{watch_queue, QueueHolder, QueuePosition};
pub use rules::path::validate_lock_path;

/// The client crate zklock is built on, re-exported so that a user's `Client`, `Acl` and
/// `MultiWriteResult` are always the very types zklock takes and returns.
pub use zookeeper_client;

/// The ZooKeeper client every recipe can be built on (`&client` where a builder takes a
/// connection): `zklock::Client::connect("host:2181")` connects one with the client's defaults,
/// `zklock::Client::connector()` with options. It is [`zookeeper_client::Client`], named here so
/// that a program needs no dependency but zklock. For a client that outlives its session's
/// expiry, see [`Session`].
pub use zookeeper_client::Client;

/// README.md's Rust examples, compiled as doctests so that they cannot rot.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

/// The guide's pages (docs/), each compiled as doctests, as README.md is.
#[cfg(doctest)]
mod guide {
    /// Declares one doctest item per page.
    macro_rules! pages {
        ($($name:ident = $file:literal;)*) => {
            $( #[doc = include_str!(concat!("../docs/", $file))] pub struct $name; )*
        };
    }
    pages! {
        Contents = "README.md";
        Mutex = "mutex.md";
        ReadWriteLock = "read-write-lock.md";
        Semaphores = "semaphores.md";
        MultiLock = "multi-lock.md";
        Revocation = "revocation.md";
        LeaderLatch = "leader-latch.md";
        LeaderSelector = "leader-selector.md";
        Sessions = "sessions.md";
        Blocking = "blocking.md";
        LossAndFencing = "loss-and-fencing.md";
        LocalHandoff = "local-handoff.md";
        Deadlocks = "deadlocks.md";
        QueueView = "queue-view.md";
        Acls = "acls.md";
        Observability = "observability.md";
        Cli = "cli.md";
        SystemdCron = "systemd-cron.md";
        Testing = "testing.md";
        Interop = "interop.md";
        Guarantees = "guarantees.md";
        Versions = "versions.md";
    }
}
