//! The metrics zklock records through the [`metrics`](https://docs.rs/metrics) facade, with the
//! crate feature `metrics`; without it nothing is recorded and this module holds only
//! [`describe`].
//!
//! Every metric is labelled by `recipe` (`mutex`, `read_lock`, `write_lock`, `semaphore`,
//! `semaphore_mutex`, `semaphore_gate` — the mutex a semaphore's takers hold while they take
//! leases —, `leader_latch`, `leader_selector`), and by `path` only where a builder asked for it
//! (`path_in_metrics(true)`), so that a process with thousands of lock paths does not make
//! thousands of series.
//!
//! | name | kind | unit | labels | what it tells |
//! |---|---|---|---|---|
//! | `zklock_acquisitions_total` | counter | count | `recipe` (`path`) | holds granted: locks, leases (one per lease), terms of leadership; with local handoff, every holder |
//! | `zklock_acquire_timeouts_total` | counter | count | `recipe` (`path`) | acquires whose patience ran out (`Ok(None)`) |
//! | `zklock_acquire_errors_total` | counter | count | `recipe`, `kind` (`path`) | acquires that failed; `kind` names the [`Error`](crate::Error) variant in snake case (`session_expired`, `zookeeper`, ...) |
//! | `zklock_losses_total` | counter | count | `recipe`, `reason` (`path`) | holds lost: `session_expired`, `session_closed`, `node_deleted`, `disconnected` |
//! | `zklock_held` | gauge | count | `recipe` (`path`) | holds standing now: locks held, leases held (`semaphore`), terms (`leader_*`); a lost hold counts until its guard is released or dropped; with local handoff, a node's holders count as one hold |
//! | `zklock_waiting` | gauge | count | `recipe` (`path`) | acquires under way now (queued, or about to be) |
//! | `zklock_leader` | gauge | count | `recipe` (`path`) | elections this process leads now: 1 or 0 per election with `path`, their number without |
//! | `zklock_acquire_wait_seconds` | histogram | seconds | `recipe` (`path`) | how long granted acquires waited |
//! | `zklock_hold_seconds` | histogram | seconds | `recipe` (`path`) | how long holds lasted, to our release |
//!
//! Each metric is described (unit and help text: a Prometheus exporter's `# HELP` lines) when
//! the first lock object is made; call [`describe`] after installing a recorder
//! that comes later. For an alert on a lost lock, `increase(zklock_losses_total[5m]) > 0`; on a
//! stuck queue, `zklock_waiting > 0` with `rate(zklock_acquisitions_total[5m]) == 0`.

use std::time::Duration;

use super::label::LockLabel;

#[cfg(feature = "metrics")]
mod names {
    pub(super) const ACQUISITIONS: &str = "zklock_acquisitions_total";
    pub(super) const TIMEOUTS: &str = "zklock_acquire_timeouts_total";
    pub(super) const ERRORS: &str = "zklock_acquire_errors_total";
    pub(super) const LOSSES: &str = "zklock_losses_total";
    pub(super) const HELD: &str = "zklock_held";
    pub(super) const WAITING: &str = "zklock_waiting";
    pub(super) const LEADER: &str = "zklock_leader";
    pub(super) const WAIT_SECONDS: &str = "zklock_acquire_wait_seconds";
    pub(super) const HOLD_SECONDS: &str = "zklock_hold_seconds";
}
#[cfg(feature = "metrics")]
use names::*;

/// Gives the installed recorder the unit and help text of every zklock metric (see the table
/// above). zklock calls it when its first lock object is made; call it yourself when you install
/// a recorder after that. Without the `metrics` feature it does nothing.
pub fn describe() {
    #[cfg(feature = "metrics")]
    {
        use metrics::{describe_counter, describe_gauge, describe_histogram, Unit};
        describe_counter!(ACQUISITIONS, Unit::Count, "Holds granted: locks, leases and terms of leadership.");
        describe_counter!(TIMEOUTS, Unit::Count, "Acquires whose patience ran out.");
        describe_counter!(ERRORS, Unit::Count, "Acquires that failed, by the kind of error.");
        describe_counter!(LOSSES, Unit::Count, "Holds lost, by reason.");
        describe_gauge!(HELD, Unit::Count, "Holds standing now: locks, leases, terms of leadership.");
        describe_gauge!(WAITING, Unit::Count, "Acquires under way now.");
        describe_gauge!(LEADER, Unit::Count, "Elections this process leads now.");
        describe_histogram!(WAIT_SECONDS, Unit::Seconds, "How long granted acquires waited.");
        describe_histogram!(HOLD_SECONDS, Unit::Seconds, "How long holds lasted, to our release.");
    }
}

/// Describes the metrics once per process, when the first lock object is made.
pub(crate) fn describe_once() {
    #[cfg(feature = "metrics")]
    {
        static DESCRIBED: std::sync::Once = std::sync::Once::new();
        DESCRIBED.call_once(describe);
    }
}

#[cfg(feature = "metrics")]
fn labels(lock: &LockLabel, extra: Option<(&'static str, &'static str)>) -> Vec<metrics::Label> {
    let mut labels = vec![metrics::Label::new("recipe", lock.recipe.name())];
    if let Some((key, value)) = extra {
        labels.push(metrics::Label::new(key, value));
    }
    if lock.path_in_metrics {
        labels.push(metrics::Label::new("path", lock.path.to_string()));
    }
    labels
}

/// A hold was granted after waiting `waited`; it stands until [`ended`].
pub(crate) fn acquired(lock: &LockLabel, waited: Duration) {
    granted(lock, waited);
    #[cfg(feature = "metrics")]
    metrics::gauge!(HELD, labels(lock, None)).increment(1.0);
}

/// An acquire was granted after waiting `waited`: a new hold, or one passed on locally.
pub(crate) fn granted(lock: &LockLabel, waited: Duration) {
    #[cfg(feature = "metrics")]
    {
        metrics::counter!(ACQUISITIONS, labels(lock, None)).increment(1);
        metrics::histogram!(WAIT_SECONDS, labels(lock, None)).record(waited.as_secs_f64());
    }
    let _ = (lock, waited);
}

/// A hold granted by [`acquired`] is over: released, or lost and its guards gone.
pub(crate) fn ended(lock: &LockLabel) {
    #[cfg(feature = "metrics")]
    metrics::gauge!(HELD, labels(lock, None)).decrement(1.0);
    let _ = lock;
}

/// An acquire began (`+1`) or ended (`-1`).
pub(crate) fn waiting(lock: &LockLabel, change: f64) {
    #[cfg(feature = "metrics")]
    metrics::gauge!(WAITING, labels(lock, None)).increment(change);
    let _ = (lock, change);
}

/// An acquire ran out of time.
pub(crate) fn timed_out(lock: &LockLabel) {
    #[cfg(feature = "metrics")]
    metrics::counter!(TIMEOUTS, labels(lock, None)).increment(1);
    let _ = lock;
}

/// An acquire failed with an error of `kind`.
pub(crate) fn failed(lock: &LockLabel, kind: &'static str) {
    #[cfg(feature = "metrics")]
    metrics::counter!(ERRORS, labels(lock, Some(("kind", kind)))).increment(1);
    let _ = (lock, kind);
}

/// A hold was lost; `reason` is a short name (`session_expired`, `node_deleted`, ...).
pub(crate) fn lost(lock: &LockLabel, reason: &'static str) {
    #[cfg(feature = "metrics")]
    metrics::counter!(LOSSES, labels(lock, Some(("reason", reason)))).increment(1);
    let _ = (lock, reason);
}

/// A hold ended by our release after `held`.
pub(crate) fn released(lock: &LockLabel, held: Duration) {
    #[cfg(feature = "metrics")]
    metrics::histogram!(HOLD_SECONDS, labels(lock, None)).record(held.as_secs_f64());
    let _ = (lock, held);
}

/// A term of leadership began (`+1`) or ended (`-1`).
pub(crate) fn leading(lock: &LockLabel, change: f64) {
    #[cfg(feature = "metrics")]
    metrics::gauge!(LEADER, labels(lock, None)).increment(change);
    let _ = (lock, change);
}
