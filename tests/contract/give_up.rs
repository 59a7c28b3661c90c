//! Giving up: a timed-out, tried or dropped acquire leaves no node, wherever it stopped.

use std::time::Duration;

use crate::common::{connect, unique_path};
use crate::lock::{Held, LockUnderTest};
use crate::support::{nodes, wait_for_nodes, wait_until_queued, PROMPTLY};

/// Early give-ups: before the create is answered, between create and list, while watching.
const GIVE_UP_AFTER_MS: [u64; 5] = [0, 1, 2, 5, 20];

/// Timed-out and tried acquires behind a holder return `None` and leave only the holder's nodes.
pub async fn timeouts_leave_only_the_holders_nodes<L: LockUnderTest>() {
    let path = unique_path("contract-timeout");
    let holder_client = connect().await;
    let holder = L::rival(&holder_client, &path).acquire().await.unwrap();
    let client = connect().await;
    let lock = L::make(&client, &path);
    for ms in GIVE_UP_AFTER_MS.into_iter().chain([300]) {
        let outcome = lock.acquire_timeout(Duration::from_millis(ms)).await.unwrap();
        assert!(outcome.is_none(), "acquired a held lock within {ms} ms");
        wait_for_nodes::<L>(&client, &path, &holder.node_paths()).await;
    }
    assert!(lock.try_acquire().await.unwrap().is_none(), "tried and acquired a held lock");
    wait_for_nodes::<L>(&client, &path, &holder.node_paths()).await;
    holder.release().await.unwrap();
    let held = lock.try_acquire().await.unwrap().expect("nothing left behind blocks the lock");
    held.release().await.unwrap();
    assert!(nodes::<L>(&client, &path).await.is_empty());
}

/// Acquire futures dropped at every await point, and once queued behind the holder, leave only
/// the holder's nodes.
pub async fn cancelled_acquires_leave_only_the_holders_nodes<L: LockUnderTest>() {
    let path = unique_path("contract-cancel");
    let holder_client = connect().await;
    let holder = L::rival(&holder_client, &path).acquire().await.unwrap();
    let held_nodes = holder.node_paths();
    let client = connect().await;
    let lock = std::sync::Arc::new(L::make(&client, &path));
    for ms in GIVE_UP_AFTER_MS {
        let outcome = tokio::time::timeout(Duration::from_millis(ms), lock.acquire()).await;
        assert!(outcome.is_err(), "acquired a held lock within {ms} ms");
    }
    wait_for_nodes::<L>(&client, &path, &held_nodes).await;

    let queued = tokio::spawn({
        let lock = lock.clone();
        async move { lock.acquire().await.map(drop) }
    });
    wait_until_queued::<L>(&client, &path, held_nodes.len()).await;
    queued.abort();
    assert!(queued.await.unwrap_err().is_cancelled(), "the queued acquire finished behind a holder");
    wait_for_nodes::<L>(&client, &path, &held_nodes).await;

    holder.release().await.unwrap();
    let held = tokio::time::timeout(PROMPTLY, lock.try_acquire()).await.unwrap().unwrap();
    held.expect("nothing left behind blocks the lock").release().await.unwrap();
    assert!(nodes::<L>(&client, &path).await.is_empty());
}
