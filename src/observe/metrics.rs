//! The metrics zklock records (crate feature `metrics`), each described.
//!
//! Recorded through the [`metrics`](https://docs.rs/metrics) facade; without the feature nothing is
//! recorded and this module holds only [`describe`].
//!
//! Every metric is labelled by `recipe` (`mutex`, `read_lock`, `write_lock`, `semaphore`,
//! `semaphore_mutex`, `semaphore_gate` — the mutex a semaphore's takers hold while they take
//! leases —, `leader_latch`, `leader_selector`), and by `path` only where a builder asked for it
//! (`path_in_metrics(true)`), so that a process with thousands of lock paths does not make
//! thousands of series. Even then, only the first [`PATH_LABELS`] distinct paths of a process
//! get a `path` label of their own; the locks on later paths share `path="other"`
//! ([`OTHER_PATHS`]), and the first of them logs `metric path labels used up` at `warn` (target
//! `zklock`, with its `path`). A backend keeps a bounded number of series, and an operator sees
//! both the shared series and the warning.
//!
//! | name | kind | unit | labels | what it tells |
//! |---|---|---|---|---|
//! | `zklock_acquisitions_total` | counter | count | `recipe` (`path`) | holds granted: locks, leases (one per lease), terms of leadership; with local handoff, every holder |
//! | `zklock_acquire_timeouts_total` | counter | count | `recipe` (`path`) | acquires whose patience ran out (`Ok(None)`) |
//! | `zklock_acquire_errors_total` | counter | count | `recipe`, `kind` (`path`) | acquires that failed; `kind` names the [`Error`](crate::Error) variant in snake case (`session_expired`, `zookeeper`, ...) |
//! | `zklock_losses_total` | counter | count | `recipe`, `reason` (`path`) | holds lost: `session_expired`, `session_closed`, `node_deleted`, `disconnected`, `max_hold_time` |
//! | `zklock_held` | gauge | count | `recipe` (`path`) | holds standing now: locks held, leases held (`semaphore`), terms (`leader_*`); a lost hold counts until its guard is released or dropped; with local handoff, a node's holders count as one hold |
//! | `zklock_waiting` | gauge | count | `recipe` (`path`) | acquires under way now (queued, or about to be) |
//! | `zklock_leader` | gauge | count | `recipe` (`path`) | elections this process leads now: 1 or 0 per election with `path`, their number without |
//! | `zklock_acquire_wait_seconds` | histogram | seconds | `recipe` (`path`) | how long granted acquires waited |
//! | `zklock_hold_seconds` | histogram | seconds | `recipe` (`path`) | how long holds lasted, to our release |
//!
//! Each metric is described (unit and help text: a Prometheus exporter's `# HELP` lines) when
//! the first lock object is made; call [`describe`] after installing a recorder
//! that comes later.
//!
//! A lock object registers each of its series with the recorder once, on its first event of
//! that kind, and keeps the handle: an event costs an update of the handle, not a lookup. The
//! recorder in force at each event is still the one that counts, as with the `metrics` macros:
//! a recorder installed after the lock was made (or a local one, `metrics::with_local_recorder`)
//! gets handles of its own at the lock's next event. One consequence of kept handles: an
//! exporter that drops series idle for a while (`PrometheusBuilder::idle_timeout`) drops a
//! lock's series for good, since the lock goes on updating the handle it has; leave zklock's
//! metric kinds out of the idle timeout's mask, or keep the timeout longer than a lock object
//! stays idle. For an alert on a lost lock, `increase(zklock_losses_total[5m]) > 0`; on a
//! stuck queue, `zklock_waiting > 0` with `rate(zklock_acquisitions_total[5m]) == 0`.

/// The metrics' names, for the lock objects' series (`series.rs`).
#[cfg(feature = "metrics")]
pub(crate) mod names {
    pub(crate) const ACQUISITIONS: &str = "zklock_acquisitions_total";
    pub(crate) const TIMEOUTS: &str = "zklock_acquire_timeouts_total";
    pub(crate) const ERRORS: &str = "zklock_acquire_errors_total";
    pub(crate) const LOSSES: &str = "zklock_losses_total";
    pub(crate) const HELD: &str = "zklock_held";
    pub(crate) const WAITING: &str = "zklock_waiting";
    pub(crate) const LEADER: &str = "zklock_leader";
    pub(crate) const WAIT_SECONDS: &str = "zklock_acquire_wait_seconds";
    pub(crate) const HOLD_SECONDS: &str = "zklock_hold_seconds";
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

/// How many distinct lock paths get a `path` label of their own in a process. A lock that asks
/// for its path (`path_in_metrics(true)`) after this many other paths have one is labelled
/// [`OTHER_PATHS`] instead, and the first such lock logs a warning (target `zklock`), so that a
/// program that makes locks on ever new paths cannot blow up a metrics backend.
pub const PATH_LABELS: usize = 100;

/// The `path` label of the locks past [`PATH_LABELS`]: one series for all of them. No lock
/// path has this value (ZooKeeper paths begin with `/`).
pub const OTHER_PATHS: &str = "other";
