//! The guard every recipe hands out.

use std::fmt;
use std::sync::Arc;

use zookeeper_client::MultiWriteResult;

use crate::error::{Error, LossReason, Result};
use crate::hold::fenced_write::FencedWrite;
use crate::hold::held_node::HeldNode;
use crate::lock::owner::Owner;
use crate::lock::state::{LockState, OwnerHold};

/// Proof that the lock is held; releases it when dropped or [released](LockGuard::release).
///
/// Each acquire, reentrant ones included, returns its own guard. The lock node is deleted when
/// the owner's last guard goes, in any order. A guard is `Send + 'static` and may be moved to
/// another task; it still counts for the owner (task or thread) that acquired it.
///
/// Dropping the guard releases in the background, on any thread: the delete is sent at once and
/// seen through on the current tokio runtime, or, on a thread with none, on a runtime thread of
/// zklock's own (`zklock-background`). Use [`release`](LockGuard::release) to learn the outcome.
/// The request still travels on the client's connection, which runs on the runtime the client
/// was made on: a current-thread runtime sends it the next time it is driven. Either way the
/// node is ephemeral: it never outlives the session.
///
/// A lock held through ZooKeeper can be lost without the holder doing anything: the session
/// expires, the client stays disconnected too long (see [`LossPolicy`](crate::LossPolicy)), or
/// someone deletes the node. [`is_held`](LockGuard::is_held) and [`lost`](LockGuard::lost) tell;
/// [`fencing_token`](LockGuard::fencing_token) lets the protected resource refuse a holder that
/// has not noticed yet, and [`multi_writer`](LockGuard::multi_writer) fences writes to
/// ZooKeeper itself.
///
/// # Examples
///
/// Stop the critical section the moment the lock goes, and fence what it writes:
///
/// ```no_run
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # async fn copy_batch(_token: i64) {}
/// let client = zklock::Client::connect("127.0.0.1:2181").await?;
/// let guard = zklock::InterProcessMutex::new(&client, "/app/locks/import")?.acquire().await?;
/// tokio::select! {
///     // The storage refuses tokens lower than the highest it has seen.
///     () = copy_batch(guard.fencing_token()) => guard.release().await?,
///     reason = guard.lost() => eprintln!("lock lost ({reason}); stopped the import"),
/// }
/// # Ok(())
/// # }
/// ```
#[must_use = "the lock is released as soon as the guard is dropped"]
pub struct LockGuard {
    state: Arc<LockState>,
    owner: Owner,
    hold: OwnerHold,
    released: bool,
}

impl LockGuard {
    pub(crate) fn new(state: Arc<LockState>, owner: Owner, hold: OwnerHold) -> Self {
        LockGuard { state, owner, hold, released: false }
    }

    /// Releases this hold; when it was the owner's last, deletes the lock node and waits for
    /// ZooKeeper to confirm.
    ///
    /// # Errors
    /// - [`Error::LockLost`]: the lock was lost, and the reason says how: before this release
    ///   (the node, if it still exists, is deleted in the background), or as the release found
    ///   it: `NodeDeleted` when the node was already gone (deleted by someone else, so the lock
    ///   may have been held by another participant meanwhile), `SessionExpired` or
    ///   `SessionClosed` when the session ended, and with it the node. The same reason
    ///   [`lost`](Self::lost) gives;
    /// - [`Error::ZooKeeper`]: the delete was refused.
    ///
    /// The hold is released in this process in every case. The delete is retried through
    /// connection loss while the session lives, and never waits past the session's end.
    ///
    /// # Cancel safety
    /// Cancel safe: the delete is sent on the first poll, and if this future is dropped before
    /// ZooKeeper answers, a spawned task sees it through.
    pub async fn release(mut self) -> Result<()> {
        self.released = true;
        let lost = self.hold.node.loss();
        let Some(last) = self.state.release_one(self.owner, self.hold.id).and_then(|last| self.state.let_go(last))
        else {
            return lost.map_or(Ok(()), |reason| Err(Error::LockLost(reason)));
        };
        last.node.delete(lost).await?;
        // Our delete is confirmed: the next acquire may send something cheaper than a list.
        self.state.record_opening(last.next_opening);
        Ok(())
    }

    /// Whether the lock is still held, as far as this process knows.
    ///
    /// `false` once the session has expired or closed, once the client has been disconnected
    /// longer than the [`LossPolicy`](crate::LossPolicy) allows, or once the node is known to
    /// have been deleted by someone else. Node deletion is noticed by a watch that is set when
    /// [`lost`](Self::lost) is first awaited, after the lock has been held for a second (at most
    /// 1.1 s), or, with [local handoff](crate::MutexBuilder::local_handoff), once another task
    /// waits for the hold; before that, a deletion by a third party is not seen here (the
    /// fencing token still protects).
    /// Never sends a request.
    pub fn is_held(&self) -> bool {
        self.hold.node.is_held()
    }

    /// Resolves when the lock is lost, with the reason; stays pending while it is held (and
    /// after it is released by its owner).
    ///
    /// The first call sets a watch on the lock node (one request, shared by every guard of this
    /// hold), so that a deletion by a third party is noticed within a round trip. Use it in a
    /// `select!` beside the critical section to stop work the moment the lock goes.
    ///
    /// # Cancel safety
    /// Cancel safe: dropping the future leaves the watch in place for the next call.
    pub async fn lost(&self) -> LossReason {
        self.hold.node.lost().await
    }

    /// Resolves when the lock is lost, with the error a wait that needs the hold (a semaphore's
    /// taker behind its gate) ends with: the session's end as itself, as for every other
    /// acquire, else the loss (a deleted node starts the taker over).
    pub(crate) async fn lost_as_error(&self) -> Error {
        match self.lost().await {
            LossReason::SessionExpired => Error::SessionExpired,
            LossReason::SessionClosed => Error::SessionClosed,
            reason => Error::LockLost(reason),
        }
    }

    /// Resolves when another participant asks this holder to give the lock up, through
    /// [`revoke`](crate::revoke) or Curator's `Revoker.attemptRevoke` (which write `__REVOKE__`
    /// into the lock node). Revocation is cooperative: nothing is taken away; the holder decides
    /// to finish and release. Stays pending while nobody asks.
    ///
    /// The first call sets the watch on the lock node, as [`lost`](Self::lost) does (one request,
    /// shared by both).
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn revocation_requested(&self) {
        self.hold.node.revocation_requested().await
    }

    /// The node this guard stands for (a leadership is told of its loss through it).
    pub(crate) fn held_node(&self) -> &Arc<HeldNode> {
        &self.hold.node
    }

    /// The full path of the lock node.
    pub fn node_path(&self) -> &str {
        self.hold.node.path()
    }

    /// A ZooKeeper transaction that commits only while this lock is held: its first operation
    /// already checks that our lock node exists. Add your creates, sets and deletes, then
    /// [`commit`](Self::commit) it; they all take effect, or none does.
    ///
    /// This fences writes inside ZooKeeper itself, where a fencing token needs the resource's
    /// cooperation: a holder that lost the lock without noticing (its node deleted, its session
    /// expired) cannot commit. The transaction runs where the server orders every write, so no
    /// other holder can have held in between.
    ///
    /// It is a [`FencedWrite`], not the client's `MultiWriter`: only [`commit`](Self::commit)
    /// sends it, which says a failed check as [`Error::LockLost`] and leaves the check's result
    /// out, and a transaction without the check cannot be given to `commit`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
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
    pub fn multi_writer(&self) -> FencedWrite<'_> {
        self.hold.node.multi_writer()
    }

    /// Commits a transaction from [`multi_writer`](Self::multi_writer): all its operations
    /// take effect if and only if the lock node still exists. Returns the results of the
    /// caller's operations (the check's left out).
    ///
    /// # Errors
    /// - [`Error::LockLost`]: the lock was lost (the node was gone, the session ended, or the
    ///   hold was already known lost, then nothing is sent); nothing was written, and the guard
    ///   reports the loss from now on;
    /// - [`Error::WriteFailed`]: one of the caller's operations failed (for example `NodeExists`
    ///   or `BadVersion`); nothing was written;
    /// - [`Error::ZooKeeper`]: the request failed, for example on connection loss, when the
    ///   outcome is unknown (it is not retried: the transaction may have committed).
    ///
    /// # Cancel safety
    /// The transaction is sent on the first poll; dropping the future after that may or may not
    /// have committed it.
    pub async fn commit(&self, writer: FencedWrite<'_>) -> Result<Vec<MultiWriteResult>> {
        self.hold.node.commit(writer).await
    }

    /// The czxid of the lock node: the zxid of the transaction that created it; with
    /// [`LocalHandoff`](crate::LocalHandoff), `czxid × 256 +` the number of holders the node
    /// had before this one.
    ///
    /// It strictly increases from one holder of the lock to the next (each holder's node was
    /// created after the previous holder's), so a resource guarded by the lock can remember the
    /// highest token it has seen and refuse writes that carry a lower one. Reentrant guards of
    /// one hold share the token.
    pub fn fencing_token(&self) -> i64 {
        self.hold.fencing_token
    }
}

impl fmt::Debug for LockGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LockGuard")
            .field("node_path", &self.node_path())
            .field("fencing_token", &self.fencing_token())
            .field("owner", &self.owner)
            .finish()
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        if self.released {
            return;
        }
        if let Some(last) = self.state.release_one(self.owner, self.hold.id).and_then(|last| self.state.let_go(last)) {
            last.node.delete_in_background();
        }
    }
}

impl crate::hold::hold_trait::sealed::Sealed for LockGuard {
    fn held_node(&self) -> &HeldNode {
        &self.hold.node
    }

    fn holder_token(&self) -> i64 {
        self.hold.fencing_token
    }
}
