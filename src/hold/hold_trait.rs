//! What every hold offers, said once: a lock's guard, a semaphore's lease and a term of
//! leadership each stand for one node of ours, and tell the same things of it.

use std::fmt;
use std::future::Future;
use std::pin::Pin;

use zookeeper_client::MultiWriteResult;

use super::held_node::HeldNode;
use super::while_held::RunEnd;
use super::while_held::WhileHeld;
use crate::error::{LossReason, Result};
use crate::hold::fenced_write::FencedWrite;

/// A future a [`Hold`] returns: boxed, so that `dyn Hold` can be used (a program that runs
/// something under any kind of hold keeps a `&dyn Hold`).
pub type HoldFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What every hold offers: [`LockGuard`](crate::LockGuard), [`Lease`](crate::Lease) and
/// [`Leadership`](crate::election::Leadership) each stand for one node of ours in a queue, and tell
/// the same things of it. Write code that runs under any of them against this trait (or
/// `&dyn Hold`); each type's own methods of the same names say the same, and a
/// [`Leadership`](crate::election::Leadership)'s own [`ended`](crate::election::Leadership::ended)
/// tells every end of the term, not only a loss.
///
/// Sealed: only zklock's holds implement it.
///
/// # Examples
///
/// ```no_run
/// use zklock::hold::Hold;
///
/// /// Copies under whatever hold it is given, and stops the moment the hold is lost.
/// async fn copy_under(hold: &dyn Hold) {
///     # async fn copy_batch(_token: i64) {}
///     tokio::select! {
///         () = copy_batch(hold.fencing_token()) => {}
///         reason = hold.lost() => eprintln!("{} lost ({reason}); stopped", hold.node_path()),
///     }
/// }
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let client = zklock::Client::connect("127.0.0.1:2181").await?;
/// let guard = zklock::InterProcessMutex::new(&client, "/app/locks/import")?.acquire().await?;
/// copy_under(&guard).await;
/// let lease = zklock::InterProcessSemaphoreV2::new(&client, "/app/semaphores/import", 2)?.acquire().await?;
/// copy_under(&lease).await;
/// # Ok(())
/// # }
/// ```
pub trait Hold: sealed::Sealed + fmt::Debug + Send + Sync {
    /// The full path of our node.
    fn node_path(&self) -> &str {
        self.held_node().path()
    }

    /// The czxid of our node (with a [`LocalHandoff`](crate::LocalHandoff), counted on per
    /// holder): strictly increasing from one holder to the next: a fencing token, for a
    /// leadership too. See [`LockGuard::fencing_token`](crate::LockGuard::fencing_token).
    fn fencing_token(&self) -> i64 {
        self.holder_token()
    }

    /// Whether the hold still stands as far as this process knows: `false` once it is lost,
    /// released or (a term) given up. Never sends a request. See
    /// [`LockGuard::is_held`](crate::LockGuard::is_held).
    fn is_held(&self) -> bool {
        !self.given_up() && self.held_node().is_held()
    }

    /// Resolves when the hold is lost, with the reason; stays pending while it is held, and
    /// after it was released or given up. The first call sets a watch on our node (one request).
    ///
    /// # Cancel safety
    /// Cancel safe.
    fn lost(&self) -> HoldFuture<'_, LossReason> {
        Box::pin(self.held_node().lost())
    }

    /// Resolves when someone asks the holder to let go ([`revoke`](crate::revoke), Curator's
    /// `Revoker`); never for a term of leadership, which cannot be revoked. See
    /// [`LockGuard::revocation_requested`](crate::LockGuard::revocation_requested).
    ///
    /// # Cancel safety
    /// Cancel safe.
    fn revocation_requested(&self) -> HoldFuture<'_, ()> {
        match self.revocable() {
            true => Box::pin(self.held_node().revocation_requested()),
            false => Box::pin(std::future::pending()),
        }
    }

    /// A transaction that commits only while this is held: its first operation checks that our
    /// node exists. See [`LockGuard::multi_writer`](crate::LockGuard::multi_writer).
    fn multi_writer(&self) -> FencedWrite<'_> {
        self.held_node().multi_writer()
    }

    /// Commits a transaction from [`multi_writer`](Self::multi_writer) if and only if our node
    /// still exists.
    ///
    /// # Errors
    /// As [`LockGuard::commit`](crate::LockGuard::commit).
    ///
    /// # Cancel safety
    /// As [`LockGuard::commit`](crate::LockGuard::commit).
    fn commit<'a>(&'a self, writer: FencedWrite<'a>) -> HoldFuture<'a, Result<Vec<MultiWriteResult>>> {
        Box::pin(self.held_node().commit(writer))
    }

    /// Runs `work` while the hold stands: resolves with
    /// [`RunEnd::Done`](crate::hold::RunEnd::Done) and the work's output if it finishes first, or
    /// drops the work the moment the hold ends and says why:
    /// [`RunEnd::Lost`](crate::hold::RunEnd::Lost) with the reason, or, for a term of leadership
    /// given up (its latch or selector closed or interrupted),
    /// [`RunEnd::GivenUp`](crate::hold::RunEnd::GivenUp). The hold itself is left as it is:
    /// release it as usual. The first poll sets the watch on our node (one request), so that
    /// a deletion by someone else ends the work within a notification.
    ///
    /// Dropped work stops at its last `.await`: what it had done before stays done. Let the
    /// resource it writes to refuse stale holders with the [fencing
    /// token](Self::fencing_token) for what it had already sent.
    ///
    /// # Cancel safety
    /// Cancel safe: dropping this future drops the work, and leaves the hold as it is.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use zklock::hold::{Hold, RunEnd};
    /// # async fn copy_batch(_token: i64) -> u32 { 0 }
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let client = zklock::Client::connect("127.0.0.1:2181").await?;
    /// let guard = zklock::InterProcessMutex::new(&client, "/app/locks/import")?.acquire().await?;
    /// match guard.while_held(copy_batch(guard.fencing_token())).await {
    ///     RunEnd::Done(copied) => println!("copied {copied} rows"),
    ///     RunEnd::Lost(reason) => eprintln!("lost the lock ({reason}): stopped"),
    ///     end => eprintln!("stopped: {end:?}"),
    /// }
    /// guard.release().await?;
    /// # Ok(())
    /// # }
    /// ```
    fn while_held<W: Future>(&self, work: W) -> WhileHeld<'_, W>
    where
        Self: Sized,
    {
        WhileHeld::new(self.ends(), work)
    }
}

impl<T: sealed::Sealed + fmt::Debug + Send + Sync> Hold for T {}

pub(crate) mod sealed {
    // The sealed-trait pattern: the trait is public (a bound of `Hold`) but cannot be named
    // outside the crate, and neither can the node type it hands out (`pub` in a private module).

    use super::{HeldNode, HoldFuture, LossReason};

    /// The node a hold stands for, and what sets the kinds of hold apart.
    pub trait Sealed {
        fn held_node(&self) -> &HeldNode;

        /// The holder's fencing token: its node's czxid, unless a local handoff shares the node.
        fn holder_token(&self) -> i64 {
            self.held_node().fencing_token()
        }

        /// The hold was given up (a term closed or interrupted) although its node may live on.
        fn given_up(&self) -> bool {
            false
        }

        /// Resolves when the hold ends by itself: with the loss, or `None` when it was given up
        /// (a term closed or interrupted).
        fn ends(&self) -> HoldFuture<'_, Option<LossReason>> {
            let node = self.held_node();
            Box::pin(async move { Some(node.lost().await) })
        }

        /// Whether a revocation request is heard (not for leadership).
        fn revocable(&self) -> bool {
            true
        }
    }
}

/// A recipe's `run_while_held`: the work under the hold `acquired` brought (none: timed out),
/// the hold then dropped, which releases it in the background.
pub(crate) async fn run_acquired<H, T, F>(acquired: Result<Option<H>>, work: F) -> Result<RunEnd<T>>
where
    H: Hold,
    F: AsyncFnOnce(&H) -> T,
{
    let Some(hold) = acquired? else { return Ok(RunEnd::TimedOut) };
    Ok(hold.while_held(work(&hold)).await)
}
