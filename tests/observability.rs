//! What an operator sees: tracing events that name the lock (path, node) on acquired,
//! released, timed out, lost and revocation requested, spans named per recipe, and metrics
//! (feature `metrics`, on for the tests) labelled by recipe, and by path only on request.

mod common;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use common::{connect, unique_path};
use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use metrics_util::CompositeKey;
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::Layer;
use zklock::hold::Hold;
use zklock::{revoke, InterProcessMutex, InterProcessSemaphoreV2, LossReason};

/// One event as recorded: its level and fields (the message under `message`).
#[derive(Clone, Debug)]
struct Recorded {
    level: Level,
    fields: BTreeMap<String, String>,
}

#[derive(Clone, Default)]
struct Recorder {
    events: Arc<Mutex<Vec<Recorded>>>,
    spans: Arc<Mutex<Vec<String>>>,
}

impl<S: Subscriber> Layer<S> for Recorder {
    fn on_event(&self, event: &Event<'_>, _: Context<'_, S>) {
        struct Fields<'a>(&'a mut BTreeMap<String, String>);
        impl Visit for Fields<'_> {
            fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
                self.0.insert(field.name().to_owned(), format!("{value:?}").trim_matches('"').to_owned());
            }
        }
        let mut fields = BTreeMap::new();
        event.record(&mut Fields(&mut fields));
        self.events.lock().unwrap().push(Recorded { level: *event.metadata().level(), fields });
    }

    fn on_new_span(&self, attrs: &tracing::span::Attributes<'_>, _: &tracing::span::Id, _: Context<'_, S>) {
        self.spans.lock().unwrap().push(attrs.metadata().name().to_owned());
    }
}

impl Recorder {
    /// The events with this message about `path`.
    fn events(&self, message: &str, path: &str) -> Vec<Recorded> {
        let events = self.events.lock().unwrap();
        events
            .iter()
            .filter(|event| {
                event.fields.get("message").map(String::as_str) == Some(message)
                    && event.fields.get("path").map(String::as_str) == Some(path)
            })
            .cloned()
            .collect()
    }
}

/// Held by each test: a snapshot drains every histogram, so tests must not snapshot at once.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The metrics recorder of this test binary (a process has one).
fn snapshotter() -> &'static Snapshotter {
    static SNAPSHOTTER: OnceLock<Snapshotter> = OnceLock::new();
    SNAPSHOTTER.get_or_init(|| {
        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        recorder.install().expect("the only metrics recorder");
        snapshotter
    })
}

/// One series of a snapshot.
#[derive(Debug)]
struct Metric {
    name: String,
    labels: Vec<(String, String)>,
    value: DebugValue,
}

/// The metrics whose labels include every one of `labels`, by name.
fn metrics_with(labels: &[(&str, &str)]) -> Vec<Metric> {
    snapshotter()
        .snapshot()
        .into_vec()
        .into_iter()
        .map(|(key, _, _, value): (CompositeKey, _, _, DebugValue)| {
            let (_kind, key) = key.into_parts();
            let labels: Vec<(String, String)> =
                key.labels().map(|label| (label.key().to_owned(), label.value().to_owned())).collect();
            Metric { name: key.name().to_owned(), labels, value }
        })
        .filter(|metric| labels.iter().all(|(k, v)| metric.labels.iter().any(|(hk, hv)| hk == k && hv == v)))
        .collect()
}

fn counter(metrics: &[Metric], name: &str, extra: Option<(&str, &str)>) -> u64 {
    metrics
        .iter()
        .filter(|metric| {
            metric.name == name && extra.is_none_or(|(k, v)| metric.labels.iter().any(|(lk, lv)| lk == k && lv == v))
        })
        .map(|metric| match &metric.value {
            DebugValue::Counter(count) => *count,
            other => panic!("{name} is not a counter: {other:?}"),
        })
        .sum()
}

fn histogram_len(metrics: &[Metric], name: &str) -> usize {
    metrics
        .iter()
        .filter(|metric| metric.name == name)
        .map(|metric| match &metric.value {
            DebugValue::Histogram(values) => values.len(),
            other => panic!("{name} is not a histogram: {other:?}"),
        })
        .sum()
}

/// This test alone, with a recording subscriber on this thread (a current-thread runtime runs
/// every task of the test here) and the metrics recorder installed.
async fn observed() -> (tokio::sync::MutexGuard<'static, ()>, Recorder, tracing::subscriber::DefaultGuard) {
    let alone = ONE_AT_A_TIME.lock().await;
    snapshotter();
    let recorder = Recorder::default();
    let default = tracing::subscriber::set_default(tracing_subscriber::registry().with(recorder.clone()));
    (alone, recorder, default)
}

#[tokio::test]
async fn a_mutex_tells_its_acquisitions_releases_timeouts_losses_and_revocations() {
    let (_alone, recorder, _default) = observed().await;
    let path = unique_path("observed-mutex");
    let client = connect().await;
    let operator = connect().await;
    let mutex = InterProcessMutex::builder(&client, &path)
        .options(zklock::LockOptions::new().path_in_metrics(true))
        .build()
        .unwrap();
    let rival = InterProcessMutex::new(&operator, &path).unwrap();

    // Read before this test records anything: a snapshot drains the histograms.
    let unlabelled_timeouts_before = unlabelled_timeouts();
    let guard = mutex.acquire().await.unwrap();
    let node = guard.node_path().to_owned();
    assert!(rival.acquire_timeout(Duration::from_millis(200)).await.unwrap().is_none());
    guard.release().await.unwrap();

    let guard = mutex.acquire().await.unwrap();
    revoke(&operator, guard.node_path()).await.unwrap();
    guard.revocation_requested().await;
    let lost_node = guard.node_path().to_owned();
    operator.delete(&lost_node, None).await.unwrap();
    assert_eq!(guard.lost().await, LossReason::NodeDeleted);
    drop(guard);

    let acquired = recorder.events("acquired", &path);
    assert!(acquired.iter().any(|event| event.fields["node"] == node), "{acquired:?}");
    assert!(acquired.iter().all(|e| e.fields["recipe"] == "mutex" && e.fields.contains_key("fencing_token")));
    assert!(acquired.iter().all(|e| e.fields.contains_key("waited_ms")));
    let released = recorder.events("released", &path);
    assert!(released.iter().any(|e| e.fields["node"] == node && e.fields.contains_key("held_ms")), "{released:?}");
    let timed_out = recorder.events("timed out", &path);
    assert_eq!(timed_out.len(), 1, "the rival's timeout");
    assert_eq!(timed_out[0].level, Level::INFO);
    let lost = recorder.events("lock lost", &path);
    assert_eq!(lost.len(), 1, "{lost:?}");
    assert_eq!(lost[0].level, Level::WARN);
    assert_eq!(lost[0].fields["node"], lost_node);
    assert_eq!(lost[0].fields["reason"], LossReason::NodeDeleted.to_string());
    assert_eq!(recorder.events("revocation requested", &path).len(), 1);
    assert!(recorder.spans.lock().unwrap().iter().any(|name| name == "zklock.mutex.acquire"));

    let metrics = metrics_with(&[("recipe", "mutex"), ("path", &path)]);
    assert_eq!(counter(&metrics, "zklock_acquisitions_total", None), 2, "{metrics:?}");
    assert_eq!(counter(&metrics, "zklock_losses_total", Some(("reason", "node_deleted"))), 1);
    assert_eq!(histogram_len(&metrics, "zklock_acquire_wait_seconds"), 2);
    assert_eq!(histogram_len(&metrics, "zklock_hold_seconds"), 2, "both holds ended with a release");
    // The rival did not ask for its path in the metrics: its timeout went to the series of
    // every mutex without a path (shared by the tests of this binary, which run one at a time),
    // not to this path's.
    assert_eq!(counter(&metrics, "zklock_acquire_timeouts_total", None), 0, "{metrics:?}");
    assert_eq!(unlabelled_timeouts() - unlabelled_timeouts_before, 1);
}

/// The mutexes' acquire timeouts counted without a path label.
fn unlabelled_timeouts() -> u64 {
    let unlabelled: Vec<Metric> = metrics_with(&[("recipe", "mutex")])
        .into_iter()
        .filter(|metric| metric.labels.iter().all(|(key, _)| key != "path"))
        .collect();
    counter(&unlabelled, "zklock_acquire_timeouts_total", None)
}

#[tokio::test]
async fn a_semaphore_tells_its_leases_under_its_own_name() {
    let (_alone, recorder, _default) = observed().await;
    let path = unique_path("observed-semaphore");
    let client = connect().await;
    let semaphore = InterProcessSemaphoreV2::builder(&client, &path, 1)
        .options(zklock::LockOptions::new().path_in_metrics(true))
        .build()
        .unwrap();

    let lease = semaphore.acquire().await.unwrap();
    assert!(semaphore.try_acquire().await.unwrap().is_none());
    lease.release().await.unwrap();

    let acquired = recorder.events("acquired", &path);
    assert_eq!(acquired.len(), 1, "{acquired:?}");
    assert_eq!(acquired[0].fields["recipe"], "semaphore");
    assert!(acquired[0].fields["node"].starts_with(&format!("{path}/leases/")));
    assert_eq!(recorder.events("released", &path).len(), 1);
    assert_eq!(recorder.events("timed out", &path).len(), 1);
    assert!(recorder.spans.lock().unwrap().iter().any(|name| name == "zklock.semaphore.acquire"));

    let metrics = metrics_with(&[("recipe", "semaphore"), ("path", &path)]);
    assert_eq!(counter(&metrics, "zklock_acquisitions_total", None), 1, "{metrics:?}");
    assert_eq!(counter(&metrics, "zklock_acquire_timeouts_total", None), 1);
    assert_eq!(histogram_len(&metrics, "zklock_hold_seconds"), 1);
}

#[tokio::test]
async fn a_multi_lock_acquires_in_a_span_of_its_own_around_its_locks() {
    let (_alone, recorder, _default) = observed().await;
    let base = unique_path("observed-multi");
    let paths = [format!("{base}/a"), format!("{base}/b")];
    let client = connect().await;
    let multi = zklock::InterProcessMultiLock::from_paths(&client, &[paths[0].as_str(), paths[1].as_str()]).unwrap();
    multi.acquire().await.unwrap().release().await.unwrap();
    let spans = recorder.spans.lock().unwrap().clone();
    let multi_span = spans.iter().position(|name| name == "zklock.multi_lock.acquire").expect("a multi-lock span");
    let mutex_span = spans.iter().position(|name| name == "zklock.mutex.acquire").expect("its locks' spans");
    assert!(multi_span < mutex_span, "{spans:?}");
    assert_eq!(recorder.events("acquired", &paths[1]).len(), 1);
}

#[tokio::test]
async fn a_leader_latch_tells_each_term_taken_lost_and_ended_under_its_own_name() {
    let (_alone, recorder, _default) = observed().await;
    let path = unique_path("observed-latch");
    let client = connect().await;
    let operator = connect().await;
    let latch = zklock::LeaderLatch::builder(&client, &path, "host-1")
        .options(zklock::LockOptions::new().path_in_metrics(true))
        .build()
        .unwrap();
    latch.start().await.unwrap();
    let first = latch.await_leadership().await.unwrap();
    operator.delete(first.node_path(), None).await.unwrap();
    assert_eq!(first.ended().await.loss(), Some(LossReason::NodeDeleted));
    let second = latch.await_leadership().await.unwrap();
    latch.close().await.unwrap();

    let taken = recorder.events("leadership taken", &path);
    assert_eq!(taken.len(), 2, "{taken:?}");
    assert!(taken.iter().all(|event| event.level == Level::INFO && event.fields["id"] == "host-1"));
    assert_eq!(taken[1].fields["fencing_token"], second.fencing_token().to_string());
    let ended = recorder.events("leadership ended", &path);
    assert_eq!(ended.len(), 2, "{ended:?}");
    assert!(ended[0].fields["end"].contains("Lost") && ended[1].fields["end"].contains("Closed"), "{ended:?}");
    let lost = recorder.events("lock lost", &path);
    assert_eq!(lost.len(), 1, "{lost:?}");
    assert_eq!((lost[0].fields["recipe"].as_str(), lost[0].level), ("leader_latch", Level::WARN));
    assert!(recorder.spans.lock().unwrap().iter().any(|name| name == "zklock.leader_latch.acquire"));

    let metrics = metrics_with(&[("recipe", "leader_latch"), ("path", &path)]);
    assert_eq!(counter(&metrics, "zklock_acquisitions_total", None), 2, "{metrics:?}");
    assert_eq!(counter(&metrics, "zklock_losses_total", Some(("reason", "node_deleted"))), 1);
}

/// The value of gauge `name` among `metrics` (0 when it was never set).
fn gauge(metrics: &[Metric], name: &str) -> f64 {
    metrics
        .iter()
        .filter(|metric| metric.name == name)
        .map(|metric| match &metric.value {
            DebugValue::Gauge(value) => value.into_inner(),
            other => panic!("{name} is not a gauge: {other:?}"),
        })
        .sum()
}

#[tokio::test]
async fn gauges_show_what_is_held_and_waited_for_and_failures_are_counted_by_kind() {
    let (_alone, _recorder, _default) = observed().await;
    let path = unique_path("observed-gauges");
    let client = connect().await;
    let build = || {
        InterProcessMutex::builder(&client, &path)
            .options(zklock::LockOptions::new().path_in_metrics(true))
            .build()
            .unwrap()
    };
    let series = || metrics_with(&[("recipe", "mutex"), ("path", &path)]);
    let holder = build().acquire().await.unwrap();
    let waiter_mutex = build();
    let waiter = tokio::spawn(async move { waiter_mutex.acquire_timeout(Duration::from_secs(30)).await });
    common::eventually("one hold and one waiter", || async {
        let metrics = series();
        gauge(&metrics, "zklock_held") == 1.0 && gauge(&metrics, "zklock_waiting") == 1.0
    })
    .await;
    holder.release().await.unwrap();
    let next = waiter.await.unwrap().unwrap().expect("the waiter holds");
    assert_eq!(gauge(&series(), "zklock_waiting"), 0.0, "the acquire ended");
    next.release().await.unwrap();
    common::eventually("nothing held", || async { gauge(&series(), "zklock_held") == 0.0 }).await;

    // A read holder asking for the write lock would wait for itself: counted by kind.
    let rw = zklock::InterProcessReadWriteLock::builder(&client, &path)
        .options(zklock::LockOptions::new().path_in_metrics(true))
        .build()
        .unwrap();
    let read = rw.read_lock().acquire().await.unwrap();
    assert!(matches!(rw.write_lock().acquire().await, Err(zklock::Error::WouldDeadlock(_))));
    let writes = metrics_with(&[("recipe", "write_lock"), ("path", &path)]);
    assert_eq!(counter(&writes, "zklock_acquire_errors_total", Some(("kind", "would_deadlock"))), 1, "{writes:?}");
    read.release().await.unwrap();
}

#[tokio::test]
async fn every_metric_has_a_unit_and_a_description() {
    let (_alone, _recorder, _default) = observed().await;
    let client = connect().await;
    let path = unique_path("observed-described");
    InterProcessMutex::new(&client, &path).unwrap().acquire().await.unwrap().release().await.unwrap();
    let mut described = BTreeMap::new();
    for (key, unit, description, _) in snapshotter().snapshot().into_vec() {
        let (_kind, key) = key.into_parts();
        if key.name().starts_with("zklock_") {
            described.insert(key.name().to_owned(), (unit, description));
        }
    }
    assert!(described.len() >= 5, "{described:?}");
    for (name, (unit, description)) in &described {
        assert!(unit.is_some() && description.is_some(), "{name} is not described: {unit:?} {description:?}");
    }
}

/// Set in the process that runs [`paths_past_the_limit_share_one_label_and_warn_once`] alone:
/// the connect string of the parent's server.
const ALONE_WITH_SERVER: &str = "ZKLOCK_OBSERVABILITY_ALONE_WITH_SERVER";

#[tokio::test]
async fn paths_past_the_limit_share_one_label_and_warn_once() {
    // The paths this test gives labels to are the process's for good: the other tests of this
    // binary would find none left. It runs again in a process of its own, on this server.
    let Some(connect_string) = std::env::var_os(ALONE_WITH_SERVER) else {
        let name = "paths_past_the_limit_share_one_label_and_warn_once";
        let alone = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", name, "--test-threads=1", "--nocapture"])
            .env(ALONE_WITH_SERVER, common::server().connect_string())
            .output()
            .unwrap();
        let output = format!("{}{}", String::from_utf8_lossy(&alone.stdout), String::from_utf8_lossy(&alone.stderr));
        assert!(alone.status.success() && output.contains("1 passed"), "{output}");
        return;
    };
    let (_alone, recorder, _default) = observed().await;
    let client = common::connect_to(connect_string.to_str().unwrap()).await;
    let base = unique_path("observed-path-limit");
    let paths: Vec<String> = (0..=zklock::metrics::PATH_LABELS + 1).map(|at| format!("{base}/{at}")).collect();
    let mutexes: Vec<InterProcessMutex> = paths
        .iter()
        .map(|path| {
            InterProcessMutex::builder(&client, path)
                .options(zklock::LockOptions::new().path_in_metrics(true))
                .build()
                .unwrap()
        })
        .collect();
    let (last_labelled, first_over, second_over) =
        (zklock::metrics::PATH_LABELS - 1, zklock::metrics::PATH_LABELS, zklock::metrics::PATH_LABELS + 1);
    for at in [last_labelled, first_over, second_over] {
        mutexes[at].acquire().await.unwrap().release().await.unwrap();
    }

    // One snapshot: each drains the histograms.
    let (mut labelled, mut other) = (Vec::new(), Vec::new());
    for metric in metrics_with(&[("recipe", "mutex")]) {
        let path = metric.labels.iter().find(|(key, _)| key == "path").map(|(_, path)| path.as_str());
        assert!(![&paths[first_over], &paths[second_over]].iter().any(|over| path == Some(over)), "{metric:?}");
        if path == Some(&paths[last_labelled]) {
            labelled.push(metric);
        } else if path == Some(zklock::metrics::OTHER_PATHS) {
            other.push(metric);
        }
    }
    assert_eq!(counter(&labelled, "zklock_acquisitions_total", None), 1, "{labelled:?}");
    assert_eq!(counter(&other, "zklock_acquisitions_total", None), 2, "{other:?}");
    assert_eq!(histogram_len(&other, "zklock_hold_seconds"), 2);

    let warnings: Vec<Recorded> = recorder
        .events
        .lock()
        .unwrap()
        .iter()
        .filter(|event| event.fields.get("message").map(String::as_str) == Some("metric path labels used up"))
        .cloned()
        .collect();
    assert_eq!(warnings.len(), 1, "one warning for every path past the limit: {warnings:?}");
    assert_eq!((warnings[0].level, warnings[0].fields["path"].as_str()), (Level::WARN, paths[first_over].as_str()));
}
