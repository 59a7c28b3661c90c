//! The node watch of a hold that lasts, set by one task per session.
//!
//! A hold's node watch is set once it has lasted [`NODE_WATCH_DELAY`], by the task serving its
//! session's queue, so short critical sections never pay for it (neither a request nor a task).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use super::hold_signal::HoldSignal;
use super::node_watch::watch_node;
use crate::client::retry_policy::{Backoff, RetryPolicy};
use zookeeper_client::Client;

/// How long a lock is held before the watch on its node is set without being asked for: short
/// critical sections never pay for it; long ones learn of a deleted node within this time plus
/// a round trip.
pub(crate) const NODE_WATCH_DELAY: Duration = Duration::from_secs(1);

/// The delayed node watches of a session are set in batches at most this often: one wake-up per
/// batch, however many holds a second brings.
const NODE_WATCH_BATCH: Duration = Duration::from_millis(100);

/// Holds waiting for their node watch, oldest first: each is due [`NODE_WATCH_DELAY`] after it
/// began. A queue per session, served by one task that polls it (at least once per
/// [`NODE_WATCH_DELAY`] while it is empty), so that joining it costs a hold neither a spawn, a
/// timer nor a wake-up: a hold's node watch is set between one second and
/// 1 s + [`NODE_WATCH_BATCH`] after it began.
#[derive(Debug, Default)]
pub(crate) struct DelayedNodeWatches {
    queue: Mutex<VecDeque<DelayedNodeWatch>>,
    /// The session watch is gone: the task ends.
    pub(crate) stop: Notify,
}

#[derive(Debug)]
struct DelayedNodeWatch {
    due: Instant,
    signal: Weak<HoldSignal>,
    node_path: Arc<str>,
    /// How the watch's read is paced (the hold's pacing; it never gives up). The pacing alone,
    /// not the whole policy: every hold's entry is copied in.
    pacing: Backoff,
}

impl DelayedNodeWatches {
    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<DelayedNodeWatch>> {
        self.queue.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub(crate) fn push(&self, signal: &Arc<HoldSignal>, node_path: &Arc<str>, retry: RetryPolicy) {
        let due = signal.began() + NODE_WATCH_DELAY;
        let watch = DelayedNodeWatch {
            due,
            signal: Arc::downgrade(signal),
            node_path: Arc::clone(node_path),
            pacing: retry.backoff(),
        };
        let mut queue = self.lock();
        // A hold released before it was due needs no watch: dropped now (the newest first, as
        // in a loop of short holds), its signal's and path's allocations freed while the
        // allocator's cache for their sizes is warm, where the task would free a second's worth
        // of them at once.
        while queue.back().is_some_and(|watch| watch.signal.strong_count() == 0) {
            queue.pop_back();
        }
        queue.push_back(watch);
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
/// it is due (see [`watch_node`]), waking at most once per [`NODE_WATCH_BATCH`], and once per
/// [`NODE_WATCH_DELAY`] while nothing waits (a hold that joins then is due no sooner).
///
/// `client` gives the session's client while the session's watch lives (`None` ends the task).
pub(crate) async fn set_delayed_node_watches(client: impl Fn() -> Option<Client>, delayed: Arc<DelayedNodeWatches>) {
    let mut not_before = Instant::now();
    loop {
        let wake = match delayed.first_due() {
            Some(due) => due.max(not_before),
            None => Instant::now() + NODE_WATCH_DELAY,
        };
        tokio::select! {
            _ = tokio::time::sleep_until(wake.into()) => {}
            _ = delayed.stop.notified() => return,
        }
        let now = Instant::now();
        not_before = now + NODE_WATCH_BATCH;
        let due = delayed.take_due(now);
        if due.is_empty() {
            continue;
        }
        let Some(client) = client() else { return };
        for hold in due {
            if let Some(signal) = hold.signal.upgrade() {
                watch_node(&client, RetryPolicy::never_giving_up(hold.pacing), &hold.node_path, &signal);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hold::hold_signal::tests::signal;

    #[test]
    fn a_hold_released_before_the_next_joins_leaves_the_queue_at_once() {
        let delayed = DelayedNodeWatches::default();
        let path: Arc<str> = Arc::from("/lock/_c_0-lock-0000000001");
        let older = signal();
        delayed.push(&older, &path, RetryPolicy::new());
        let released = signal();
        delayed.push(&released, &path, RetryPolicy::new());
        drop(released);
        let newest = signal();
        delayed.push(&newest, &path, RetryPolicy::new());
        assert_eq!(delayed.lock().len(), 2);
        // One released behind a live one waits until it is due, as before.
        drop(older);
        delayed.push(&signal(), &path, RetryPolicy::new());
        assert_eq!(delayed.lock().len(), 3);
    }
}
