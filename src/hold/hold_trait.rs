//! The `Hold` trait: what every hold tells of its node, written once.
//!
//! A lock's guard, a semaphore's lease and a term of leadership each stand for one node of ours,
//! and tell the same things of it.

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
/// the same things of it, through this trait alone: bring it into scope (`use zklock::hold::Hold;`)
/// to ask a guard, a lease or a term for its fencing token, whether it is held, when it is lost.
/// Code that runs under any kind of hold takes `&dyn Hold` or a `H: Hold`. A
/// [`Leadership`](crate::election::Leadership)'s own [`ended`](crate::election::Leadership::ended)
/// tells every end of the term, not only a loss.
///
/// A hold through ZooKeeper can be lost without the holder doing anything: the session expires,
/// the client stays disconnected too long (see [`LossPolicy`](crate::LossPolicy)), or someone
/// deletes the node. [`is_held`](Self::is_held) and [`lost`](Self::lost) tell;
/// [`fencing_token`](Self::fencing_token) lets the protected resource refuse a holder that has
/// not noticed yet, and [`multi_writer`](Self::multi_writer) fences writes to ZooKeeper itself.
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
///         // The storage refuses tokens lower than the highest it has seen.
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
    /// The full path of our node: the lock node, the lease node, the leader's node.
    fn node_path(&self) -> &str {
        self.held_node().path()
    }

    /// The czxid of our node: the zxid of the transaction that created it; with
    /// [`LocalHandoff`](crate::LocalHandoff), `czxid × 256 +` the number of holders the node had
    /// before this one.
    ///
    /// It strictly increases from one holder to the next (each holder's node was created after
    /// the previous holder's), and from one term of leadership to the next, whoever leads them,
    /// so a resource guarded by the hold can remember the highest token it has seen and refuse
    /// writes that carry a lower one. Reentrant guards of one hold share the token; with a
    /// semaphore's several leases, each holder has its own, and a resource can refuse tokens
    /// older than the oldest lease it still honours.
    fn fencing_token(&self) -> i64 {
        self.holder_token()
    }

    /// Whether the hold still stands, as far as this process knows. Never sends a request.
    ///
    /// `false` once the session has expired or closed, once the client has been disconnected
    /// longer than the [`LossPolicy`](crate::LossPolicy) allows, once the node is known to have
    /// been deleted by someone else, once it was released, or (a term of leadership) once it was
    /// given up. Node deletion is noticed by a watch that is set when [`lost`](Self::lost) is
    /// first awaited, after the hold has lasted a second (at most 1.1 s), or, with
    /// [local handoff](crate::MutexBuilder::local_handoff), once another task waits for the
    /// hold; before that, a deletion by a third party is not seen here (the fencing token still
    /// protects).
    fn is_held(&self) -> bool {
        !self.given_up() && self.held_node().is_held()
    }

    /// Resolves when the hold is lost, with the reason; stays pending while it is held, and
    /// after it was released or given up.
    ///
    /// The first call sets a watch on our node (one request, shared by every guard of the
    /// hold), so that a deletion by a third party is noticed within a round trip. Use it in a
    /// `select!` beside the critical section to stop work the moment the hold goes.
    ///
    /// # Cancel safety
    /// Cancel safe: dropping the future leaves the watch in place for the next call.
    fn lost(&self) -> HoldFuture<'_, LossReason> {
        Box::pin(self.held_node().lost())
    }

    /// Resolves when another participant asks this holder to let go, through
    /// [`revoke`](crate::revoke) or Curator's `Revoker.attemptRevoke` (which write `__REVOKE__`
    /// into our node). Revocation is cooperative: nothing is taken away; the holder decides to
    /// finish and release. Stays pending while nobody asks, and always for a term of
    /// leadership, which cannot be revoked.
    ///
    /// The first call sets the watch on our node, as [`lost`](Self::lost) does (one request,
    /// shared by both).
    ///
    /// # Cancel safety
    /// Cancel safe.
    fn revocation_requested(&self) -> HoldFuture<'_, ()> {
        match self.revocable() {
            true => Box::pin(self.held_node().revocation_requested()),
            false => Box::pin(std::future::pending()),
        }
    }

    /// A ZooKeeper transaction that commits only while this is held: its first operation
    /// already checks that our node exists. Add your creates, sets and deletes, then
    /// [`commit`](Self::commit) it; they all take effect, or none does.
    ///
    /// This fences writes inside ZooKeeper itself, where a fencing token needs the resource's
    /// cooperation: a holder that lost its hold without noticing (its node deleted, its session
    /// expired) cannot commit. The transaction runs where the server orders every write, so no
    /// other holder can have held in between.
    ///
    /// It is a [`FencedWrite`], not the client's `MultiWriter`: only [`commit`](Self::commit)
    /// sends it, which says a failed check as [`Error::LockLost`](crate::Error::LockLost) and
    /// leaves the check's result out, and a transaction without the check cannot be given to
    /// `commit`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use zklock::hold::Hold;
    /// use zklock::zookeeper_client::{Acls, CreateMode};
    ///
    /// let client = zklock::Client::connect("127.0.0.1:2181").await?;
    /// let guard = zklock::InterProcessMutex::new(&client, "/app/locks/leader")?.acquire().await?;
    /// let mut write = guard.multi_writer();
    /// write.add_set_data("/app/state/leader", b"host-1", None)?;
    /// write.add_create("/app/state/epochs/e-", b"", &CreateMode::PersistentSequential.with_acls(Acls::anyone_all()))?;
    /// match guard.commit(write).await {
    ///     Ok(_results) => println!("written while holding the lock"),
    ///     Err(zklock::Error::LockLost(reason)) => println!("not written: the lock was lost ({reason})"),
    ///     Err(err) => return Err(err.into()),
    /// }
    /// # Ok(())
    /// # }
    /// ```
    fn multi_writer(&self) -> FencedWrite<'_> {
        self.held_node().multi_writer()
    }

    /// Commits a transaction from [`multi_writer`](Self::multi_writer): all its operations take
    /// effect if and only if our node still exists. Returns the results of the caller's
    /// operations (the check's left out).
    ///
    /// # Errors
    /// - [`Error::LockLost`](crate::Error::LockLost): the hold was lost (the node was gone, the
    ///   session ended, or the hold was already known lost, then nothing is sent); nothing was
    ///   written, and the hold reports the loss from now on;
    /// - [`Error::WriteFailed`](crate::Error::WriteFailed): one of the caller's operations failed
    ///   (for example `NodeExists` or `BadVersion`); nothing was written;
    /// - [`Error::ZooKeeper`](crate::Error::ZooKeeper): the request failed, for example on
    ///   connection loss, when the outcome is unknown (it is not retried: the transaction may
    ///   have committed).
    ///
    /// # Cancel safety
    /// The transaction is sent on the first poll; dropping the future after that may or may not
    /// have committed it.
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
