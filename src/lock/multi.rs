//! `InterProcessMultiLock`: several locks taken as one, all or none.

use std::future::poll_fn;
use std::task::Poll;
use std::time::Duration;

use tracing::Instrument;

use crate::client::session::Connection;

use crate::client::deadline::{acquire_forever, Patience};
use crate::error::{Error, LossReason, Result};
use crate::hold::{Hold, HoldFuture};
use crate::lock::mutex::{InterProcessMutex, LockGuard};
use crate::options::{LockOptions, Settings};
use crate::queue::queue_node::QueueNode;

/// Several locks acquired as one, all or none: Apache Curator's `InterProcessMultiLock`.
///
/// The locks are taken one after the other in one canonical order, whatever order they were
/// given in: by path, and on one path a read-write lock's write side before its read side (a
/// downgrade, never an upgrade). Two multi-locks over overlapping paths therefore never each
/// hold a part the other waits for: a lock ordering makes that deadlock impossible. If one lock cannot be had
/// (time out, error), the ones already taken are released before the acquire returns.
///
/// The locks are [`InterProcessMutex`]es (a read-write lock's sides are too), so each is
/// reentrant and cancel safe; a dropped acquire future releases what it had taken.
///
/// # Examples
///
/// ```no_run
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let client = zklock::Client::connect("127.0.0.1:2181").await?;
/// let both = zklock::InterProcessMultiLock::from_paths(&client, &["/app/locks/account-1", "/app/locks/account-2"])?;
/// let guard = both.acquire().await?;
/// // ... move money between the two accounts ...
/// guard.release().await?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct InterProcessMultiLock {
    locks: Vec<InterProcessMutex>,
}

/// The guard of an [`InterProcessMultiLock`]: one [`LockGuard`] per lock, released together.
///
/// It has what every guard has, for all its locks at once: [`fencing_tokens`](Self::fencing_tokens)
/// (one per lock: each lock's tokens increase from holder to holder, so a resource guarded by
/// one of the locks checks that lock's token), [`is_held`](Self::is_held) and
/// [`lost`](Self::lost), which tell of the first loss of any of them; each lock's own guard is
/// in [`guards`](Self::guards).
#[must_use = "the locks are released as soon as the guard is dropped"]
#[derive(Debug)]
pub struct MultiLockGuard {
    guards: Vec<LockGuard>,
}

impl InterProcessMultiLock {
    /// Takes these locks as one (in the canonical order, see above). Sends nothing to
    /// ZooKeeper.
    ///
    /// # Errors
    /// [`Error::InvalidOptions`] when `locks` is empty.
    pub fn new(mut locks: Vec<InterProcessMutex>) -> Result<Self> {
        if locks.is_empty() {
            return Err(Error::InvalidOptions("a multi-lock needs at least one lock"));
        }
        // Stable: the same lock given twice stays where it was (the second is a reentry).
        locks.sort_by(|a, b| a.acquisition_order().cmp(&b.acquisition_order()));
        Ok(InterProcessMultiLock { locks })
    }

    /// A multi-lock of one new [`InterProcessMutex`] per path.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a bad path; [`Error::InvalidOptions`] when `paths` is empty.
    pub fn from_paths(on: impl Into<Connection>, paths: &[&str]) -> Result<Self> {
        Self::builder(on, paths).build()
    }

    /// Starts building a multi-lock of one new [`InterProcessMutex`] per path, each with the
    /// options given to the builder.
    pub fn builder(on: impl Into<Connection>, paths: &[&str]) -> MultiLockBuilder {
        MultiLockBuilder {
            connection: on.into(),
            paths: paths.iter().map(|path| (*path).to_owned()).collect(),
            settings: Settings::mutex(),
        }
    }

    /// The locks, in acquisition order (by path).
    pub fn locks(&self) -> &[InterProcessMutex] {
        &self.locks
    }

    /// Acquires every lock, waiting as long as it takes.
    ///
    /// # Errors
    /// The first error of any lock (see [`InterProcessMutex::acquire`]); the locks already taken
    /// are released first.
    ///
    /// # Cancel safety
    /// Cancel safe: the guards taken so far are dropped, which releases them in the background,
    /// and the lock being acquired leaves no node.
    pub async fn acquire(&self) -> Result<MultiLockGuard> {
        acquire_forever(|patience| self.acquire_within(patience)).await
    }

    /// Acquires every lock within `timeout` in all: `Ok(None)` when time runs out, after the
    /// locks already taken are released.
    ///
    /// # Errors
    /// As [`Self::acquire`].
    ///
    /// # Cancel safety
    /// Cancel safe, as [`Self::acquire`].
    pub async fn acquire_timeout(&self, timeout: Duration) -> Result<Option<MultiLockGuard>> {
        self.acquire_within(Patience::within(timeout)).await
    }

    /// Takes every lock in order within `patience`, in a span of its own around the locks' spans
    /// (each lock's acquire tells how it ended).
    async fn acquire_within(&self, patience: Patience) -> Result<Option<MultiLockGuard>> {
        let paths: Vec<&str> = self.locks.iter().map(InterProcessMutex::path).collect();
        let span = tracing::debug_span!(target: "zklock", "zklock.multi_lock.acquire", paths = ?paths);
        // Boxed, as a mutex's attempt is (`mutex.rs`): the futures handed out stay small.
        Box::pin(self.take_all(patience).instrument(span)).await
    }

    async fn take_all(&self, patience: Patience) -> Result<Option<MultiLockGuard>> {
        loop {
            let mut guards: Vec<LockGuard> = Vec::with_capacity(self.locks.len());
            for lock in &self.locks {
                // The locks taken so far must still be held when the last one is: while the
                // next may wait, their nodes are watched (one getData each, answered while we
                // wait), so that one an operator deletes meanwhile is known lost.
                if let Some(taken) = guards.last() {
                    taken.held_node().watch_for_deletion();
                }
                match lock.acquire_within(patience).await {
                    Ok(Some(guard)) => guards.push(guard),
                    other => {
                        // Already logged; the acquire's own outcome is what the caller needs.
                        let _ = release_all(guards).await;
                        return other.map(|_| None);
                    }
                }
            }
            for taken in &guards[..guards.len() - 1] {
                taken.held_node().watched().await;
            }
            // All or none: a lock lost while a later one was taken (its node deleted, its
            // session expired; each lock on a `Session` rides over an expiry by itself, so a
            // later one may hold on the next session) is taken again, with the others: start
            // over (on a client, the next attempt fails with the expiry).
            if guards.iter().all(LockGuard::is_held) {
                return Ok(Some(MultiLockGuard { guards }));
            }
            let _ = release_all(guards).await;
            if patience == Patience::NoWait {
                return Ok(None);
            }
        }
    }

    /// Acquires every lock only if each is free now: `Ok(None)` otherwise, with nothing held.
    ///
    /// # Errors
    /// As [`Self::acquire`].
    ///
    /// # Cancel safety
    /// Cancel safe, as [`Self::acquire`].
    pub async fn try_acquire(&self) -> Result<Option<MultiLockGuard>> {
        self.acquire_within(Patience::NoWait).await
    }

    /// Whether the current task holds every lock.
    pub fn is_acquired_by_current_task(&self) -> bool {
        self.locks.iter().all(InterProcessMutex::is_acquired_by_current_task)
    }

    /// Each lock's participants, in acquisition order: the full paths of its queue's nodes,
    /// holder first; see [`InterProcessMutex::participants`]. One list request per lock.
    ///
    /// # Errors
    /// As [`InterProcessMutex::participants`], the first among the locks.
    ///
    /// # Cancel safety
    /// Cancel safe: it only reads.
    pub async fn participants(&self) -> Result<Vec<Vec<String>>> {
        let mut each = Vec::with_capacity(self.locks.len());
        for lock in &self.locks {
            each.push(lock.participants().await?);
        }
        Ok(each)
    }

    /// Like [`participants`](Self::participants), with each node's data; see
    /// [`InterProcessMutex::participants_with_data`].
    ///
    /// # Errors
    /// As [`participants`](Self::participants).
    ///
    /// # Cancel safety
    /// Cancel safe: it only reads.
    pub async fn participants_with_data(&self) -> Result<Vec<Vec<QueueNode>>> {
        let mut each = Vec::with_capacity(self.locks.len());
        for lock in &self.locks {
            each.push(lock.participants_with_data().await?);
        }
        Ok(each)
    }
}

/// Builds an [`InterProcessMultiLock`] of one mutex per path, all with the same options; from
/// [`InterProcessMultiLock::builder`]. The options are every recipe's.
#[derive(Clone, Debug)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct MultiLockBuilder {
    connection: Connection,
    paths: Vec<String>,
    settings: Settings,
}

impl MultiLockBuilder {
    /// The options every recipe takes (node data, ACLs, loss policy, maximum hold time, the
    /// lock path in metrics), as one value: see [`LockOptions`](crate::LockOptions). Replaces
    /// any given before. Defaults to [`LockOptions::new`](crate::LockOptions::new).
    pub fn options(mut self, options: LockOptions) -> Self {
        self.settings.common = options;
        self
    }

    /// Builds the multi-lock. Sends nothing to ZooKeeper.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a bad path; [`Error::InvalidOptions`] when there is no path or
    /// an ACL list is empty.
    pub fn build(self) -> Result<InterProcessMultiLock> {
        let mutex = |path: &String| {
            let mut builder = InterProcessMutex::builder(self.connection.clone(), path);
            builder.settings = self.settings.clone();
            builder.build()
        };
        InterProcessMultiLock::new(self.paths.iter().map(mutex).collect::<Result<_>>()?)
    }
}

impl MultiLockGuard {
    /// Releases every lock, in reverse order of acquisition, and reports the first error (every
    /// lock is released in this process whatever happens; see [`LockGuard::release`]).
    ///
    /// # Errors
    /// The first error of [`LockGuard::release`] among the locks.
    ///
    /// # Cancel safety
    /// Cancel safe: guards not yet released are dropped, which releases them in the background.
    pub async fn release(self) -> Result<()> {
        release_all(self.guards).await
    }

    /// The guards, one per lock, in acquisition order.
    pub fn guards(&self) -> &[LockGuard] {
        &self.guards
    }

    /// Whether every lock is still held; see [`Hold::is_held`](crate::hold::Hold::is_held).
    pub fn is_held(&self) -> bool {
        self.guards.iter().all(LockGuard::is_held)
    }

    /// The fencing token of each lock, in acquisition order (see
    /// [`Hold::fencing_token`](crate::hold::Hold::fencing_token)).
    pub fn fencing_tokens(&self) -> Vec<i64> {
        self.guards.iter().map(LockGuard::fencing_token).collect()
    }

    /// Resolves when any of the locks is lost, with that lock's reason; stays pending while all
    /// are held. Sets the node watch of every lock on the first call, as
    /// [`Hold::lost`](crate::hold::Hold::lost).
    ///
    /// # Cancel safety
    /// Cancel safe, as [`Hold::lost`](crate::hold::Hold::lost).
    pub async fn lost(&self) -> LossReason {
        let mut each: Vec<HoldFuture<'_, LossReason>> = self.guards.iter().map(|guard| guard.lost()).collect();
        poll_fn(|context| {
            for lost in &mut each {
                if let Poll::Ready(reason) = lost.as_mut().poll(context) {
                    return Poll::Ready(reason);
                }
            }
            Poll::Pending
        })
        .await
    }
}

/// Releases in reverse order; returns the first error.
async fn release_all(guards: Vec<LockGuard>) -> Result<()> {
    let mut first_error = None;
    for guard in guards.into_iter().rev() {
        if let Err(err) = guard.release().await {
            tracing::warn!(error = %err.with_causes(), "could not release one lock of a multi-lock");
            first_error.get_or_insert(err);
        }
    }
    first_error.map_or(Ok(()), Err)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The guard and the futures users await must cross threads (tokio's `bounds()` idiom).
    #[allow(dead_code)]
    fn bounds(multi: InterProcessMultiLock) {
        fn send_static<T: Send + 'static>(_: &T) {}
        fn send<T: Send>(_: &T) {}
        send_static(&async move {
            let guard = multi.acquire().await?;
            send(&guard.lost());
            send(&multi.participants());
            send_static(&guard);
            Ok::<(), Error>(())
        });
    }
}
