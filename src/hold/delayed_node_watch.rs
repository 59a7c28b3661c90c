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
use crate::client::retry::{Backoff, RetryPolicy};
use zookeeper_client::Client;

/// How long a lock is held before the watch on its node is set without being asked for: short
/// critical sections never pay for it; long ones learn of a deleted node within this time plus
/// a round trip.
pub(crate) const NODE_WATCH_DELAY: Duration = Duration::from_secs(1);

/// The delayed node watches of a session are set in batches at most this often: one wake-up per
/// batch, however many holds a second brings.
const NODE_WATCH_BATCH: Duration = Duration::from_millis(100);

/// How long the task serving an empty queue keeps looking at it once per
/// [`NODE_WATCH_DELAY`] before it sleeps until a hold joins: a session that takes a hold now and
/// then costs no wake-up a second for ever, and one that takes holds often (or a fresh one that
/// has just made its lock objects) costs its holds no wake-up.
const IDLE_LOOKS_BEFORE_SLEEPING: u32 = 60;

/// Holds waiting for their node watch, oldest first: each is due [`NODE_WATCH_DELAY`] after it
/// began. A queue per session, served by one task that polls it (once per [`NODE_WATCH_DELAY`]
/// while it is empty, for a minute, then asleep until a hold joins), so that joining it costs a
/// hold neither a spawn, a timer nor a wake-up (but the first after a minute without one): a
/// hold's node watch is set between one second and 1 s + [`NODE_WATCH_BATCH`] after it began.
#[derive(Debug, Default)]
pub(crate) struct DelayedNodeWatches {
    queue: Mutex<Queue>,
    /// A hold joined the queue while the task slept.
    joined: Notify,
    /// The session has ended (told by the session's state task): the task ends.
    pub(crate) stop: Notify,
}

#[derive(Debug, Default)]
struct Queue {
    watches: VecDeque<DelayedNodeWatch>,
    /// The task sleeps until a hold joins (it found the queue empty for a minute).
    asleep: bool,
}

#[derive(Debug)]
struct DelayedNodeWatch {
    due: Instant,
    signal: Weak<HoldSignal>,
    /// The client the hold was taken through, while the hold keeps it: the queue never keeps a
    /// session open.
    client: Weak<Client>,
    node_path: Arc<str>,
    /// How the watch's read is paced (the hold's pacing; it never gives up). The pacing alone,
    /// not the whole policy: every hold's entry is copied in.
    pacing: Backoff,
}

impl DelayedNodeWatches {
    fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Queues `signal`'s hold for its node watch; `client` is the one it was taken through.
    pub(crate) fn push(
        &self,
        client: Weak<Client>,
        signal: &Arc<HoldSignal>,
        node_path: &Arc<str>,
        retry: RetryPolicy,
    ) {
        let due = signal.began() + NODE_WATCH_DELAY;
        let watch = DelayedNodeWatch {
            due,
            signal: Arc::downgrade(signal),
            client,
            node_path: Arc::clone(node_path),
            pacing: retry.backoff(),
        };
        let mut queue = self.lock();
        // A hold released before it was due needs no watch: dropped now (the newest first, as
        // in a loop of short holds), its signal's and path's allocations freed while the
        // allocator's cache for their sizes is warm, where the task would free a second's worth
        // of them at once.
        while queue.watches.back().is_some_and(|watch| watch.signal.strong_count() == 0) {
            queue.watches.pop_back();
        }
        queue.watches.push_back(watch);
        let wake = std::mem::take(&mut queue.asleep);
        drop(queue);
        if wake {
            self.joined.notify_one();
        }
    }

    /// Takes the watches due by `now` (pushes are in time order, give or take a thread switch).
    fn take_due(&self, now: Instant) -> Vec<DelayedNodeWatch> {
        let mut queue = self.lock();
        let due = queue.watches.iter().take_while(|watch| watch.due <= now).count();
        queue.watches.drain(..due).collect()
    }

    /// When the first hold in the queue is due; with none, `None`, and the queue marked asleep
    /// when `sleep` (the next hold to join wakes the task).
    fn first_due(&self, sleep: bool) -> Option<Instant> {
        let mut queue = self.lock();
        let first = queue.watches.front().map(|watch| watch.due);
        queue.asleep = first.is_none() && sleep;
        first
    }
}

/// Serves a session's [`DelayedNodeWatches`]: sets the node watch of each hold still held when
/// it is due (see [`watch_node`]), waking at most once per [`NODE_WATCH_BATCH`], and once per
/// [`NODE_WATCH_DELAY`] while nothing waits (a hold that joins then is due no sooner), until a
/// minute has passed without one: then it sleeps until one joins. Ends when told to stop.
pub(crate) async fn set_delayed_node_watches(delayed: Arc<DelayedNodeWatches>) {
    let mut not_before = Instant::now();
    let mut idle_looks = 0;
    loop {
        let wake = match delayed.first_due(idle_looks >= IDLE_LOOKS_BEFORE_SLEEPING) {
            Some(due) => {
                idle_looks = 0;
                due.max(not_before)
            }
            None if idle_looks >= IDLE_LOOKS_BEFORE_SLEEPING => {
                tokio::select! {
                    () = delayed.joined.notified() => {}
                    () = delayed.stop.notified() => return,
                }
                idle_looks = 0;
                continue;
            }
            None => {
                idle_looks += 1;
                Instant::now() + NODE_WATCH_DELAY
            }
        };
        tokio::select! {
            () = tokio::time::sleep_until(wake.into()) => {}
            () = delayed.stop.notified() => return,
        }
        let now = Instant::now();
        not_before = now + NODE_WATCH_BATCH;
        for hold in delayed.take_due(now) {
            if let (Some(signal), Some(client)) = (hold.signal.upgrade(), hold.client.upgrade()) {
                watch_node(&client, RetryPolicy::never_giving_up(hold.pacing), &hold.node_path, &signal);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::future::Future;

    use super::*;
    use crate::hold::hold_signal::tests::signal;

    #[test]
    fn a_hold_released_before_the_next_joins_leaves_the_queue_at_once() {
        let delayed = DelayedNodeWatches::default();
        let path: Arc<str> = Arc::from("/lock/_c_0-lock-0000000001");
        let older = signal();
        delayed.push(Weak::new(), &older, &path, RetryPolicy::new());
        let released = signal();
        delayed.push(Weak::new(), &released, &path, RetryPolicy::new());
        drop(released);
        let newest = signal();
        delayed.push(Weak::new(), &newest, &path, RetryPolicy::new());
        assert_eq!(delayed.lock().watches.len(), 2);
        // One released behind a live one waits until it is due, as before.
        drop(older);
        delayed.push(Weak::new(), &signal(), &path, RetryPolicy::new());
        assert_eq!(delayed.lock().watches.len(), 3);
    }

    /// Whether `notified` has a permit waiting (a hold's push woke the task).
    fn woken(notified: tokio::sync::futures::Notified<'_>) -> bool {
        let waker = std::task::Waker::noop();
        std::pin::pin!(notified).poll(&mut std::task::Context::from_waker(waker)).is_ready()
    }

    #[test]
    fn a_hold_joining_a_sleeping_queue_wakes_its_task_and_only_then() {
        let delayed = DelayedNodeWatches::default();
        let path: Arc<str> = Arc::from("/lock/_c_0-lock-0000000001");
        // Still looking once a second: a hold joins without waking anyone.
        assert_eq!(delayed.first_due(false), None);
        let first = signal();
        delayed.push(Weak::new(), &first, &path, RetryPolicy::new());
        assert!(!woken(delayed.joined.notified()));
        // Found empty for a minute: asleep, and the next hold to join wakes it, once.
        delayed.take_due(Instant::now() + NODE_WATCH_DELAY);
        assert_eq!(delayed.first_due(true), None);
        let second = signal();
        delayed.push(Weak::new(), &second, &path, RetryPolicy::new());
        assert!(woken(delayed.joined.notified()));
        let third = signal();
        delayed.push(Weak::new(), &third, &path, RetryPolicy::new());
        assert!(!woken(delayed.joined.notified()));
        // A queue with a hold in it is not put to sleep.
        assert!(delayed.first_due(true).is_some());
        assert!(!delayed.lock().asleep);
    }
}
