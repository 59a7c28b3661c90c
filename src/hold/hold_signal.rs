//! The loss state of one hold: a one-way latch from "held" to "lost, because ...", the
//! revocation flag, and whether our own release deleted the node.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use tokio::sync::watch;

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
    /// `None` not yet known, `Some(false)` it could not be set.
    watched: watch::Sender<Option<bool>>,
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

    /// The node watch is set on the server, on the node as it was then (`true`), or could not be
    /// set (`false`).
    pub(crate) fn mark_watched(&self, set: bool) {
        self.watched.send_replace(Some(set));
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
