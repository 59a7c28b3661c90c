//! Loss signals for held locks: from the session's state (no request at all) and from a watch on
//! our own node (one request, set lazily, left to fire on our own delete).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock, Mutex, Weak};
use std::time::{Duration, Instant};

use dashmap::DashMap;
use tokio::sync::{watch, Notify};
use zookeeper_client::{Client, Error as ZkError, EventType, SessionState, StateWatcher};

use super::retry::retry_transient;
use crate::{LossPolicy, LossReason};

/// What Curator's `Revoker.attemptRevoke` writes into a lock node to ask its holder to let go.
pub(crate) const REVOKE_MARKER: &[u8] = b"__REVOKE__";

/// How long a lock is held before the watch on its node is set without being asked for: short
/// critical sections never pay for it; long ones learn of a deleted node within this time plus
/// a round trip.
pub(crate) const NODE_WATCH_DELAY: Duration = Duration::from_secs(1);

/// The delayed node watches of a session are set in batches at most this often: one wake-up per
/// batch, however many holds a second brings.
const NODE_WATCH_BATCH: Duration = Duration::from_millis(100);

/// The loss state of one hold, shared by its guards and the tasks that watch it.
#[derive(Debug)]
pub(crate) struct HoldSignal {
    loss: watch::Sender<Option<LossReason>>,
    /// Someone asked the holder to give the lock up (Curator's revocation).
    revoke: watch::Sender<bool>,
    released: AtomicBool,
    node_watch_started: AtomicBool,
}

impl HoldSignal {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(HoldSignal {
            loss: watch::Sender::new(None),
            revoke: watch::Sender::new(false),
            released: AtomicBool::new(false),
            node_watch_started: AtomicBool::new(false),
        })
    }

    /// Records the first reason the hold was lost; later ones are ignored.
    pub(crate) fn mark_lost(&self, reason: LossReason) {
        if self.released.load(Ordering::SeqCst) {
            return;
        }
        let first = self.loss.send_if_modified(|current| current.is_none().then(|| *current = Some(reason)).is_some());
        if first {
            tracing::warn!(%reason, "lock lost");
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

    /// Our own release is deleting the node: its deletion is not a loss.
    pub(crate) fn mark_released(&self) {
        self.released.store(true, Ordering::SeqCst);
    }

    pub(crate) fn is_released(&self) -> bool {
        self.released.load(Ordering::SeqCst)
    }
}

/// Sets a getData watch on our node (once per hold) in a spawned task, and turns its firing into
/// a loss unless our own release deleted the node. The watch is never removed: it fires on our
/// delete, which costs nothing, where dropping it unfired would cost a RemoveWatches request.
pub(crate) fn watch_node(client: &Client, node_path: &Arc<str>, signal: &Arc<HoldSignal>) {
    if signal.node_watch_started.swap(true, Ordering::SeqCst) || signal.is_released() {
        return;
    }
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return;
    };
    let (client, node_path, signal) = (client.clone(), Arc::clone(node_path), Arc::clone(signal));
    runtime.spawn(async move {
        loop {
            let watcher = match retry_transient(|| client.get_and_watch_data(&node_path)).await {
                Ok((data, _stat, watcher)) => {
                    if data == REVOKE_MARKER {
                        signal.revoke.send_replace(true);
                    }
                    watcher
                }
                Err(ZkError::NoNode) => return signal.mark_lost(LossReason::NodeDeleted),
                Err(ZkError::SessionExpired) => return signal.mark_lost(LossReason::SessionExpired),
                Err(ZkError::ClientClosed | ZkError::AuthFailed) => return signal.mark_lost(LossReason::SessionClosed),
                Err(err) => return tracing::warn!(node = %node_path, error = %err, "cannot watch the lock node"),
            };
            let event = watcher.changed().await;
            match (event.event_type, event.session_state) {
                (EventType::NodeDeleted, _) => return signal.mark_lost(LossReason::NodeDeleted),
                (EventType::Session, SessionState::Expired) => return signal.mark_lost(LossReason::SessionExpired),
                (EventType::Session, _) => return signal.mark_lost(LossReason::SessionClosed),
                // Data written to our node (a revocation request, say): read it and watch again.
                _ if signal.is_released() => return,
                _ => {}
            }
        }
    });
}

/// Holds waiting for their node watch, oldest first: each is due [`NODE_WATCH_DELAY`] after it
/// began. A queue per session, served by one task, instead of a task and a timer per hold (that
/// cost every short hold a spawn and two wake-ups).
#[derive(Debug, Default)]
struct DelayedNodeWatches {
    queue: Mutex<VecDeque<DelayedNodeWatch>>,
    /// A hold joined an empty queue.
    added: Notify,
    /// The session watch is gone: the task ends.
    stop: Notify,
}

#[derive(Debug)]
struct DelayedNodeWatch {
    due: Instant,
    signal: Weak<HoldSignal>,
    node_path: Arc<str>,
}

impl DelayedNodeWatches {
    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<DelayedNodeWatch>> {
        self.queue.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn push(&self, signal: &Arc<HoldSignal>, node_path: &Arc<str>) {
        let due = Instant::now() + NODE_WATCH_DELAY;
        let was_empty = {
            let mut queue = self.lock();
            queue.push_back(DelayedNodeWatch { due, signal: Arc::downgrade(signal), node_path: Arc::clone(node_path) });
            queue.len() == 1
        };
        if was_empty {
            // Keeps a permit if the task is not waiting yet.
            self.added.notify_one();
        }
    }

    /// Takes the watches due by `now` (pushes are in time order, give or take a thread switch).
    fn take_due(&self, now: Instant) -> Vec<DelayedNodeWatch> {
        let mut queue = self.lock();
        let due = queue.iter().take_while(|watch| watch.due <= now).count();
        queue.drain(..due).collect()
    }

    fn first_due(&self) -> Option<Instant> {
        self.lock().front().map(|watch| watch.due)
    }
}

/// Serves a session's [`DelayedNodeWatches`]: sets the node watch of each hold still held when
/// it is due (see [`watch_node`]), waking at most once per [`NODE_WATCH_BATCH`].
async fn set_delayed_node_watches(watch: Weak<SessionWatch>, delayed: Arc<DelayedNodeWatches>) {
    let mut not_before = Instant::now();
    loop {
        let first_due = delayed.first_due();
        let wait = async {
            match first_due {
                Some(due) => tokio::time::sleep_until(due.max(not_before).into()).await,
                None => delayed.added.notified().await,
            }
        };
        tokio::select! {
            _ = wait => {}
            _ = delayed.stop.notified() => return,
        }
        let now = Instant::now();
        not_before = now + NODE_WATCH_BATCH;
        let due = delayed.take_due(now);
        if due.is_empty() {
            continue;
        }
        let Some(watch) = watch.upgrade() else { return };
        for hold in due {
            if let Some(signal) = hold.signal.upgrade() {
                watch_node(&watch.client, &hold.node_path, &signal);
            }
        }
    }
}

/// One watcher per session and policy, shared by every participant on that session: 10,000
/// mutexes on one client cost one task, not 10,000.
static SESSION_WATCHES: LazyLock<DashMap<WatchKey, Weak<SessionWatch>>> = LazyLock::new(DashMap::new);

type WatchKey = (i64, LossPolicy);

/// Watches one session's state for the holds taken through it under one policy, and marks them
/// lost when the session ends or stays disconnected past the policy's grace. Costs no request.
#[derive(Debug)]
pub(crate) struct SessionWatch {
    key: WatchKey,
    client: Client,
    policy: LossPolicy,
    holds: Mutex<Holds>,
    started: AtomicBool,
    stop: Arc<Notify>,
    delayed: Arc<DelayedNodeWatches>,
}

/// Weak references to live holds; dead ones are pruned whenever the list doubles.
#[derive(Debug, Default)]
struct Holds {
    signals: Vec<Weak<HoldSignal>>,
    prune_at: usize,
}

impl SessionWatch {
    /// The watch of `client`'s session under `policy`, made on first use.
    pub(crate) fn for_client(client: &Client, policy: LossPolicy) -> Arc<Self> {
        let key = (client.session_id().0, policy);
        let mut entry = SESSION_WATCHES.entry(key).or_default();
        if let Some(watch) = entry.upgrade() {
            return watch;
        }
        let watch = Arc::new(SessionWatch {
            key,
            client: client.clone(),
            policy,
            holds: Mutex::default(),
            started: AtomicBool::new(false),
            stop: Arc::new(Notify::new()),
            delayed: Arc::default(),
        });
        *entry = Arc::downgrade(&watch);
        watch
    }

    /// Starts watching for `signal`'s hold on `node_path` (and the tasks, on first use): the
    /// session's state at once, the node once the hold has lasted [`NODE_WATCH_DELAY`] (unless
    /// released before).
    pub(crate) fn register(self: &Arc<Self>, signal: &Arc<HoldSignal>, node_path: &Arc<str>) {
        {
            let mut holds = self.lock();
            if holds.signals.len() >= holds.prune_at {
                holds.signals.retain(|hold| hold.strong_count() > 0);
                holds.prune_at = (2 * holds.signals.len()).max(64);
            }
            holds.signals.push(Arc::downgrade(signal));
        }
        if let Some(reason) = terminal_reason(self.client.state()) {
            signal.mark_lost(reason);
        }
        self.delayed.push(signal, node_path);
        if !self.started.swap(true, Ordering::SeqCst) {
            let Ok(runtime) = tokio::runtime::Handle::try_current() else {
                return;
            };
            let grace = self.policy.grace(self.client.session_timeout());
            let states = self.client.state_watcher();
            runtime.spawn(watch_session(Arc::downgrade(self), states, grace, Arc::clone(&self.stop)));
            runtime.spawn(set_delayed_node_watches(Arc::downgrade(self), Arc::clone(&self.delayed)));
        }
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
        // notify_one keeps a permit, so the tasks stop even if they are not waiting yet.
        self.stop.notify_one();
        self.delayed.stop.notify_one();
        SESSION_WATCHES.remove_if(&self.key, |_, watch| watch.strong_count() == 0);
    }
}

fn terminal_reason(state: SessionState) -> Option<LossReason> {
    match state {
        SessionState::Expired => Some(LossReason::SessionExpired),
        SessionState::Closed | SessionState::AuthFailed => Some(LossReason::SessionClosed),
        SessionState::Disconnected | SessionState::SyncConnected | SessionState::ConnectedReadOnly => None,
    }
}

async fn watch_session(watch: Weak<SessionWatch>, mut states: StateWatcher, grace: Duration, stop: Arc<Notify>) {
    let mut state = states.peek_state();
    loop {
        if let Some(reason) = terminal_reason(state) {
            if let Some(watch) = watch.upgrade() {
                watch.mark_all(reason);
            }
            return;
        }
        let next = async {
            if state != SessionState::Disconnected {
                return states.changed().await;
            }
            tokio::select! {
                next = states.changed() => next,
                _ = tokio::time::sleep(grace) => {
                    if let Some(watch) = watch.upgrade() {
                        watch.mark_all(LossReason::Disconnected { after: grace });
                    }
                    states.changed().await
                }
            }
        };
        tokio::select! {
            next = next => state = next,
            _ = stop.notified() => return,
        }
    }
}
