//! The multi-lock's own rules: all or none, on timeout and on cancellation, and progress for
//! two multi-locks that name the same paths in opposite orders.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Barrier;
use zklock::{InterProcessMultiLock, InterProcessMutex};

use crate::common::{children, connect, unique_path, wait_for_children};
use crate::lock::multi_paths;
use crate::support::PROMPTLY;

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
