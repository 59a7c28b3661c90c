//! The events and metrics of a lock's acquires and holds, said once for every recipe.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tracing::Instrument;

use super::label::{LockLabel, Recipe};
use super::metrics;
use super::series::Series;
use crate::error::{LossReason, Result};

impl LockLabel {
    /// Runs an acquire of this lock, begun at `started`, in the recipe's span and counted among
    /// the waiting, and tells how it ended when it did not hold (a hold tells of itself).
    ///
    /// `acquire` makes the acquire's future here, rather than being it: an async fn keeps its
    /// arguments apart from what it awaits, and the acquire's state machine, kilobytes, would be
    /// held twice and copied on every acquire. Give it a boxed one: this state and the span's
    /// wrapper then hold a pointer, not a copy.
    pub(crate) async fn acquiring<T, F: Future<Output = Result<Option<T>>>>(
        &self,
        started: Instant,
        acquire: impl FnOnce() -> F,
    ) -> Result<Option<T>> {
        let _waiting = self.waiting();
        let outcome = acquire().instrument(self.acquire_span()).await;
        match &outcome {
            Ok(None) => self.timed_out(started),
            Err(err) => self.failed(err),
            Ok(Some(_)) => {}
        }
        outcome
    }

    /// The label of a lock object of `recipe` on `path`, whose metrics carry the path when
    /// `path_in_metrics` (up to [`metrics::PATH_LABELS`] paths).
    pub(crate) fn new(recipe: Recipe, path: &str, path_in_metrics: bool) -> Self {
        metrics::describe_once();
        let path: Arc<str> = path.into();
        let series = Arc::new(Series::new(recipe.name(), &path, path_in_metrics));
        LockLabel { recipe, path, series }
    }

    /// An acquire under way, until the returned value is dropped (it ended, however).
    pub(crate) fn waiting(&self) -> Waiting<'_> {
        self.series.waiting(1.0);
        Waiting { lock: self }
    }

    /// An acquire failed with `error`.
    pub(crate) fn failed(&self, error: &crate::error::Error) {
        tracing::debug!(target: "zklock", recipe = self.recipe.name(), path = %self.path, error = %error.with_causes(), "acquire failed");
        self.series.failed(error.kind());
    }

    /// The span of one acquire, named after the recipe (span names must be literals).
    pub(crate) fn acquire_span(&self) -> tracing::Span {
        let path = &*self.path;
        match self.recipe {
            Recipe::Mutex => tracing::debug_span!(target: "zklock", "zklock.mutex.acquire", %path),
            Recipe::ReadLock => tracing::debug_span!(target: "zklock", "zklock.read_lock.acquire", %path),
            Recipe::WriteLock => tracing::debug_span!(target: "zklock", "zklock.write_lock.acquire", %path),
            Recipe::Semaphore => tracing::debug_span!(target: "zklock", "zklock.semaphore.acquire", %path),
            Recipe::SemaphoreMutex => {
                tracing::debug_span!(target: "zklock", "zklock.semaphore_mutex.acquire", %path)
            }
            Recipe::SemaphoreGate => tracing::trace_span!(target: "zklock", "zklock.semaphore_gate.acquire", %path),
            Recipe::LeaderLatch => tracing::debug_span!(target: "zklock", "zklock.leader_latch.acquire", %path),
            Recipe::LeaderSelector => {
                tracing::debug_span!(target: "zklock", "zklock.leader_selector.acquire", %path)
            }
        }
    }

    /// A new hold on `node`, after waiting since `started`; returns what follows the hold.
    pub(crate) fn acquired(&self, node: &Arc<str>, fencing_token: i64, started: Instant) -> HoldEvents {
        // One clock read for the wait's end and the hold's start (and its node watch's due time).
        let now = Instant::now();
        self.series.acquired(self.granted(node, fencing_token, started, now, false));
        HoldEvents { lock: self.clone(), node: Arc::clone(node), acquired_at: now }
    }

    /// A hold on `node` passed on by a task of ours (local handoff), after waiting since
    /// `started`: an acquisition, though the node's hold (the `zklock_held` gauge) goes on.
    pub(crate) fn handed_over(&self, node: &str, fencing_token: i64, started: Instant) {
        self.series.granted(self.granted(node, fencing_token, started, Instant::now(), true));
    }

    /// Tells of an acquire granted on `node` at `now` (`handed_over` by a task of ours, or not);
    /// returns how long it waited.
    fn granted(&self, node: &str, fencing_token: i64, started: Instant, now: Instant, handed_over: bool) -> Duration {
        let waited = now.saturating_duration_since(started);
        tracing::debug!(
            target: "zklock",
            recipe = self.recipe.name(),
            path = %self.path,
            node,
            waited_ms = waited.as_millis() as u64,
            fencing_token,
            handed_over,
            "acquired"
        );
        waited
    }

    /// A leader election's participant `id` leads, in the term whose token is `fencing_token`.
    pub(crate) fn leadership_taken(&self, id: &str, fencing_token: i64) {
        tracing::info!(target: "zklock", recipe = self.recipe.name(), path = %self.path, id, fencing_token, "leadership taken");
        self.series.leading(1.0);
    }

    /// The term whose token is `fencing_token` ended (`end` says how: lost, finished,
    /// interrupted, closed).
    pub(crate) fn leadership_ended(&self, id: &str, fencing_token: i64, end: &dyn std::fmt::Debug) {
        tracing::info!(target: "zklock", recipe = self.recipe.name(), path = %self.path, id, fencing_token, ?end, "leadership ended");
        self.series.leading(-1.0);
    }

    /// The participant `id` left the election by itself: its session ended, or ZooKeeper refused it.
    pub(crate) fn left_election(&self, id: &str, error: &crate::error::Error) {
        tracing::warn!(target: "zklock", recipe = self.recipe.name(), path = %self.path, id, error = %error.with_causes(), "left the election");
    }

    /// An acquire that started at `started` ran out of time.
    pub(crate) fn timed_out(&self, started: Instant) {
        tracing::info!(
            target: "zklock",
            recipe = self.recipe.name(),
            path = %self.path,
            waited_ms = started.elapsed().as_millis() as u64,
            "timed out"
        );
        self.series.timed_out();
    }
}

/// An acquire under way (the `zklock_waiting` gauge); see [`LockLabel::waiting`].
#[derive(Debug)]
pub(crate) struct Waiting<'a> {
    lock: &'a LockLabel,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.lock.series.waiting(-1.0);
    }
}

/// The events of one hold after it was granted; dropped with the hold's last trace (guards,
/// loss watches), which ends the hold in the `zklock_held` gauge.
#[derive(Debug)]
pub(crate) struct HoldEvents {
    lock: LockLabel,
    node: Arc<str>,
    acquired_at: Instant,
}

impl HoldEvents {
    /// When the hold began in this process.
    pub(crate) fn acquired_at(&self) -> Instant {
        self.acquired_at
    }

    /// Our release ends the hold.
    pub(crate) fn released(&self) {
        let held = self.acquired_at.elapsed();
        tracing::debug!(
            target: "zklock",
            recipe = self.lock.recipe.name(),
            path = %self.lock.path,
            node = %self.node,
            held_ms = held.as_millis() as u64,
            "released"
        );
        self.lock.series.released(held);
    }

    /// The hold was lost (called once per hold, when it is first known).
    pub(crate) fn lost(&self, reason: LossReason) {
        tracing::warn!(
            target: "zklock",
            recipe = self.lock.recipe.name(),
            path = %self.lock.path,
            node = %self.node,
            %reason,
            held_ms = self.acquired_at.elapsed().as_millis() as u64,
            "lock lost"
        );
        self.lock.series.lost(reason_name(reason));
    }

    /// Someone asked the holder to give the lock up (called once per hold).
    pub(crate) fn revocation_requested(&self) {
        tracing::info!(
            target: "zklock",
            recipe = self.lock.recipe.name(),
            path = %self.lock.path,
            node = %self.node,
            "revocation requested"
        );
    }
}

impl Drop for HoldEvents {
    fn drop(&mut self) {
        self.lock.series.ended();
    }
}

/// A loss reason as a metric label.
fn reason_name(reason: LossReason) -> &'static str {
    match reason {
        LossReason::SessionExpired => "session_expired",
        LossReason::SessionClosed => "session_closed",
        LossReason::NodeDeleted => "node_deleted",
        LossReason::Disconnected { .. } => "disconnected",
        LossReason::MaxHoldTime { .. } => "max_hold_time",
    }
}
