//! `HoldSignal`: a hold's loss latch, revocation flag and released mark.
//!
//! The latch goes one way, from "held" to "lost, because ..."; the released mark says that our own
//! release deleted the node.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Waker};
use std::time::Instant;

use tokio::sync::Notify;
use zookeeper_client::StateWatcher;

use crate::error::LossReason;
use crate::observe::events::HoldEvents;

/// The loss state of one hold, shared by its guards and the tasks that watch it.
#[derive(Debug)]
pub(crate) struct HoldSignal {
    /// What was lost, asked for and known of the node watch, in one place: every hold makes
    /// one. A lock and a `Notify` beside it, not a channel: a channel costs every hold an
    /// allocation and, when it drops, a wake-up of its (mostly absent) waiters.
    state: Mutex<SignalState>,
    /// Wakes the waiters of a change of `state`.
    changed: Notify,
    released: AtomicBool,
    node_watch_started: AtomicBool,
    /// The client's connection as it was when the node was last known to exist with the watch
    /// armed: any change since (a disconnection, however short) is a moment in which a deletion
    /// could have been missed.
    armed_on: Mutex<Option<StateWatcher>>,
    /// Tells the operator (tracing, metrics) which lock was released, lost or asked for.
    events: HoldEvents,
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
    pub(crate) fn new(events: HoldEvents) -> Arc<Self> {
        Arc::new(HoldSignal {
            state: Mutex::default(),
            changed: Notify::new(),
            released: AtomicBool::new(false),
            node_watch_started: AtomicBool::new(false),
            armed_on: Mutex::new(None),
            events,
        })
    }

    /// When the hold began in this process.
    pub(crate) fn began(&self) -> Instant {
        self.events.acquired_at()
    }

    /// Records the first reason the hold was lost; later ones are ignored.
    pub(crate) fn mark_lost(&self, reason: LossReason) {
        if self.released.load(Ordering::SeqCst) {
            return;
        }
        if self.update(|state| state.loss.is_none().then(|| state.loss = Some(reason)).is_some()) {
            self.events.lost(reason);
        }
    }

    pub(crate) fn reason(&self) -> Option<LossReason> {
        self.state().loss
    }

    /// Resolves with the reason once the hold is lost.
    pub(crate) async fn lost(&self) -> LossReason {
        self.once(|state| state.loss).await
    }

    /// Resolves once someone has asked for the lock back.
    pub(crate) async fn revocation_requested(&self) {
        self.once(|state| state.revoke.then_some(())).await
    }

    /// Whether someone has asked for the lock back, as far as the node watch has read.
    pub(crate) fn is_revocation_requested(&self) -> bool {
        self.state().revoke
    }

    /// Someone asked the holder to give the lock up.
    pub(crate) fn mark_revocation_requested(&self) {
        if self.update(|state| !std::mem::replace(&mut state.revoke, true)) {
            self.events.revocation_requested();
        }
    }

    /// Whether the node watch is to be set now: true once per hold, and never after release.
    pub(crate) fn starts_node_watch(&self) -> bool {
        !self.node_watch_started.swap(true, Ordering::SeqCst) && !self.is_released()
    }

    /// The node watch could not be set.
    pub(crate) fn mark_unwatchable(&self) {
        self.update(|state| state.watched.replace(false) != Some(false));
    }

    /// The node existed, with the watch armed, when the server answered a request sent while
    /// the connection was as `since` saw it (a state watcher made before the request).
    pub(crate) fn mark_armed(&self, since: StateWatcher) {
        *self.armed_on.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(since);
        self.update(|state| state.watched.replace(true) != Some(true));
    }

    /// The watch fired on a data change: it is spent until the node is read again.
    pub(crate) fn mark_spent(&self) {
        self.update(|state| state.watched.take().is_some());
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
        self.once(|state| if state.loss.is_some() { Some(false) } else { state.watched }).await
    }

    /// Our own release is deleting the node: its deletion is not a loss.
    pub(crate) fn mark_released(&self) {
        self.released.store(true, Ordering::SeqCst);
        self.events.released();
    }

    pub(crate) fn is_released(&self) -> bool {
        self.released.load(Ordering::SeqCst)
    }

    fn state(&self) -> SignalState {
        *self.lock()
    }

    fn lock(&self) -> MutexGuard<'_, SignalState> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Changes the state as `change` says, and wakes the waiters when it says it changed
    /// anything (returned).
    fn update(&self, change: impl FnOnce(&mut SignalState) -> bool) -> bool {
        let changed = change(&mut self.lock());
        if changed {
            self.changed.notify_waiters();
        }
        changed
    }

    /// Resolves with what `ready` finds in the state, at once or at the first change it finds
    /// something in.
    async fn once<T>(&self, ready: impl Fn(SignalState) -> Option<T>) -> T {
        loop {
            // Registered before the state is read: a change after the read wakes it.
            let mut changed = std::pin::pin!(self.changed.notified());
            changed.as_mut().enable();
            if let Some(found) = ready(self.state()) {
                return found;
            }
            changed.await;
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::observe::label::{LockLabel, Recipe};

    /// The signal of a hold that has just begun.
    pub(crate) fn signal() -> Arc<HoldSignal> {
        let label = LockLabel::new(Recipe::Mutex, "/lock", false);
        HoldSignal::new(label.acquired(&Arc::from("/lock/_c_0-lock-0000000001"), 1, Instant::now()))
    }
}
