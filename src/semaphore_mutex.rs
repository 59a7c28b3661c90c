//! `InterProcessSemaphoreMutex`: a mutex that is not reentrant.

use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use zookeeper_client::Client;

use crate::internals::loss::HoldSignal;
use crate::owner::Owner;
use crate::{Error, InterProcessSemaphoreV2, Lease, ParticipantNode, Result};

/// A mutex that is **not** reentrant, shared through ZooKeeper: Apache Curator's
/// `InterProcessSemaphoreMutex` (a semaphore of one lease), wire-compatible with it.
///
/// Use it when the lock must be released by whoever holds the [`Lease`], whichever task that is
/// (an `InterProcessMutex` counts holds per task). A task that holds it and asks again gets
/// [`Error::WouldDeadlock`] at once (Curator's would wait for itself for ever); another task of
/// the same process waits like any other participant.
///
/// # Examples
///
/// ```no_run
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let client = zookeeper_client::Client::connect("127.0.0.1:2181").await?;
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
    /// Which owner holds which live lease, to refuse a re-acquire that would wait for itself.
    holders: Arc<Mutex<Vec<Holder>>>,
}

/// An owner and the loss signal of its lease (alive and unreleased while the lease is held).
type Holder = (Owner, Weak<HoldSignal>);

impl InterProcessSemaphoreMutex {
    /// Makes the mutex on `path`. Sends nothing to ZooKeeper.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a bad path.
    pub fn new(client: &Client, path: &str) -> Result<Self> {
        Ok(InterProcessSemaphoreMutex {
            semaphore: InterProcessSemaphoreV2::new(client, path, 1)?,
            holders: Arc::default(),
        })
    }

    /// Acquires the mutex, waiting as long as it takes.
    ///
    /// # Errors
    /// [`Error::WouldDeadlock`] when the current task holds it already; otherwise as
    /// [`InterProcessSemaphoreV2::acquire`].
    ///
    /// # Cancel safety
    /// Cancel safe: a dropped future leaves no node behind.
    pub async fn acquire(&self) -> Result<Lease> {
        self.refuse_reentry()?;
        let lease = self.semaphore.acquire().await?;
        Ok(self.record(lease))
    }

    /// Acquires the mutex, giving up after `timeout` (`Ok(None)`).
    ///
    /// # Errors
    /// As [`Self::acquire`].
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn acquire_timeout(&self, timeout: Duration) -> Result<Option<Lease>> {
        self.refuse_reentry()?;
        Ok(self.semaphore.acquire_timeout(timeout).await?.map(|lease| self.record(lease)))
    }

    /// Acquires the mutex only if it is free now.
    ///
    /// # Errors
    /// As [`Self::acquire`].
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn try_acquire(&self) -> Result<Option<Lease>> {
        self.refuse_reentry()?;
        Ok(self.semaphore.try_acquire().await?.map(|lease| self.record(lease)))
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
    pub async fn participants_with_data(&self) -> Result<Vec<ParticipantNode>> {
        self.semaphore.participants_with_data().await
    }

    fn refuse_reentry(&self) -> Result<()> {
        let owner = Owner::current();
        let mut holders = self.holders.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        holders.retain(|(_, signal)| signal.upgrade().is_some_and(|signal| !signal.is_released()));
        if holders.iter().any(|(holder, _)| *holder == owner) {
            return Err(Error::WouldDeadlock("the semaphore mutex is not reentrant and this task holds it"));
        }
        Ok(())
    }

    fn record(&self, lease: Lease) -> Lease {
        let mut holders = self.holders.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        holders.push((Owner::current(), lease.signal()));
        lease
    }
}
