//! The session's side of the loss signal: one task per session and loss policy.
//!
//! The task follows the client's state and marks every live hold lost when the session ends or
//! stays disconnected past the policy's grace. Costs no request.
//!
//! The watch lives as long as its session, not as long as a lock object: the task keeps it, and
//! ends with the session (closed, when the last of its clients is dropped; or expired). A lock
//! object made for one acquire and dropped after it (a mutex per entity, say) finds the
//! session's watch running: it spawns nothing, and its drop stops nothing. The watch holds no
//! client, so that it never keeps a session open.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock, Mutex, Weak};
use std::time::Duration;

use dashmap::DashMap;
use zookeeper_client::{Client, StateWatcher};

use super::delayed_node_watch::{set_delayed_node_watches, DelayedNodeWatches};
use super::hold_signal::HoldSignal;
use crate::client::retry::RetryPolicy;
use crate::client::session_end::{wait_session_gone, SessionEnd, SessionGone};
use crate::error::LossReason;
use crate::options::LossPolicy;

/// One watcher per session and policy, shared by every participant on that session: 10,000
/// mutexes on one client cost one task, not 10,000.
static SESSION_WATCHES: LazyLock<DashMap<WatchKey, Weak<SessionWatch>>> = LazyLock::new(DashMap::new);

type WatchKey = (i64, LossPolicy);

/// Watches one session's state for the holds taken through it under one policy, and marks them
/// lost when the session ends or stays disconnected past the policy's grace. Costs no request.
#[derive(Debug)]
pub(crate) struct SessionWatch {
    key: WatchKey,
    policy: LossPolicy,
    holds: Mutex<Holds>,
    started: AtomicBool,
    delayed: Arc<DelayedNodeWatches>,
}

/// Weak references to live holds; dead ones are pruned whenever the list doubles, and the
/// newest at once.
#[derive(Debug, Default)]
struct Holds {
    signals: Vec<Weak<HoldSignal>>,
    prune_at: usize,
}

impl Holds {
    fn push(&mut self, signal: &Arc<HoldSignal>) {
        // The newest first: a hold released before the next one begins (a loop of short holds)
        // is dropped here, the last reference to its signal's allocation freed while the
        // allocator's cache for its size is warm, not in a batch of dozens at the next pruning
        // (about 400 client instructions a cycle of acquire and release).
        while self.signals.last().is_some_and(|hold| hold.strong_count() == 0) {
            self.signals.pop();
        }
        if self.signals.len() >= self.prune_at {
            self.signals.retain(|hold| hold.strong_count() > 0);
            self.prune_at = (2 * self.signals.len()).max(64);
        }
        self.signals.push(Arc::downgrade(signal));
    }
}

/// The watch of a lock object's current session (so that the object's first hold starts
/// nothing, even where the object was made outside a runtime), replaced once a
/// [`Session`](crate::Session) has moved the object to a new session.
#[derive(Debug)]
pub(crate) struct LatestSessionWatch {
    policy: LossPolicy,
    latest: Mutex<Arc<SessionWatch>>,
}

impl LatestSessionWatch {
    pub(crate) fn new(client: &Client, policy: LossPolicy) -> Self {
        LatestSessionWatch { policy, latest: Mutex::new(SessionWatch::for_client(client, policy)) }
    }

    /// The watch of `client`'s session, which becomes the latest.
    pub(crate) fn of(&self, client: &Client) -> Arc<SessionWatch> {
        let mut latest = self.latest.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if latest.key.0 != client.session_id().0 {
            *latest = SessionWatch::for_client(client, self.policy);
        }
        Arc::clone(&latest)
    }
}

impl SessionWatch {
    /// The watch of `client`'s session under `policy`: the running one, else a new one, its
    /// tasks started now if there is a runtime (so that a session's first hold starts nothing).
    pub(crate) fn for_client(client: &Client, policy: LossPolicy) -> Arc<Self> {
        let key = (client.session_id().0, policy);
        let mut entry = SESSION_WATCHES.entry(key).or_default();
        if let Some(watch) = entry.upgrade() {
            return watch;
        }
        let watch = Arc::new(SessionWatch {
            key,
            policy,
            holds: Mutex::default(),
            started: AtomicBool::new(false),
            delayed: Arc::default(),
        });
        *entry = Arc::downgrade(&watch);
        drop(entry);
        watch.start_tasks(client);
        watch
    }

    /// Starts watching for `signal`'s hold on `node_path`, taken through `client`: the
    /// session's state at once, the node once the hold has lasted [`NODE_WATCH_DELAY`] (unless
    /// released before). Sends nothing, spawns nothing (the tasks started with the session's
    /// first lock object), wakes no task (unless none has joined for a minute).
    ///
    /// [`NODE_WATCH_DELAY`]: super::delayed_node_watch::NODE_WATCH_DELAY
    pub(crate) fn register(
        self: &Arc<Self>,
        client: &Arc<Client>,
        signal: &Arc<HoldSignal>,
        node_path: &Arc<str>,
        retry: RetryPolicy,
    ) {
        self.lock().push(signal);
        if let Some(end) = SessionEnd::of_state(client.state()) {
            signal.mark_lost(end.loss());
        }
        self.delayed.push(Arc::downgrade(client), signal, node_path, retry);
        if !self.started.load(Ordering::Acquire) {
            // The lock object was made outside a runtime.
            self.start_tasks(client);
        }
    }

    /// Starts the session's two tasks (its state, its delayed node watches) on the current
    /// runtime, once; nothing outside a runtime (the first hold inside one starts them). The
    /// state's task keeps the watch until the session ends.
    fn start_tasks(self: &Arc<Self>, client: &Client) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        if self.started.swap(true, Ordering::AcqRel) {
            return;
        }
        let grace = self.policy.grace(client.session_timeout());
        runtime.spawn(watch_session(Arc::clone(self), client.state_watcher(), grace));
        runtime.spawn(set_delayed_node_watches(Arc::clone(&self.delayed)));
    }

    fn mark_all(&self, reason: LossReason) {
        for hold in self.lock().signals.iter().filter_map(Weak::upgrade) {
            hold.mark_lost(reason);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Holds> {
        self.holds.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Drop for SessionWatch {
    fn drop(&mut self) {
        // No task to stop: the state's task keeps the watch while it runs, and stops the
        // delayed watches' task as it ends (or the runtime drops both).
        SESSION_WATCHES.remove_if(&self.key, |_, watch| watch.strong_count() == 0);
    }
}

/// Marks every hold on the session lost when it ends, or when it has been disconnected for
/// `grace` (and again at each later such disconnection: holds taken in between are marked too).
/// Keeps `watch` until the session ends (or the runtime does), then stops the delayed watches'
/// task and lets the watch go: lock objects still on it keep it, and the last of them drops it.
async fn watch_session(watch: Arc<SessionWatch>, mut states: StateWatcher, grace: Duration) {
    loop {
        match wait_session_gone(&mut states, Some(grace)).await {
            SessionGone::Ended(end) => {
                watch.mark_all(end.loss());
                break;
            }
            SessionGone::Silent(after) => watch.mark_all(LossReason::Disconnected { after }),
        }
        // Past the grace, until the state changes: connected again, or ended.
        states.changed().await;
    }
    // notify_one keeps a permit, so the task stops even if it is not waiting yet.
    watch.delayed.stop.notify_one();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hold::hold_signal::tests::signal;

    #[test]
    fn a_hold_released_before_the_next_begins_is_forgotten_at_once() {
        let mut holds = Holds::default();
        let older = signal();
        holds.push(&older);
        let released = signal();
        holds.push(&released);
        drop(released);
        let newest = signal();
        holds.push(&newest);
        // (The pruning of the whole list waits until it has 64.)
        assert_eq!(holds.signals.len(), 2);
        assert!(holds.signals.iter().all(|hold| hold.strong_count() == 1));
        // One released behind a live one stays until the list is pruned.
        drop(older);
        holds.push(&signal());
        assert_eq!(holds.signals.len(), 3);
    }
}
