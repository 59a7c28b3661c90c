//! The multi-lock's own rules: all or none, on timeout and on cancellation, progress for two
//! multi-locks that name the same paths in opposite orders, and a guard that has what every
//! guard has (each lock's fencing token, the first loss of any lock) with every lock's
//! participants.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Barrier;
use zklock::hold::Hold;
use zklock::{Error, InterProcessMultiLock, InterProcessMutex, LossReason};

use crate::common::{children, connect, unique_path, wait_for_children};
use crate::contract::lock::multi_paths;
use crate::contract::support::PROMPTLY;

/// A multi-lock over `[a, b]` while another session holds `b`: it can take `a`, never both.
async fn blocked_on_the_second_path(name: &str) -> (String, String, zklock::LockGuard, InterProcessMultiLock) {
    let [a, b] = multi_paths(&unique_path(name));
    let holder = InterProcessMutex::new(&connect().await, &b).unwrap().acquire().await.unwrap();
    let multi = InterProcessMultiLock::from_paths(&connect().await, &[&a, &b]).unwrap();
    (a, b, holder, multi)
}

#[tokio::test]
async fn a_timed_out_multi_lock_gives_back_what_it_took() {
    let (a, b, holder, multi) = blocked_on_the_second_path("multi-timeout").await;
    let observer = connect().await;
    for ms in [0, 1, 5, 20, 300] {
        assert!(multi.acquire_timeout(Duration::from_millis(ms)).await.unwrap().is_none());
        wait_for_children(&observer, &a, 0).await;
        wait_for_children(&observer, &b, 1).await;
    }
    assert!(multi.try_acquire().await.unwrap().is_none());
    wait_for_children(&observer, &a, 0).await;
    holder.release().await.unwrap();
    multi.try_acquire().await.unwrap().expect("all free now").release().await.unwrap();
}

#[tokio::test]
async fn a_cancelled_multi_lock_gives_back_what_it_took() {
    let (a, b, holder, multi) = blocked_on_the_second_path("multi-cancel").await;
    let observer = connect().await;
    for ms in [0, 1, 2, 5, 20] {
        assert!(tokio::time::timeout(Duration::from_millis(ms), multi.acquire()).await.is_err());
    }
    wait_for_children(&observer, &a, 0).await;
    wait_for_children(&observer, &b, 1).await;
    // Holding `a` and queued on `b`, then dropped.
    let queued = tokio::spawn({
        let multi = multi.clone();
        async move { multi.acquire().await.map(drop) }
    });
    wait_for_children(&observer, &a, 1).await;
    wait_for_children(&observer, &b, 2).await;
    queued.abort();
    assert!(queued.await.unwrap_err().is_cancelled());
    wait_for_children(&observer, &a, 0).await;
    wait_for_children(&observer, &b, 1).await;
    holder.release().await.unwrap();
    multi.try_acquire().await.unwrap().expect("all free now").release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multi_locks_in_opposite_orders_both_make_progress() {
    const ROUNDS: usize = 10;
    let [a, b] = multi_paths(&unique_path("multi-opposite"));
    let inside = Arc::new(AtomicBool::new(false));
    let ready = Arc::new(Barrier::new(2));
    let mut parties = Vec::new();
    for order in [[a.clone(), b.clone()], [b.clone(), a.clone()]] {
        let client = connect().await;
        let multi = InterProcessMultiLock::from_paths(&client, &[&order[0], &order[1]]).unwrap();
        let (inside, ready) = (inside.clone(), ready.clone());
        parties.push(tokio::spawn(async move {
            ready.wait().await;
            let mut acquired = 0;
            for _ in 0..ROUNDS {
                let Some(guard) = multi.acquire_timeout(Duration::from_secs(5)).await.unwrap() else { continue };
                assert!(!inside.swap(true, Ordering::SeqCst), "both multi-locks held at once");
                tokio::time::sleep(Duration::from_millis(2)).await;
                inside.store(false, Ordering::SeqCst);
                guard.release().await.unwrap();
                acquired += 1;
            }
            drop(client);
            acquired
        }));
    }
    for party in parties {
        let acquired = tokio::time::timeout(PROMPTLY * 6, party).await.expect("no end").unwrap();
        assert_eq!(acquired, ROUNDS, "a multi-lock timed out behind the other");
    }
    let observer = connect().await;
    assert!(children(&observer, &a).await.is_empty() && children(&observer, &b).await.is_empty());
}

#[tokio::test]
async fn a_multi_lock_guard_has_each_locks_token_and_tells_the_first_loss_of_any() {
    let [a, b] = multi_paths(&unique_path("multi-guard"));
    let multi = InterProcessMultiLock::from_paths(&connect().await, &[&b, &a]).unwrap();
    let observer = connect().await;
    let first = multi.acquire().await.unwrap();
    let czxids = |guard: &zklock::MultiLockGuard| {
        let nodes: Vec<String> = guard.guards().iter().map(|guard| guard.node_path().to_owned()).collect();
        let observer = &observer;
        async move {
            let mut czxids = Vec::new();
            for node in &nodes {
                czxids.push(observer.check_stat(node).await.unwrap().expect("held node").czxid);
            }
            (nodes, czxids)
        }
    };
    let (nodes, tokens) = czxids(&first).await;
    assert!(nodes[0].starts_with(&format!("{a}/")) && nodes[1].starts_with(&format!("{b}/")), "{nodes:?}");
    assert_eq!(first.fencing_tokens(), tokens, "each lock's token is its node's czxid, in acquisition order");
    first.release().await.unwrap();

    let second = multi.acquire().await.unwrap();
    let tokens_again = second.fencing_tokens();
    assert!(tokens_again.iter().zip(&tokens).all(|(again, before)| again > before), "{tokens_again:?} {tokens:?}");
    // Listening first (this sets every lock's node watch); nothing is lost yet.
    assert!(tokio::time::timeout(Duration::from_millis(100), second.lost()).await.is_err(), "lost while held");
    observer.delete(second.guards()[1].node_path(), None).await.unwrap();
    let reason = tokio::time::timeout(PROMPTLY, second.lost()).await.expect("the loss of one lock not told");
    assert_eq!(reason, LossReason::NodeDeleted);
    assert!(!second.is_held());
    assert!(second.guards()[0].is_held(), "the other lock is still held until the guard is released");
    let released = second.release().await;
    assert!(matches!(released, Err(Error::LockLost(LossReason::NodeDeleted))), "{released:?}");
    wait_for_children(&observer, &a, 0).await;
}

#[tokio::test]
async fn participants_lists_each_locks_queue_holder_first() {
    let [a, b] = multi_paths(&unique_path("multi-participants"));
    let multi = InterProcessMultiLock::from_paths(&connect().await, &[&a, &b]).unwrap();
    assert_eq!(multi.participants().await.unwrap(), [Vec::<String>::new(), Vec::new()], "nobody yet");
    let held = multi.acquire().await.unwrap();
    let waiter = InterProcessMutex::builder(&connect().await, &b)
        .options(zklock::LockOptions::new().node_data(b"waiter"))
        .build()
        .unwrap();
    let waiting = tokio::spawn(async move { waiter.acquire().await.map(drop) });
    let observer = connect().await;
    wait_for_children(&observer, &b, 2).await;

    let holder_nodes: Vec<String> = held.guards().iter().map(|guard| guard.node_path().to_owned()).collect();
    let queued = children(&observer, &b).await.into_iter().map(|child| format!("{b}/{child}"));
    let waiter_node = queued.into_iter().find(|node| *node != holder_nodes[1]).unwrap();
    let participants = multi.participants().await.unwrap();
    assert_eq!(participants, [vec![holder_nodes[0].clone()], vec![holder_nodes[1].clone(), waiter_node.clone()]]);
    let with_data = multi.participants_with_data().await.unwrap();
    let on_b: Vec<(&str, &[u8])> =
        with_data[1].iter().map(|node| (node.node_path.as_str(), node.data.as_slice())).collect();
    assert_eq!(with_data[0].len(), 1);
    assert_eq!(on_b[1], (waiter_node.as_str(), b"waiter".as_slice()));
    assert_eq!(on_b[0].0, holder_nodes[1]);

    held.release().await.unwrap();
    tokio::time::timeout(PROMPTLY, waiting).await.expect("the waiter did not get b").unwrap().unwrap();
}
