//! The metric series of one lock object, through handles registered once (see [`Series`]).

use std::sync::Arc;
use std::time::Duration;

#[cfg(feature = "metrics")]
use std::sync::{Mutex, OnceLock, PoisonError, RwLock};

#[cfg(feature = "metrics")]
use metrics::{Counter, Gauge, Histogram, Label};

#[cfg(feature = "metrics")]
use super::metrics::names::*;
#[cfg(feature = "metrics")]
use super::path_labels::path_label;

/// The metric series of one lock object. Each handle is registered on the lock's first event of
/// its kind with the recorder in force then, and kept while that recorder stays in force (told
/// by its address): installing a recorder, or entering a local one, after the lock was made
/// takes new handles, as when every event looked its metric up. (A local recorder dropped and
/// another made at its address would be taken for the first: local recorders serve tests, which
/// make their locks within them.)
#[derive(Debug)]
pub(crate) struct Series {
    /// `recipe`, and `path` when the builder asked for it.
    #[cfg(feature = "metrics")]
    labels: Vec<Label>,
    #[cfg(feature = "metrics")]
    handles: RwLock<Option<Handles>>,
}

/// A lock's handles in one recorder; each registered on first use, so that a series appears
/// when it first has a value, as with the `metrics` macros.
#[cfg(feature = "metrics")]
#[derive(Debug)]
struct Handles {
    /// The address of the recorder that gave them.
    recorder: usize,
    acquisitions: OnceLock<Counter>,
    timeouts: OnceLock<Counter>,
    held: OnceLock<Gauge>,
    waiting: OnceLock<Gauge>,
    leader: OnceLock<Gauge>,
    wait_seconds: OnceLock<Histogram>,
    hold_seconds: OnceLock<Histogram>,
    /// The counters with a label of their own (errors by `kind`, losses by `reason`): the
    /// metric's name, that label's value, the handle.
    by_cause: Mutex<Vec<(&'static str, &'static str, Counter)>>,
}

impl Series {
    /// The series of a lock of the recipe named `recipe` on `path`, labelled by path when
    /// `path_in_metrics` (up to `PATH_LABELS` paths).
    pub(crate) fn new(recipe: &'static str, path: &Arc<str>, path_in_metrics: bool) -> Self {
        #[cfg(feature = "metrics")]
        {
            let mut labels = vec![Label::new("recipe", recipe)];
            labels.extend(path_in_metrics.then(|| Label::new("path", path_label(path))));
            Series { labels, handles: RwLock::new(None) }
        }
        #[cfg(not(feature = "metrics"))]
        {
            let _ = (recipe, path, path_in_metrics);
            Series {}
        }
    }

    /// Records through this lock's handles in the recorder in force.
    #[cfg(feature = "metrics")]
    fn record(&self, record: impl FnOnce(&Handles, &[Label])) {
        metrics::with_recorder(|recorder| {
            let recorder = std::ptr::from_ref(recorder).cast::<()>().addr();
            let handles = self.handles.read().unwrap_or_else(PoisonError::into_inner);
            if let Some(handles) = handles.as_ref().filter(|handles| handles.recorder == recorder) {
                return record(handles, &self.labels);
            }
            drop(handles);
            let fresh = Handles::new(recorder);
            record(&fresh, &self.labels);
            *self.handles.write().unwrap_or_else(PoisonError::into_inner) = Some(fresh);
        });
    }

    /// A hold was granted after waiting `waited`; it stands until [`Self::ended`].
    pub(crate) fn acquired(&self, waited: Duration) {
        self.granted(waited);
        #[cfg(feature = "metrics")]
        self.record(|handles, labels| handles.held(labels).increment(1.0));
    }

    /// An acquire was granted after waiting `waited`: a new hold, or one passed on locally.
    pub(crate) fn granted(&self, waited: Duration) {
        #[cfg(feature = "metrics")]
        self.record(|handles, labels| {
            handles.acquisitions.get_or_init(|| metrics::counter!(ACQUISITIONS, labels.to_vec())).increment(1);
            let wait_seconds = handles.wait_seconds.get_or_init(|| metrics::histogram!(WAIT_SECONDS, labels.to_vec()));
            wait_seconds.record(waited.as_secs_f64());
        });
        let _ = waited;
    }

    /// A hold granted by [`Self::acquired`] is over: released, or lost and its guards gone.
    pub(crate) fn ended(&self) {
        #[cfg(feature = "metrics")]
        self.record(|handles, labels| handles.held(labels).decrement(1.0));
    }

    /// An acquire began (`+1`) or ended (`-1`).
    pub(crate) fn waiting(&self, change: f64) {
        #[cfg(feature = "metrics")]
        self.record(|handles, labels| {
            handles.waiting.get_or_init(|| metrics::gauge!(WAITING, labels.to_vec())).increment(change)
        });
        let _ = change;
    }

    /// An acquire ran out of time.
    pub(crate) fn timed_out(&self) {
        #[cfg(feature = "metrics")]
        self.record(|handles, labels| {
            handles.timeouts.get_or_init(|| metrics::counter!(TIMEOUTS, labels.to_vec())).increment(1)
        });
    }

    /// An acquire failed with an error of `kind`.
    pub(crate) fn failed(&self, kind: &'static str) {
        #[cfg(feature = "metrics")]
        self.record(|handles, labels| handles.count_cause(labels, ERRORS, "kind", kind));
        let _ = kind;
    }

    /// A hold was lost; `reason` is a short name (`session_expired`, `node_deleted`, ...).
    pub(crate) fn lost(&self, reason: &'static str) {
        #[cfg(feature = "metrics")]
        self.record(|handles, labels| handles.count_cause(labels, LOSSES, "reason", reason));
        let _ = reason;
    }

    /// A hold ended by our release after `held`.
    pub(crate) fn released(&self, held: Duration) {
        #[cfg(feature = "metrics")]
        self.record(|handles, labels| {
            let hold_seconds = handles.hold_seconds.get_or_init(|| metrics::histogram!(HOLD_SECONDS, labels.to_vec()));
            hold_seconds.record(held.as_secs_f64());
        });
        let _ = held;
    }

    /// A term of leadership began (`+1`) or ended (`-1`).
    pub(crate) fn leading(&self, change: f64) {
        #[cfg(feature = "metrics")]
        self.record(|handles, labels| {
            handles.leader.get_or_init(|| metrics::gauge!(LEADER, labels.to_vec())).increment(change)
        });
        let _ = change;
    }
}

#[cfg(feature = "metrics")]
impl Handles {
    fn new(recorder: usize) -> Self {
        Handles {
            recorder,
            acquisitions: OnceLock::new(),
            timeouts: OnceLock::new(),
            held: OnceLock::new(),
            waiting: OnceLock::new(),
            leader: OnceLock::new(),
            wait_seconds: OnceLock::new(),
            hold_seconds: OnceLock::new(),
            by_cause: Mutex::new(Vec::new()),
        }
    }

    /// The `zklock_held` gauge, which a hold's start and end both move.
    fn held(&self, labels: &[Label]) -> &Gauge {
        self.held.get_or_init(|| metrics::gauge!(HELD, labels.to_vec()))
    }

    /// Counts one in the counter `name` of this lock with the label `key` = `value` besides its
    /// own.
    fn count_cause(&self, labels: &[Label], name: &'static str, key: &'static str, value: &'static str) {
        let mut by_cause = self.by_cause.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((_, _, counter)) = by_cause.iter().find(|(n, v, _)| *n == name && *v == value) {
            return counter.increment(1);
        }
        // The label goes after `recipe`, before `path`, where it always went.
        let mut labels = labels.to_vec();
        labels.insert(1, Label::new(key, value));
        let counter = metrics::counter!(name, labels);
        counter.increment(1);
        by_cause.push((name, value, counter));
    }
}

#[cfg(all(test, feature = "metrics"))]
mod tests {
    use std::time::Instant;

    use metrics_util::debugging::{DebugValue, DebuggingRecorder};

    use super::*;

    fn acquisitions(recorder: &DebuggingRecorder) -> u64 {
        let snapshot = recorder.snapshotter().snapshot().into_vec();
        let values = snapshot.into_iter().filter(|(key, ..)| key.key().name() == ACQUISITIONS);
        values.map(|(.., value)| if let DebugValue::Counter(count) = value { count } else { 0 }).sum()
    }

    /// The rule of the `metrics` macros, kept with handles: every event goes to the recorder in
    /// force when it happens, though the lock was made before that recorder came.
    #[test]
    fn a_lock_records_into_whichever_recorder_is_in_force_at_each_event() {
        let lock = Series::new("mutex", &Arc::from("/handles"), false);
        lock.acquired(Duration::ZERO);
        let (first, second) = (DebuggingRecorder::new(), DebuggingRecorder::new());
        metrics::with_local_recorder(&first, || lock.acquired(Duration::ZERO));
        metrics::with_local_recorder(&second, || lock.acquired(Duration::ZERO));
        metrics::with_local_recorder(&first, || lock.granted(Duration::ZERO));
        assert_eq!((acquisitions(&first), acquisitions(&second)), (2, 1));
    }

    /// The events of one uncontended acquire and release, as `LockLabel` sends them.
    fn hold(lock: &Series) {
        lock.waiting(1.0);
        lock.acquired(Duration::from_micros(300));
        lock.waiting(-1.0);
        lock.released(Duration::from_micros(200));
        lock.ended();
    }

    /// The same events as each looked its metric up before handles: labels built, then the
    /// recorder asked for the series.
    fn hold_by_lookup(path: &Arc<str>, path_in_metrics: bool) {
        let labels = || {
            let mut labels = vec![Label::new("recipe", "mutex")];
            if path_in_metrics {
                labels.push(Label::new("path", path.to_string()));
            }
            labels
        };
        metrics::gauge!(WAITING, labels()).increment(1.0);
        metrics::counter!(ACQUISITIONS, labels()).increment(1);
        metrics::histogram!(WAIT_SECONDS, labels()).record(0.0003);
        metrics::gauge!(HELD, labels()).increment(1.0);
        metrics::gauge!(WAITING, labels()).increment(-1.0);
        metrics::histogram!(HOLD_SECONDS, labels()).record(0.0002);
        metrics::gauge!(HELD, labels()).decrement(1.0);
    }

    fn nanos_per_hold(holds: u32, hold: impl Fn()) -> f64 {
        let started = Instant::now();
        for _ in 0..holds {
            hold();
        }
        started.elapsed().as_nanos() as f64 / f64::from(holds)
    }

    fn median(mut values: Vec<f64>) -> f64 {
        values.sort_by(f64::total_cmp);
        values[values.len() / 2]
    }

    /// What the metrics of one hold cost this process, looked up per event and through handles,
    /// into a Prometheus recorder; rounds alternate which goes first. Reports, asserts nothing.
    #[test]
    #[ignore = "a benchmark: cargo test --release --all-features --lib metrics_cost -- --ignored --nocapture"]
    fn metrics_cost_per_hold() {
        let recorder = metrics_exporter_prometheus::PrometheusBuilder::new().build_recorder();
        let (holds, rounds) = (100_000, 9);
        metrics::with_local_recorder(&recorder, || {
            for path_in_metrics in [false, true] {
                let path = Arc::from("/bench/metrics-cost");
                let lock = Series::new("mutex", &path, path_in_metrics);
                let (mut lookup, mut handles) = (Vec::new(), Vec::new());
                for round in 0..rounds {
                    if round % 2 == 0 {
                        lookup.push(nanos_per_hold(holds, || hold_by_lookup(&path, path_in_metrics)));
                        handles.push(nanos_per_hold(holds, || hold(&lock)));
                    } else {
                        handles.push(nanos_per_hold(holds, || hold(&lock)));
                        lookup.push(nanos_per_hold(holds, || hold_by_lookup(&path, path_in_metrics)));
                    }
                }
                println!(
                    "path_in_metrics({path_in_metrics}): per hold (7 metric updates), median of {rounds} rounds of {holds}: \
                     lookup {:.0} ns, handles {:.0} ns",
                    median(lookup),
                    median(handles)
                );
            }
        });
    }
}
