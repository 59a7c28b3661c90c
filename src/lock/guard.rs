//! The guard every recipe hands out.

use std::fmt;
use std::sync::Arc;

use crate::error::{Error, LossReason, Result};
use crate::hold::held_node::HeldNode;
use crate::hold::Hold;
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
/// someone deletes the node. What every hold tells of itself, a guard tells through the
/// [`Hold`] trait: [`is_held`](Hold::is_held) and [`lost`](Hold::lost) tell;
/// [`fencing_token`](Hold::fencing_token) lets the protected resource refuse a holder that has
/// not noticed yet, and [`multi_writer`](Hold::multi_writer) fences writes to ZooKeeper itself.
///
/// # Examples
///
/// Stop the critical section the moment the lock goes, and fence what it writes:
///
/// ```no_run
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # async fn copy_batch(_token: i64) {}
/// use zklock::hold::Hold;
///
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
    ///   [`lost`](Hold::lost) gives;
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

    /// Resolves when the lock is lost, with the error a wait that needs the hold (a semaphore's
    /// taker behind its gate) ends with: the session's end as itself, as for every other
    /// acquire, else the loss (a deleted node starts the taker over).
    pub(crate) async fn lost_as_error(&self) -> Error {
        match self.hold.node.lost().await {
            LossReason::SessionExpired => Error::SessionExpired,
            LossReason::SessionClosed => Error::SessionClosed,
            reason => Error::LockLost(reason),
        }
    }

    /// The node this guard stands for (a leadership is told of its loss through it).
    pub(crate) fn held_node(&self) -> &Arc<HeldNode> {
        &self.hold.node
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
