//! Misuse, table by table: each case is a typed error or a documented outcome, and nothing is
//! left behind or lost.

use crate::common;

use std::time::Duration;

use common::{children, connect, unique_path};
use zklock::hold::Hold;
use zklock::{Error, InterProcessMutex};
use zookeeper_client::{Acls, CreateMode, Error as ZkError};

// "Acquire on a closed client" has no case here: zookeeper-client closes a session only when its
// last handle is dropped, and every InterProcessMutex keeps one. The closed state is still
// mapped (SessionState::Closed -> Error::SessionClosed / LossReason::SessionClosed).

#[tokio::test]
async fn extreme_timeouts_behave() {
    let path = unique_path("timeouts");
    let client = connect().await;
    let mutex = InterProcessMutex::new(&client, &path).unwrap();
    // Free lock: every timeout gets it, the largest included (no overflow, no panic).
    for timeout in [Duration::ZERO, Duration::from_secs(100 * 365 * 86_400), Duration::MAX] {
        let guard = mutex.acquire_timeout(timeout).await.unwrap().unwrap_or_else(|| panic!("{timeout:?}"));
        guard.release().await.unwrap();
    }
    // A nanosecond has run out before the create could be sent (the deadline covers it): no
    // lock, no node, and no request that could only come back late.
    assert!(mutex.acquire_timeout(Duration::from_nanos(1)).await.unwrap().is_none());
    assert!(children(&client, &path).await.is_empty());
    // Held lock: zero gives up at once; the largest waits (cancelled here) and leaves no node.
    let other_client = connect().await;
    let holder = InterProcessMutex::new(&other_client, &path).unwrap().acquire().await.unwrap();
    assert!(mutex.acquire_timeout(Duration::ZERO).await.unwrap().is_none());
    let waited = tokio::time::timeout(Duration::from_millis(300), mutex.acquire_timeout(Duration::MAX)).await;
    assert!(waited.is_err(), "Duration::MAX must mean: wait");
    common::wait_for_children(&client, &path, 1).await;
    holder.release().await.unwrap();
}

#[tokio::test]
async fn a_lock_path_under_an_ephemeral_node_is_a_typed_error() {
    let client = connect().await;
    let ephemeral = unique_path("ephemeral-parent");
    client
        .mkdir(ephemeral.rsplit_once('/').unwrap().0, &CreateMode::Container.with_acls(Acls::anyone_all()))
        .await
        .unwrap();
    client.create(&ephemeral, b"", &CreateMode::Ephemeral.with_acls(Acls::anyone_all())).await.unwrap();
    for path in [ephemeral.clone(), format!("{ephemeral}/below"), format!("{ephemeral}/below/deeper")] {
        let mutex = InterProcessMutex::new(&client, &path).unwrap();
        let outcome = tokio::time::timeout(Duration::from_secs(10), mutex.acquire()).await.expect("acquire hung");
        match outcome {
            Err(Error::ZooKeeper { source: ZkError::NoChildrenForEphemerals, .. }) => {}
            other => panic!("{path}: {other:?}"),
        }
    }
    assert!(children(&client, &ephemeral).await.is_empty());
}

#[tokio::test]
async fn unrelated_children_of_the_lock_path_are_not_contenders() {
    let path = unique_path("unrelated");
    let client = connect().await;
    let persistent = CreateMode::Persistent.with_acls(Acls::anyone_all());
    client.mkdir(&path, &persistent).await.unwrap();
    // Names that would sort ahead of any lock node if they counted (CURATOR-43).
    for name in ["0000000000", "-config", "!lock-", "config"] {
        client.create(&format!("{path}/{name}"), b"", &persistent).await.unwrap();
    }
    let mutex = InterProcessMutex::new(&client, &path).unwrap();
    let guard = mutex.try_acquire().await.unwrap().expect("unrelated children do not hold the lock");
    assert_eq!(mutex.participants().await.unwrap(), [guard.node_path()]);
    guard.release().await.unwrap();
    assert_eq!(children(&client, &path).await.len(), 4, "only our node went");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_lock_paths_in_one_process() {
    const LOCKS: usize = 10_000;
    let base = unique_path("many");
    let client = connect().await;
    let mutexes: Vec<InterProcessMutex> =
        (0..LOCKS).map(|i| InterProcessMutex::new(&client, &format!("{base}/lock-{i}")).unwrap()).collect();
    let mut guards = Vec::with_capacity(LOCKS);
    for chunk in mutexes.chunks(500) {
        let mut acquiring = tokio::task::JoinSet::new();
        for mutex in chunk {
            let mutex = mutex.clone();
            acquiring.spawn(async move { mutex.try_acquire().await });
        }
        while let Some(outcome) = acquiring.join_next().await {
            guards.push(outcome.unwrap().unwrap().expect("every lock is free"));
        }
    }
    assert_eq!(guards.len(), LOCKS);
    assert!(mutexes.iter().all(InterProcessMutex::is_acquired_in_this_process));
    assert_eq!(children(&client, &base).await.len(), LOCKS);
    let mut releasing = tokio::task::JoinSet::new();
    for guard in guards {
        releasing.spawn(guard.release());
    }
    while let Some(outcome) = releasing.join_next().await {
        outcome.unwrap().unwrap();
    }
    assert!(!mutexes.iter().any(InterProcessMutex::is_acquired_in_this_process));
}

/// An election's node data is its participant's id, and its terms take no maximum hold time:
/// options that say otherwise are refused when it is built, before anything is sent; the rest
/// of one options value (ACLs, loss policy) it takes.
#[tokio::test]
async fn an_election_refuses_the_options_it_cannot_take() {
    use zklock::{LeaderLatch, LeaderSelector, LockOptions, LossPolicy};
    let client = connect().await;
    let path = unique_path("election-options");
    for refused in [LockOptions::new().node_data("host-1"), LockOptions::new().max_hold(Duration::from_secs(60))] {
        let latch = LeaderLatch::builder(&client, &path, "a").options(refused.clone()).build();
        assert!(matches!(latch, Err(Error::InvalidOptions(_))), "{refused:?}: {latch:?}");
        let selector = LeaderSelector::builder(&client, &path, "a").options(refused.clone()).build();
        assert!(matches!(selector, Err(Error::InvalidOptions(_))), "{refused:?}: {selector:?}");
    }
    let taken = LockOptions::new().loss_policy(LossPolicy::AnyDisconnection).path_in_metrics(true);
    let latch = LeaderLatch::builder(&client, &path, "a").options(taken).build().unwrap();
    latch.start().await.unwrap();
    let leadership = latch.await_leadership().await.unwrap();
    assert_eq!(client.get_data(leadership.node_path()).await.unwrap().0, b"a", "the node carries the id");
    latch.close().await.unwrap();
    assert!(children(&client, &path).await.is_empty());
}
