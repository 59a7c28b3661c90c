//! Multi-locks (all or none), revocation requests, and participants with their data.

use crate::common;

use std::time::Duration;

use common::{children, connect, unique_path};
use zklock::hold::Hold;
use zklock::{revoke, InterProcessMultiLock, InterProcessMutex, InterProcessSemaphoreV2};

#[tokio::test]
async fn a_multi_lock_takes_all_or_none() {
    let base = unique_path("multi");
    let paths = [format!("{base}/a"), format!("{base}/b"), format!("{base}/c")];
    let path_refs: Vec<&str> = paths.iter().map(String::as_str).collect();
    let client = connect().await;
    let multi = InterProcessMultiLock::from_paths(&client, &path_refs).unwrap();
    let guard = multi.acquire().await.unwrap();
    assert_eq!(guard.guards().len(), 3);
    assert!(multi.is_acquired_by_current_task() && guard.is_held());
    guard.release().await.unwrap();

    // Someone holds the last one: the first two are taken, then given back.
    let other_client = connect().await;
    let holder = InterProcessMutex::new(&other_client, &paths[2]).unwrap().acquire().await.unwrap();
    assert!(multi.acquire_timeout(Duration::from_millis(300)).await.unwrap().is_none());
    assert!(multi.try_acquire().await.unwrap().is_none());
    for path in &paths[..2] {
        assert!(children(&client, path).await.is_empty(), "{path} kept a node");
    }
    assert!(!multi.locks()[0].is_acquired_in_this_process());
    holder.release().await.unwrap();
    let guard = multi.try_acquire().await.unwrap().expect("all free now");
    guard.release().await.unwrap();
    assert!(InterProcessMultiLock::new(Vec::new()).is_err());
}

#[tokio::test]
async fn a_holder_hears_a_revocation_request_and_lets_go() {
    let path = unique_path("revoke");
    let client = connect().await;
    let mutex = InterProcessMutex::new(&client, &path).unwrap();
    let guard = mutex.acquire().await.unwrap();
    let asked = tokio::time::timeout(Duration::from_millis(200), guard.revocation_requested()).await;
    assert!(asked.is_err(), "nobody asked yet");

    let other_client = connect().await;
    let other = InterProcessMutex::new(&other_client, &path).unwrap();
    let waiting = tokio::spawn(async move { other.acquire().await.map(drop) });
    common::wait_for_children(&client, &path, 2).await;
    let holder_node = mutex.participants().await.unwrap()[0].clone();
    revoke(&other_client, &holder_node).await.unwrap();

    tokio::time::timeout(Duration::from_secs(10), guard.revocation_requested()).await.expect("request not heard");
    assert!(guard.is_held(), "revocation is a request, not a loss");
    guard.release().await.unwrap();
    waiting.await.unwrap().unwrap();
    // Revoking a node that is gone is not an error.
    revoke(&client, &holder_node).await.unwrap();
}

#[tokio::test]
async fn participants_come_with_their_node_data_in_queue_order() {
    let path = unique_path("participant-data");
    let (a, b) = (connect().await, connect().await);
    let first =
        InterProcessMutex::builder(&a, &path).options(zklock::LockOptions::new().node_data("host-a")).build().unwrap();
    let guard = first.acquire().await.unwrap();
    let second =
        InterProcessMutex::builder(&b, &path).options(zklock::LockOptions::new().node_data("host-b")).build().unwrap();
    let waiting = tokio::spawn(async move { second.acquire().await.map(drop) });
    common::wait_for_children(&a, &path, 2).await;
    let participants = first.participants_with_data().await.unwrap();
    let data: Vec<&[u8]> = participants.iter().map(|p| p.data.as_slice()).collect();
    assert_eq!(data, [b"host-a".as_slice(), b"host-b".as_slice()]);
    assert_eq!(participants[0].node_path, guard.node_path());
    guard.release().await.unwrap();
    waiting.await.unwrap().unwrap();

    let semaphore = InterProcessSemaphoreV2::new(&a, &format!("{path}-semaphore"), 2).unwrap();
    let lease = semaphore.acquire().await.unwrap();
    assert_eq!(semaphore.participants_with_data().await.unwrap().len(), 1);
    lease.release().await.unwrap();
    assert!(semaphore.participants_with_data().await.unwrap().is_empty());
}

/// Two multi-locks over the same paths given in opposite orders both make progress: they are
/// taken in one canonical order. (Taken in the given order, each held one lock and timed out
/// waiting for the other, round after round.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multi_locks_given_in_opposite_orders_both_make_progress() {
    const ROUNDS: usize = 6;
    let base = unique_path("multi-order");
    let (one, two) = (format!("{base}/one"), format!("{base}/two"));
    let ready = std::sync::Arc::new(tokio::sync::Barrier::new(2));
    let mut tasks = Vec::new();
    for order in [[one.clone(), two.clone()], [two.clone(), one.clone()]] {
        let ready = ready.clone();
        tasks.push(tokio::spawn(async move {
            let client = connect().await;
            let paths: Vec<&str> = order.iter().map(String::as_str).collect();
            let multi = InterProcessMultiLock::from_paths(&client, &paths).unwrap();
            ready.wait().await;
            for round in 0..ROUNDS {
                let guard = multi.acquire_timeout(Duration::from_secs(3)).await.unwrap();
                let guard = guard.unwrap_or_else(|| panic!("{paths:?} timed out in round {round}"));
                tokio::time::sleep(Duration::from_millis(20)).await;
                guard.release().await.unwrap();
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let client = connect().await;
    assert!(children(&client, &one).await.is_empty() && children(&client, &two).await.is_empty());
}

/// Found by the explorer (`tests/it/explore.rs`): a multi-lock that took its first lock and waited
/// for the second returned both, though an operator had deleted its first lock's node meanwhile
/// and another participant held that lock. The locks taken are watched while a later one is
/// waited for, and a lock lost by then is taken again with the others (all or none).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_multi_lock_whose_first_node_was_deleted_while_it_waited_takes_it_again() {
    let base = unique_path("multi-deleted");
    let (a, b) = (format!("{base}/a"), format!("{base}/b"));
    let (client, other_client, observer) = (connect().await, connect().await, connect().await);
    let b_holder = InterProcessMutex::new(&other_client, &b).unwrap().acquire().await.unwrap();
    let multi = InterProcessMultiLock::from_paths(&client, &[&a, &b]).unwrap();
    let taking = tokio::spawn(async move { multi.acquire().await.unwrap() });
    // It holds a and waits behind the holder of b.
    common::wait_for_children(&observer, &b, 2).await;
    let a_node = format!("{a}/{}", children(&observer, &a).await[0]);
    let a_rival = InterProcessMutex::new(&observer, &a).unwrap();
    observer.delete(&a_node, None).await.unwrap();
    let a_held = a_rival.try_acquire().await.unwrap().expect("a is free once the node went");
    b_holder.release().await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!taking.is_finished(), "the multi-lock holds a beside its rival (its a node was deleted)");
    a_held.release().await.unwrap();
    let guard = tokio::time::timeout(Duration::from_secs(10), taking).await.expect("never took both").unwrap();
    assert!(guard.is_held());
    assert_ne!(guard.guards()[0].node_path(), a_node, "held on the deleted node");
    guard.release().await.unwrap();
}
