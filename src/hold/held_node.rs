//! `HeldNode`: the node behind every guard, lease and term, and its delete.
//!
//! Its path, its fencing token, its loss signal, and how it is deleted.
//! [`LockGuard`](crate::LockGuard) and [`Lease`](crate::Lease) differ only in who may release it
//! (an owner's last guard, or whoever holds the lease); what they tell of the hold is said once,
//! here.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use zookeeper_client::{Client, MultiWriteResult};

use crate::client::retry::{Backoff, RetryPolicy};
use crate::client::session_end::{check_session_ended, SessionEnd};
use crate::error::{Error, LossReason, Result};
use crate::hold::fenced_write::FencedWrite;
use crate::hold::hold_signal::HoldSignal;
use crate::hold::max_hold::MaxHold;
use crate::hold::node_watch::watch_node;
use crate::hold::session_watch::SessionWatch;
use crate::observe::label::LockLabel;
use crate::queue::delete::{delete_in_background, delete_released};
use crate::queue::node::LockNode;

/// A node we hold, and what is known of whether we still do. `pub` only so that the sealed
/// [`Hold`](crate::hold::Hold) trait may hand it out: its module is private, so no user can name
/// it.
#[derive(Debug)]
pub struct HeldNode {
    client: Arc<Client>,
    /// How its requests are paced; they never give up (`LockNode::retry`). The pacing alone,
    /// not the whole policy: a lease carries its node inline, and must stay small.
    pacing: Backoff,
    path: Arc<str>,
    czxid: i64,
    signal: Arc<HoldSignal>,
    /// A read hold of the same owner stands level with this write node (a downgrade): the node
    /// is another writer's only once it is deleted and a new one queued.
    downgraded: AtomicBool,
    /// Gives the hold up once it has lasted the lock's maximum hold time, if it has one.
    _max_hold: Option<MaxHold>,
}

/// How a hold began, for the operator's events and metrics (`observe/`): told once the node's
/// path is known in the form every part of the hold shares.
pub(crate) struct Acquired<'a> {
    pub(crate) label: &'a LockLabel,
    pub(crate) fencing_token: i64,
    /// When the acquire began.
    pub(crate) started: std::time::Instant,
}

impl HeldNode {
    /// Starts watching for the loss of `node`, now held, through `session_watch` (the session's
    /// state at once, the node itself once the hold has lasted a while or `lost` is asked, from
    /// the watch its wait left on it if it did); `events` tells the operator what becomes of it.
    /// With `max_hold`, it is given up once it has lasted that long (`max_hold.rs`).
    pub(crate) fn new(
        client: &Arc<Client>,
        node: LockNode,
        session_watch: &Arc<SessionWatch>,
        acquired: Acquired<'_>,
        max_hold: Option<Duration>,
    ) -> Self {
        let retry = node.retry();
        let path: Arc<str> = node.path.into();
        let events = acquired.label.acquired(&path, acquired.fencing_token, acquired.started);
        let signal = HoldSignal::new(events);
        let max_hold = max_hold.map(|bound| MaxHold::start(bound, client, retry, &path, &signal));
        let held = HeldNode {
            client: Arc::clone(client),
            pacing: retry.backoff(),
            path,
            czxid: node.czxid,
            signal,
            downgraded: AtomicBool::new(false),
            _max_hold: max_hold,
        };
        session_watch.register(client, &held.signal, &held.path, retry);
        held
    }

    /// How its requests are retried: its pacing, never giving up.
    fn retry(&self) -> RetryPolicy {
        RetryPolicy::never_giving_up(self.pacing)
    }

    pub(crate) fn path(&self) -> &str {
        &self.path
    }

    /// The node's czxid: the token of a hold that has the node to itself.
    pub(crate) fn fencing_token(&self) -> i64 {
        self.czxid
    }

    /// The zxid that created the node (a local handoff's tokens count on from it).
    pub(crate) fn czxid(&self) -> i64 {
        self.czxid
    }

    /// Whether the hold still stands as far as this process knows (neither lost nor released by
    /// us); no request.
    pub(crate) fn is_held(&self) -> bool {
        self.signal.reason().is_none() && !self.signal.is_released() && check_session_ended(&self.client).is_none()
    }

    /// Why the hold was lost, if it was.
    pub(crate) fn loss(&self) -> Option<LossReason> {
        self.signal.reason()
    }

    /// Resolves with the reason once the hold is lost; sets the node watch on first use.
    pub(crate) async fn lost(&self) -> LossReason {
        self.watch_for_deletion();
        self.loss_known().await
    }

    /// Sets the node watch now (once per hold; nothing if it is set), so that a deletion is
    /// known within a notification: for a hold that is passed on with no request, which would
    /// otherwise go on past a deletion until the watch the hold sets after a second.
    pub(crate) fn watch_for_deletion(&self) {
        watch_node(&self.client, self.retry(), &self.path, &self.signal);
    }

    /// Resolves with the reason once the hold is known lost, without setting the node watch
    /// itself: the session's watch, and the node watch once the hold has lasted a second, tell.
    pub(crate) async fn loss_known(&self) -> LossReason {
        self.signal.lost().await
    }

    /// Resolves once the node watch is set (`true`), starting it if it was not: from then on a
    /// deletion of the node is told within a notification. `false`: it could not be set, or the
    /// hold is lost.
    pub(crate) async fn watched(&self) -> bool {
        self.watch_for_deletion();
        self.signal.watched().await
    }

    /// Resolves once the node is known to exist since the last moment a deletion of it could
    /// have gone unheard (`true`), or known not to be (`false`: lost, unwatchable, or the check
    /// failed). The node watch's answer proves it while the connection is unchanged since;
    /// after any change (a disconnection, however short, in which the deletion's notification
    /// could not come), one exists-read does, which the server answers after every event the
    /// reconnection's re-set watches fired.
    pub(crate) async fn known_to_exist(&self) -> bool {
        if !self.watched().await {
            return false;
        }
        if self.signal.armed_unbroken() {
            return true;
        }
        let since = self.client.state_watcher();
        match self.client.check_stat(&self.path).await {
            Ok(Some(_)) if self.is_held() => {
                self.signal.mark_armed(since);
                true
            }
            Ok(Some(_)) => false,
            Ok(None) => {
                self.mark_lost(LossReason::NodeDeleted);
                false
            }
            Err(err) => {
                if let Some(end) = SessionEnd::of_error(&err) {
                    self.mark_lost(end.loss());
                }
                false
            }
        }
    }

    /// Whether someone has asked for the lock back, as far as the node watch has read.
    pub(crate) fn is_revocation_requested(&self) -> bool {
        self.signal.is_revocation_requested()
    }

    /// The node is known gone (or the hold otherwise lost) by a request of ours.
    pub(crate) fn mark_lost(&self, reason: LossReason) {
        self.signal.mark_lost(reason);
    }

    /// A read hold of this write node's owner is being taken level with it (a downgrade).
    pub(crate) fn mark_downgraded(&self) {
        self.downgraded.store(true, Ordering::SeqCst);
    }

    pub(crate) fn is_downgraded(&self) -> bool {
        self.downgraded.load(Ordering::SeqCst)
    }

    /// Resolves once someone asks for the lock back; sets the node watch on first use.
    pub(crate) async fn revocation_requested(&self) {
        self.watch_for_deletion();
        self.signal.revocation_requested().await
    }

    /// Our own release is about to delete the node: its deletion is no loss.
    pub(crate) fn mark_released(&self) {
        self.signal.mark_released();
    }

    /// A transaction whose first operation checks that our node still exists.
    pub(crate) fn multi_writer(&self) -> FencedWrite<'_> {
        FencedWrite::new(&self.client, &self.path, &self.signal)
    }

    /// Commits a transaction from a `multi_writer` (against the hold that made it).
    pub(crate) async fn commit(&self, writer: FencedWrite<'_>) -> Result<Vec<MultiWriteResult>> {
        writer.commit().await
    }

    /// Deletes the node of a released hold and reports how it went: `LockLost` for a hold that
    /// was lost before (the node, if still there, goes in the background, never waiting on a
    /// session that may be gone), and for one the delete finds lost (someone else had deleted
    /// the node, or the session ended, taking it).
    pub(crate) async fn delete(&self, lost_before: Option<LossReason>) -> Result<()> {
        if let Some(reason) = lost_before {
            self.delete_in_background();
            return Err(Error::LockLost(reason));
        }
        match delete_released(&self.client, self.retry(), &self.path).await {
            Err(Error::SessionExpired) => Err(Error::LockLost(LossReason::SessionExpired)),
            Err(Error::SessionClosed) => Err(Error::LockLost(LossReason::SessionClosed)),
            deleted => deleted,
        }
    }

    /// Deletes the node of a released hold in the background (a guard's `Drop`).
    pub(crate) fn delete_in_background(&self) {
        delete_in_background(&self.client, self.retry(), Arc::clone(&self.path));
    }

    /// Releases the hold and deletes its node in the background: for a hold that nobody will
    /// release otherwise (a lease dropped, a node the local line has nobody to pass to).
    pub(crate) fn release_in_background(&self) {
        self.mark_released();
        self.delete_in_background();
    }
}
