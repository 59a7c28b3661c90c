//! The loss state of one hold: a one-way latch from "held" to "lost, because ...", the
//! revocation flag, and whether our own release deleted the node.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Waker};

use tokio::sync::watch;
use zookeeper_client::StateWatcher;

use crate::error::LossReason;
use crate::observe::events::HoldEvents;

/// The loss state of one hold, shared by its guards and the tasks that watch it.
#[derive(Debug)]
pub(crate) struct HoldSignal {
    /// What was lost, asked for and known of the node watch, in one channel: every hold makes
    /// one, and a channel costs an allocation and its waiters' wake-up on drop.
    state: watch::Sender<SignalState>,
    released: AtomicBool,
    node_watch_started: AtomicBool,
    /// The client's connection as it was when the node was last known to exist with the watch
    /// armed: any change since (a disconnection, however short) is a moment in which a deletion
    /// could have been missed.
    armed_on: Mutex<Option<StateWatcher>>,
    /// Tells the operator (tracing, metrics) which lock was released, lost or asked for.
    events: Arc<HoldEvents>,
}

/// What a hold's watchers wait on.
#[derive(Clone, Copy, Debug, Default)]
struct SignalState {
    /// The first reason the hold was lost.
    loss: Option<LossReason>,
    /// Someone asked the holder to give the lock up (Curator's revocation).
    revoke: bool,
    /// Whether the node watch is set on the server, on a node that was there when it was set:
    /// `None` not yet known (or spent by a data change, until it is read again), `Some(false)`
    /// it could not be set.
    watched: Option<bool>,
}

impl HoldSignal {
    pub(crate) fn new(events: Arc<HoldEvents>) -> Arc<Self> {
        Arc::new(HoldSignal {
            state: watch::Sender::new(SignalState::default()),
            released: AtomicBool::new(false),
            node_watch_started: AtomicBool::new(false),
            armed_on: Mutex::new(None),
            events,
        })
    }

    /// Records the first reason the hold was lost; later ones are ignored.
    pub(crate) fn mark_lost(&self, reason: LossReason) {
        if self.released.load(Ordering::SeqCst) {
            return;
        }
        let first =
            self.state.send_if_modified(|state| state.loss.is_none().then(|| state.loss = Some(reason)).is_some());
        if first {
            self.events.lost(reason);
        }
    }

    pub(crate) fn reason(&self) -> Option<LossReason> {
        self.state.borrow().loss
    }

    /// Resolves with the reason once the hold is lost.
    pub(crate) async fn lost(&self) -> LossReason {
        let mut receiver = self.state.subscribe();
        loop {
            if let Some(reason) = receiver.borrow_and_update().loss {
                return reason;
            }
            // The sender lives in `self`, so this only returns on a change.
            let _ = receiver.changed().await;
        }
    }

    /// Resolves once someone has asked for the lock back.
    pub(crate) async fn revocation_requested(&self) {
        let mut receiver = self.state.subscribe();
        // The sender lives in `self`, so wait_for only returns once it is true.
        let _ = receiver.wait_for(|state| state.revoke).await;
    }

    /// Whether someone has asked for the lock back, as far as the node watch has read.
    pub(crate) fn is_revocation_requested(&self) -> bool {
        self.state.borrow().revoke
    }

    /// Someone asked the holder to give the lock up.
    pub(crate) fn mark_revocation_requested(&self) {
        if self.state.send_if_modified(|state| !std::mem::replace(&mut state.revoke, true)) {
            self.events.revocation_requested();
        }
    }

    /// Whether the node watch is to be set now: true once per hold, and never after release.
    pub(crate) fn starts_node_watch(&self) -> bool {
        !self.node_watch_started.swap(true, Ordering::SeqCst) && !self.is_released()
    }

    /// The node watch could not be set.
    pub(crate) fn mark_unwatchable(&self) {
        self.state.send_modify(|state| state.watched = Some(false));
    }

    /// The node existed, with the watch armed, when the server answered a request sent while
    /// the connection was as `since` saw it (a state watcher made before the request).
    pub(crate) fn mark_armed(&self, since: StateWatcher) {
        *self.armed_on.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(since);
        self.state.send_modify(|state| state.watched = Some(true));
    }

    /// The watch fired on a data change: it is spent until the node is read again.
    pub(crate) fn mark_spent(&self) {
        self.state.send_modify(|state| state.watched = None);
    }

    /// Whether the connection is unchanged since the node was last known to exist with the watch
    /// armed (see [`Self::mark_armed`]): then a deletion since is told, or its notification is
    /// on its way. No request.
    pub(crate) fn armed_unbroken(&self) -> bool {
        let armed_on = self.armed_on.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let Some(mut since) = armed_on.clone() else {
            return false;
        };
        drop(armed_on);
        // A watch channel's receiver sees that a value was sent since, not only the latest:
        // a disconnection and its reconnection both count as a change.
        let changed = std::pin::pin!(since.changed());
        changed.poll(&mut Context::from_waker(Waker::noop())).is_pending()
    }

    /// Resolves once the node watch is known set (`true`: from then on a deletion is told within
    /// a notification) or not (`false`: it could not be set, or the hold is lost).
    pub(crate) async fn watched(&self) -> bool {
        let mut receiver = self.state.subscribe();
        loop {
            let state = *receiver.borrow_and_update();
            if state.loss.is_some() {
                return false;
            }
            if let Some(set) = state.watched {
                return set;
            }
            // The sender lives in `self`: this only returns on a change.
            let _ = receiver.changed().await;
        }
    }

    /// Our own release is deleting the node: its deletion is not a loss.
    pub(crate) fn mark_released(&self) {
        self.released.store(true, Ordering::SeqCst);
        self.events.released();
    }

    pub(crate) fn is_released(&self) -> bool {
        self.released.load(Ordering::SeqCst)
    }
}
