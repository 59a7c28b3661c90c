//! zklock's metrics, through the `metrics` facade (feature `metrics`): counters of
//! acquisitions, timeouts and losses, and histograms of wait and hold times (seconds), labelled
//! by `recipe`, and by `path` only where a builder asked for it (`path_in_metrics(true)`), so
//! that a process with thousands of lock paths does not make thousands of series.
//!
//! | name | kind | labels |
//! |---|---|---|
//! | `zklock_acquisitions_total` | counter | `recipe` (`path`) |
//! | `zklock_acquire_timeouts_total` | counter | `recipe` (`path`) |
//! | `zklock_losses_total` | counter | `recipe`, `reason` (`path`) |
//! | `zklock_acquire_wait_seconds` | histogram | `recipe` (`path`) |
//! | `zklock_hold_seconds` | histogram | `recipe` (`path`) |
//!
//! Without the feature every function here is empty.

use std::time::Duration;

use crate::observe::LockLabel;

#[cfg(feature = "metrics")]
const ACQUISITIONS: &str = "zklock_acquisitions_total";
#[cfg(feature = "metrics")]
const TIMEOUTS: &str = "zklock_acquire_timeouts_total";
#[cfg(feature = "metrics")]
const LOSSES: &str = "zklock_losses_total";
#[cfg(feature = "metrics")]
const WAIT_SECONDS: &str = "zklock_acquire_wait_seconds";
#[cfg(feature = "metrics")]
const HOLD_SECONDS: &str = "zklock_hold_seconds";

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

/// A hold was granted after waiting `waited`.
pub(crate) fn acquired(lock: &LockLabel, waited: Duration) {
    #[cfg(feature = "metrics")]
    {
        metrics::counter!(ACQUISITIONS, labels(lock, None)).increment(1);
        metrics::histogram!(WAIT_SECONDS, labels(lock, None)).record(waited.as_secs_f64());
    }
    let _ = (lock, waited);
}

/// An acquire ran out of time.
pub(crate) fn timed_out(lock: &LockLabel) {
    #[cfg(feature = "metrics")]
    metrics::counter!(TIMEOUTS, labels(lock, None)).increment(1);
    let _ = lock;
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
