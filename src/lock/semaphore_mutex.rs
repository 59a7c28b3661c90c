//! `InterProcessSemaphoreMutex`: a mutex that is not reentrant.

use std::time::Duration;

use crate::client::session::Connection;

use crate::error::Result;
use crate::hold::lease::Lease;
use crate::hold::while_held::RunEnd;
use crate::lock::semaphore::{InterProcessSemaphoreV2, SemaphoreBuilder};
use crate::observe::label::Recipe;
use crate::queue::queue_node::QueueNode;

/// A mutex that is **not** reentrant, shared through ZooKeeper: Apache Curator's
/// `InterProcessSemaphoreMutex` (a semaphore of one lease), wire-compatible with it.
///
/// Use it when the lock must be released by whoever holds the [`Lease`], whichever task that is
/// (an `InterProcessMutex` counts holds per task). The lease, not the task that acquired it, is
/// the holder: a dispatcher may acquire, hand the lease to a worker and acquire again; it waits
/// for the worker's release, as Curator's does.
///
/// So a task that keeps its lease and acquires again waits for itself, as with tokio's `Mutex`:
/// [`acquire`](Self::acquire) for ever, [`acquire_timeout`](Self::acquire_timeout) until its
/// timeout (`Ok(None)`, nothing left behind). zklock cannot refuse that case at once: a lease
/// kept by the task and one handed to another look the same (a move leaves no trace), and
/// refusing both would break the hand-off this type exists for.
///
/// # Examples
///
/// ```no_run
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let client = zklock::Client::connect("127.0.0.1:2181").await?;
/// let mutex = zklock::InterProcessSemaphoreMutex::new(&client, "/app/locks/compaction")?;
/// let lease = mutex.acquire().await?;
/// // Hand the lease to a background task; it releases when it is done.
/// tokio::spawn(async move { lease.release().await });
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct InterProcessSemaphoreMutex {
    semaphore: InterProcessSemaphoreV2,
}

impl InterProcessSemaphoreMutex {
    /// Makes the mutex on `path`. Sends nothing to ZooKeeper.
    ///
    /// # Errors
    /// [`Error::InvalidPath`](crate::Error::InvalidPath) for a bad path.
    pub fn new(on: impl Into<Connection>, path: &str) -> Result<Self> {
        Self::builder(on, path).build()
    }

    /// Starts building the mutex on `path` with options.
    pub fn builder(on: impl Into<Connection>, path: &str) -> SemaphoreMutexBuilder {
        SemaphoreMutexBuilder {
            semaphore: InterProcessSemaphoreV2::builder(on, path, 1).serving(Recipe::SemaphoreMutex),
        }
    }

    /// Acquires the mutex, waiting as long as it takes.
    ///
    /// # Errors
    /// As [`InterProcessSemaphoreV2::acquire`].
    ///
    /// # Cancel safety
    /// Cancel safe: a dropped future leaves no node behind.
    pub async fn acquire(&self) -> Result<Lease> {
        self.semaphore.acquire().await
    }

    /// Acquires the mutex, giving up after `timeout` (`Ok(None)`).
    ///
    /// # Errors
    /// As [`Self::acquire`].
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn acquire_timeout(&self, timeout: Duration) -> Result<Option<Lease>> {
        self.semaphore.acquire_timeout(timeout).await
    }

    /// Acquires within `timeout`, runs `work` while held, then releases: as
    /// [`InterProcessMutex::run_while_held`](crate::InterProcessMutex::run_while_held).
    ///
    /// # Errors
    /// As [`Self::acquire`].
    ///
    /// # Cancel safety
    /// As [`InterProcessMutex::run_while_held`](crate::InterProcessMutex::run_while_held).
    pub async fn run_while_held<T, F>(&self, timeout: Duration, work: F) -> Result<RunEnd<T>>
    where
        F: AsyncFnOnce(&Lease) -> T,
    {
        self.semaphore.run_while_held(timeout, work).await
    }

    /// Acquires the mutex only if it is free now.
    ///
    /// # Errors
    /// As [`Self::acquire`].
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn try_acquire(&self) -> Result<Option<Lease>> {
        self.semaphore.try_acquire().await
    }

    /// The lock path.
    pub fn path(&self) -> &str {
        self.semaphore.path()
    }

    /// The lease node held now, if any, as a one-element list (Curator's participant nodes).
    ///
    /// # Errors
    /// As [`InterProcessSemaphoreV2::participants`].
    ///
    /// # Cancel safety
    /// Cancel safe: it only reads.
    pub async fn participants(&self) -> Result<Vec<String>> {
        self.semaphore.participants().await
    }

    /// Like [`participants`](Self::participants), with the node's data.
    ///
    /// # Errors
    /// As [`InterProcessSemaphoreV2::participants`].
    ///
    /// # Cancel safety
    /// Cancel safe: it only reads.
    pub async fn participants_with_data(&self) -> Result<Vec<QueueNode>> {
        self.semaphore.participants_with_data().await
    }
}

/// Builds an [`InterProcessSemaphoreMutex`] with options; from
/// [`InterProcessSemaphoreMutex::builder`]. The options are every recipe's.
#[derive(Clone, Debug)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct SemaphoreMutexBuilder {
    semaphore: SemaphoreBuilder,
}

impl SemaphoreMutexBuilder {
    /// The options every recipe takes (node data, ACLs, loss policy, maximum hold time, the
    /// lock path in metrics), as one value: see [`LockOptions`](crate::LockOptions). Replaces
    /// any given before. Defaults to [`LockOptions::new`](crate::LockOptions::new).
    pub fn options(self, options: crate::options::LockOptions) -> Self {
        SemaphoreMutexBuilder { semaphore: self.semaphore.options(options) }
    }

    /// Builds the mutex. Sends nothing to ZooKeeper.
    ///
    /// # Errors
    /// As [`SemaphoreBuilder::build`].
    pub fn build(self) -> Result<InterProcessSemaphoreMutex> {
        Ok(InterProcessSemaphoreMutex { semaphore: self.semaphore.build()? })
    }
}
