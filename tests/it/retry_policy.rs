//! A `RetryPolicy` set on a `Session` reaches every recipe built on it: with a bound, an acquire
//! against a throttling server gives up with a typed error after exactly that many retries and
//! leaves no node; the default rides the same throttling out; a release under a bound still
//! deletes its node (deletes never give up); a policy that does not hold together is refused.

use crate::common;

use std::time::Duration;

use common::{children, connect, server, unique_path};
use zklock::hold::Hold;
use zklock::session::{Backoff, RetryPolicy};
use zklock::zookeeper_client::{Acls, CreateMode, Error as ZkError};
use zklock::{Error, InterProcessMutex, InterProcessSemaphoreV2, Session};
use zklock_testcontainers::{Proxy, ThrottledOperation};

const PROMPTLY: Duration = Duration::from_secs(10);

/// A session through a new proxy, retrying as `policy` says.
async fn session(policy: RetryPolicy) -> (Proxy, Session) {
    let proxy = Proxy::start(server().address()).unwrap();
    let session = Session::builder().retry_policy(policy).connect_to(&proxy.connect_string()).await.unwrap();
    (proxy, session)
}

/// A lock path that exists (so that the creates throttled are our nodes', not their parents').
async fn existing_path(name: &str) -> String {
    let path = unique_path(name);
    connect().await.mkdir(&path, &CreateMode::Persistent.with_acls(Acls::anyone_all())).await.unwrap();
    path
}

fn is_throttled(err: &Error) -> bool {
    matches!(err, Error::ZooKeeper { source: ZkError::Throttled, .. })
}

#[tokio::test]
async fn an_acquire_under_a_bound_gives_up_after_it_with_the_throttled_error_and_leaves_no_node() {
    let path = existing_path("retry-bound-mutex").await;
    let (proxy, session) = session(RetryPolicy::new().with_max_retries(2)).await;
    for _ in 0..5 {
        proxy.throttle_next(ThrottledOperation::Create);
    }
    let mutex = InterProcessMutex::new(&session, &path).unwrap();
    let outcome = tokio::time::timeout(PROMPTLY, mutex.acquire()).await.expect("acquire hung");
    assert!(outcome.as_ref().is_err_and(is_throttled), "{:?}", outcome.map(|guard| guard.node_path().to_owned()));
    assert_eq!(proxy.throttled_count(), 3, "the first try and two retries");
    assert!(children(&connect().await, &path).await.is_empty(), "a node is left");
}

#[tokio::test]
async fn the_default_policy_rides_out_the_same_throttling() {
    let path = existing_path("retry-default-mutex").await;
    let (proxy, session) = session(RetryPolicy::default()).await;
    for _ in 0..5 {
        proxy.throttle_next(ThrottledOperation::Create);
    }
    let mutex = InterProcessMutex::new(&session, &path).unwrap();
    let guard = tokio::time::timeout(PROMPTLY, mutex.acquire()).await.expect("acquire hung").unwrap();
    assert_eq!(proxy.throttled_count(), 5);
    assert_eq!(children(&connect().await, &path).await.len(), 1);
    guard.release().await.unwrap();
}

#[tokio::test]
async fn a_semaphore_on_the_session_follows_its_bound_too() {
    let path = existing_path("retry-bound-semaphore").await;
    let (proxy, session) = session(RetryPolicy::new().with_max_retries(1)).await;
    for _ in 0..5 {
        proxy.throttle_next(ThrottledOperation::Create);
    }
    let semaphore = InterProcessSemaphoreV2::new(&session, &path, 2).unwrap();
    let outcome = tokio::time::timeout(PROMPTLY, semaphore.acquire()).await.expect("acquire hung");
    assert!(outcome.as_ref().is_err_and(is_throttled), "{:?}", outcome.map(|lease| lease.node_path().to_owned()));
    assert_eq!(proxy.throttled_count(), 2, "the first try and one retry");
    let observer = connect().await;
    for folder in ["locks", "leases"] {
        let nodes = match observer.list_children(&format!("{path}/{folder}")).await {
            Ok(nodes) => nodes,
            Err(ZkError::NoNode) => Vec::new(),
            Err(err) => panic!("{err}"),
        };
        assert!(nodes.is_empty(), "{folder}: {nodes:?}");
    }
}

#[tokio::test]
async fn a_release_under_a_bound_of_no_retry_still_deletes_its_node() {
    let path = existing_path("retry-bound-release").await;
    let (proxy, session) = session(RetryPolicy::new().with_max_retries(0)).await;
    let guard = InterProcessMutex::new(&session, &path).unwrap().acquire().await.unwrap();
    for _ in 0..3 {
        proxy.throttle_next(ThrottledOperation::Delete);
    }
    tokio::time::timeout(PROMPTLY, guard.release()).await.expect("release hung").unwrap();
    assert_eq!(proxy.throttled_count(), 3, "the release's deletes were not the ones throttled");
    assert!(children(&connect().await, &path).await.is_empty(), "the node is left");
}

/// The same for an acquire that gives up (its time ran out behind a holder): its cleanup's
/// deletes never give up either, so its node goes however often they are refused.
#[tokio::test]
async fn a_cleanup_under_a_bound_of_no_retry_still_deletes_its_node() {
    let path = existing_path("retry-bound-cleanup").await;
    let observer = connect().await;
    let holder = InterProcessMutex::new(&observer, &path).unwrap().acquire().await.unwrap();
    let (proxy, session) = session(RetryPolicy::new().with_max_retries(0)).await;
    let mutex = InterProcessMutex::new(&session, &path).unwrap();
    for _ in 0..3 {
        proxy.throttle_next(ThrottledOperation::Delete);
    }
    let waited = tokio::time::timeout(PROMPTLY, mutex.acquire_timeout(Duration::from_millis(200))).await;
    assert!(waited.expect("acquire hung").unwrap().is_none(), "the lock is held");
    let holders_node = holder.node_path().rsplit('/').next().unwrap().to_owned();
    common::eventually("only the holder's node is left", || async {
        children(&observer, &path).await == [holders_node.clone()]
    })
    .await;
    assert_eq!(proxy.throttled_count(), 3, "the cleanup's deletes were not the ones throttled");
    holder.release().await.unwrap();
}

#[tokio::test]
async fn a_policy_that_would_spin_or_stall_is_refused_before_anything_is_sent() {
    let ms = Duration::from_millis(1);
    let refused = [
        RetryPolicy::new().with_backoff(Backoff::linear(Duration::ZERO, ms)),
        RetryPolicy::new().with_backoff(Backoff::exponential(10 * ms, ms)),
        RetryPolicy::new().with_reconnect_backoff(Backoff::exponential(ms, Backoff::MAX_CAP + ms)),
        RetryPolicy::new().with_max_elapsed(Duration::ZERO),
    ];
    for policy in refused {
        let connected = Session::builder().retry_policy(policy).connect_to(&server().connect_string()).await;
        assert!(matches!(connected, Err(Error::InvalidOptions(_))), "{policy:?}: {connected:?}");
        let client = connect().await;
        let wrapped = Session::builder().retry_policy(policy).from_client(client, connect_again);
        assert!(matches!(wrapped, Err(Error::InvalidOptions(_))), "{policy:?}: {wrapped:?}");
    }
    let accepted = RetryPolicy::new().with_max_retries(4);
    let session = Session::builder().retry_policy(accepted).connect_to(&server().connect_string()).await.unwrap();
    assert_eq!(session.retry_policy(), accepted);
}

async fn connect_again() -> Result<zklock::Client, ZkError> {
    zklock::Client::connect(&server().connect_string()).await
}

#[tokio::test]
async fn an_acquire_under_an_elapsed_bound_gives_up_once_it_has_passed() {
    let path = existing_path("retry-elapsed-mutex").await;
    let ms = Duration::from_millis(1);
    // Far more refusals than the bound leaves time to retry through.
    let policy = RetryPolicy::new().with_backoff(Backoff::linear(20 * ms, 20 * ms)).with_max_elapsed(200 * ms);
    let (proxy, session) = session(policy).await;
    for _ in 0..500 {
        proxy.throttle_next(ThrottledOperation::Create);
    }
    let mutex = InterProcessMutex::new(&session, &path).unwrap();
    let outcome = tokio::time::timeout(PROMPTLY, mutex.acquire()).await.expect("acquire hung");
    assert!(outcome.as_ref().is_err_and(is_throttled), "{:?}", outcome.map(|guard| guard.node_path().to_owned()));
    assert!(proxy.throttled_count() < 500, "it never gave up");
    assert!(children(&connect().await, &path).await.is_empty(), "a node is left");
}

/// A bound counts requests that fail, not time spent waiting for a connection: while the
/// client has none, it holds requests until it reconnects (or the session ends), so even a
/// policy of no retry leaves an acquire waiting; its timeout is what ends it, `Ok(None)`, and
/// no node is left once the connection is back (docs/sessions.md says so).
#[tokio::test]
async fn a_bound_does_not_cut_short_a_wait_for_the_connection_the_timeout_does() {
    let path = existing_path("retry-outage").await;
    let (proxy, session) = session(RetryPolicy::new().with_max_retries(0)).await;
    let mutex = InterProcessMutex::new(&session, &path).unwrap();
    mutex.acquire().await.unwrap().release().await.unwrap();
    proxy.cut();
    tokio::time::sleep(Duration::from_millis(300)).await; // the client has seen its connection go
    let outcome = tokio::time::timeout(PROMPTLY, mutex.acquire_timeout(Duration::from_millis(1500))).await;
    let outcome = outcome.expect("the acquire outlived its timeout");
    assert!(matches!(outcome, Ok(None)), "{:?}", outcome.map(|guard| guard.is_some()));
    proxy.heal();
    let observer = connect().await;
    common::eventually("no node is left", || async { children(&observer, &path).await.is_empty() }).await;
}

/// Issue 49, item 6: a slow retry policy (pauses of seconds) beside a short acquire timeout:
/// the timeout still holds (the acquire does not sleep out a pause that ends past it) and the
/// node, if any, is cleaned. (A throttled listing needs no retry on a free lock: the create's
/// sequence number proves it free.)
#[tokio::test]
async fn a_slow_retry_policy_does_not_stretch_a_short_timeout_and_leaves_no_node() {
    let slow = RetryPolicy::new().with_backoff(Backoff::linear(Duration::from_secs(5), Duration::from_secs(5)));
    for (name, operation) in [("create", ThrottledOperation::Create), ("delete", ThrottledOperation::Delete)] {
        let path = existing_path(&format!("retry-slow-{name}")).await;
        let (proxy, session) = session(slow).await;
        proxy.throttle_next(operation);
        let mutex = InterProcessMutex::new(&session, &path).unwrap();
        // Held by another, so that our acquire times out and must clean up (its delete
        // throttled in the second case).
        let holder = InterProcessMutex::new(&connect().await, &path).unwrap().acquire().await.unwrap();
        let started = std::time::Instant::now();
        let outcome = tokio::time::timeout(PROMPTLY, mutex.acquire_timeout(Duration::from_millis(300))).await;
        let outcome = outcome.expect("acquire hung").unwrap();
        // The bound: the timeout, the cleanup's grace (0.5 s) and scheduling; a pause is 5 s.
        assert!(started.elapsed() < Duration::from_secs(3), "{name}: returned after {:?}", started.elapsed());
        assert!(outcome.is_none(), "{name}: held a held lock");
        assert_eq!(proxy.throttled_count(), 1, "{name}");
        holder.release().await.unwrap();
        let observer = connect().await;
        common::eventually(&format!("{name}: no node left"), || async { children(&observer, &path).await.is_empty() })
            .await;
    }
}
