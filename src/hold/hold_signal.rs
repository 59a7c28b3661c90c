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
    loss: watch::Sender<Option<LossReason>>,
    /// Someone asked the holder to give the lock up (Curator's revocation).
    revoke: watch::Sender<bool>,
    released: AtomicBool,
    node_watch_started: AtomicBool,
    /// Whether the node watch is set on the server, on a node that was there when it was set:
    /// `None` not yet known (or spent by a data change, until it is read again), `Some(false)`
    /// it could not be set.
    watched: watch::Sender<Option<bool>>,
    /// The client's connection as it was when the node was last known to exist with the watch
    /// armed: any change since (a disconnection, however short) is a moment in which a deletion
    /// could have been missed.
    armed_on: Mutex<Option<StateWatcher>>,
    /// Tells the operator (tracing, metrics) which lock was released, lost or asked for.
    events: Arc<HoldEvents>,
}

impl HoldSignal {
    pub(crate) fn new(events: Arc<HoldEvents>) -> Arc<Self> {
        Arc::new(HoldSignal {
            loss: watch::Sender::new(None),
            revoke: watch::Sender::new(false),
            released: AtomicBool::new(false),
            node_watch_started: AtomicBool::new(false),
            watched: watch::Sender::new(None),
            armed_on: Mutex::new(None),
            events,
        })
    }

    /// Records the first reason the hold was lost; later ones are ignored.
    pub(crate) fn mark_lost(&self, reason: LossReason) {
        if self.released.load(Ordering::SeqCst) {
            return;
        }
        let first = self.loss.send_if_modified(|current| current.is_none().then(|| *current = Some(reason)).is_some());
        if first {
            self.events.lost(reason);
        }
    }

    pub(crate) fn reason(&self) -> Option<LossReason> {
        *self.loss.borrow()
    }

    /// Resolves with the reason once the hold is lost.
    pub(crate) async fn lost(&self) -> LossReason {
        let mut receiver = self.loss.subscribe();
        loop {
            if let Some(reason) = *receiver.borrow_and_update() {
                return reason;
            }
            // The sender lives in `self`, so this only returns on a change.
            let _ = receiver.changed().await;
        }
    }

    /// Resolves once someone has asked for the lock back.
    pub(crate) async fn revocation_requested(&self) {
        let mut receiver = self.revoke.subscribe();
        // The sender lives in `self`, so wait_for only returns once it is true.
        let _ = receiver.wait_for(|requested| *requested).await;
    }

    /// Whether someone has asked for the lock back, as far as the node watch has read.
    pub(crate) fn is_revocation_requested(&self) -> bool {
        *self.revoke.borrow()
    }

    /// Someone asked the holder to give the lock up.
    pub(crate) fn mark_revocation_requested(&self) {
        if !self.revoke.send_replace(true) {
            self.events.revocation_requested();
        }
    }

    /// Whether the node watch is to be set now: true once per hold, and never after release.
    pub(crate) fn starts_node_watch(&self) -> bool {
        !self.node_watch_started.swap(true, Ordering::SeqCst) && !self.is_released()
    }

    /// The node watch could not be set.
    pub(crate) fn mark_unwatchable(&self) {
        self.watched.send_replace(Some(false));
    }

    /// The node existed, with the watch armed, when the server answered a request sent while
    /// the connection was as `since` saw it (a state watcher made before the request).
    pub(crate) fn mark_armed(&self, since: StateWatcher) {
        *self.armed_on.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(since);
        self.watched.send_replace(Some(true));
    }

    /// The watch fired on a data change: it is spent until the node is read again.
    pub(crate) fn mark_spent(&self) {
        self.watched.send_replace(None);
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
        let mut watched = self.watched.subscribe();
        let mut loss = self.loss.subscribe();
        loop {
            if loss.borrow_and_update().is_some() {
                return false;
            }
            if let Some(set) = *watched.borrow_and_update() {
                return set;
            }
            // Both senders live in `self`: these only return on a change.
            tokio::select! {
                _ = watched.changed() => {}
                _ = loss.changed() => {}
            }
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
