//! ZooKeeper lock recipes for async Rust, wire-compatible with Apache Curator.
//!
//! In the style of Apache Curator and wire-compatible with it: a Java service using Curator's
//! `InterProcessMutex` and a Rust service using [`InterProcessMutex`] can share one lock.
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
//!
//! A feature with a vocabulary of its own has a module:
//!
//! - [`election`]: leader election. [`LeaderLatch`] and [`LeaderSelector`] (Curator's, on the
//!   same queue; also here at the root), whose [`Leadership`](election::Leadership) has the
//!   locks' loss signal and a fencing token to fence with, and a
//!   [`LeaderView`](election::LeaderView) that follows an election without joining it.
//! - [`session`]: connecting. A [`Session`] (also here at the root) connects a new client after
//!   each expiry, with its [`RetryPolicy`](session::RetryPolicy); a recipe is built on a
//!   [`Connection`](session::Connection) (a `&Client` or a `&Session`).
//! - [`deadlock`]: deadlocks across processes (two processes that each hold a lock the other
//!   waits on). [`find_deadlocks`](deadlock::find_deadlocks) reads them from ZooKeeper, and an
//!   acquire built with [`MutexBuilder::fail_on_deadlock`] gives up with [`Error::Deadlock`]
//!   when it is one's victim.
//! - [`hold`]: what every hold shares (a [`LockGuard`], a [`Lease`], a
//!   [`Leadership`](election::Leadership)): the trait [`Hold`](hold::Hold), with the loss
//!   signal and the fencing token; the [`FencedWrite`](hold::FencedWrite) that commits only
//!   while held; and work run only while held, which ends with a [`RunEnd`](hold::RunEnd). A
//!   [`MultiLockGuard`] stands for several nodes and tells its own (`is_held`, `lost`,
//!   `fencing_tokens`).
//! - [`queue`]: where a waiting acquire stands in its lock's queue
//!   ([`watch_queue`](queue::watch_queue)), and the queue's participants.
//! - [`blocking`]: every recipe for synchronous code; [`metrics`]: the metrics zklock records.
//!
//! Runnable versions are in `examples/`; `scripts/example` starts a throwaway ZooKeeper for
//! them. The guide, one page per recipe and per topic, is
//! [docs/ in the repository](https://github.com/zklock/zklock/blob/main/docs/README.md). Every
//! acquire is cancel safe. What a guard, a lease and a term of leadership tell of their hold
//! (whether it stands, when it is lost, a strictly increasing [fencing
//! token](crate::hold::Hold::fencing_token) to fence the resources it protects, fenced writes)
//! is one trait's, [`hold::Hold`]: bring it into scope with `use zklock::hold::Hold;`.
//!
//! Every recipe's `Type::builder(...)` takes one [`LockOptions`] value (node data, ACLs through
//! [`AclProvider`], [`LossPolicy`], a maximum hold time); the mutexes are reentrant per tokio task (two
//! futures of one task share a hold) unless built with `reentrant(false)`. Events go through
//! `tracing` (target `zklock`), metrics through the `metrics` facade with the `metrics` feature.
#![deny(missing_docs, missing_debug_implementations)]

pub mod blocking;
mod client;
pub mod election;
mod error;
pub mod hold;
mod lock;
mod observe;
mod options;
pub mod queue;
mod rules;

// The public API: every item has one public path, from its home (the folders re-export
// nothing, but for the public modules `blocking`, `election`, `hold` and `queue`, whose mod.rs
// re-exports their users' items). A feature whose items live in several folders, or in a folder
// named for its layer, gets its module here: `session` and `deadlock`, re-exports and docs only.
// Three names have two paths, the entry points of their features: `LeaderLatch` and
// `LeaderSelector` at the root and in `election`, `Session` at the root and in `session`.
pub use election::{LeaderLatch, LeaderSelector};
pub use error::{Error, LossReason, Result};
pub use hold::lease::Lease;
pub use lock::multi::{InterProcessMultiLock, MultiLockBuilder, MultiLockGuard};
pub use lock::mutex::{InterProcessMutex, LockGuard, MutexBuilder, NodeSchema};
pub use lock::revoke::revoke;
pub use lock::rwlock::{InterProcessReadWriteLock, ReadWriteLockBuilder};
pub use lock::semaphore::{InterProcessSemaphoreV2, SemaphoreBuilder};
pub use lock::semaphore_mutex::{InterProcessSemaphoreMutex, SemaphoreMutexBuilder};
pub use observe::metrics;
pub use options::{AclProvider, LocalHandoff, LockOptions, LossPolicy};
pub use rules::path::validate_lock_path;
pub use session::Session;

pub mod session {
    //! Connecting to ZooKeeper: a [`Session`] connects a new client after each expiry (Curator's
    //! framework does so for Java), paced by a [`RetryPolicy`], and tells its [`ConnectionState`];
    //! every recipe is built on a [`Connection`], which a `&Client` or a `&Session` converts into.
    //! [`finish_releases`] waits for the releases that dropped guards left to the background.
    //!
    //! `Session` is also at the crate root. The guide's page: sessions.md in docs/.
    //!
    //! ```no_run
    //! # #[tokio::main(flavor = "current_thread")]
    //! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    //! use std::time::Duration;
    //! use zklock::session::{RetryPolicy, Session};
    //!
    //! let session = Session::builder()
    //!     .retry_policy(RetryPolicy::new().with_max_elapsed(Duration::from_secs(30)))
    //!     .connect_to("127.0.0.1:2181")
    //!     .await?;
    //! let mutex = zklock::InterProcessMutex::new(&session, "/app/locks/migrations")?;
    //! mutex.acquire().await?.release().await?;
    //! zklock::session::finish_releases(Duration::from_secs(5)).await;
    //! # Ok(())
    //! # }
    //! ```

    pub use crate::client::background::finish_releases;
    pub use crate::client::retry::{Backoff, RetryPolicy};
    pub use crate::client::session::{Connection, ConnectionState, Session, SessionBuilder};
}

pub mod deadlock {
    //! Deadlocks across processes: two processes (or tasks, or chains of them) that each hold a
    //! lock the next one waits on. [`find_deadlocks`] reads the lock folders under a root as a
    //! wait-for graph and returns its rings ([`DeadlockReport`]); an acquire built with
    //! [`fail_on_deadlock`](crate::MutexBuilder::fail_on_deadlock) gives up with
    //! [`Error::Deadlock`](crate::Error::Deadlock) when it is a ring's victim. Each ring is a
    //! [`Deadlock`]: its [`DeadlockHop`]s, each a waiter with the [`LockWait`] it is stuck in.
    //!
    //! The guide's page: deadlocks.md in docs/.
    //!
    //! ```no_run
    //! # #[tokio::main(flavor = "current_thread")]
    //! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    //! let client = zklock::Client::connect("127.0.0.1:2181").await?;
    //! let report = zklock::deadlock::find_deadlocks(&client, "/app/locks").await?;
    //! for ring in report.certain() {
    //!     eprintln!("a ring of {} waits", ring.hops.len());
    //! }
    //! # Ok(())
    //! # }
    //! ```

    pub use crate::error::{Deadlock, DeadlockHop, LockWait};
    pub use crate::queue::deadlock::{find_deadlocks, DeadlockReport};
}

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
