//! kazoo's (python-zk) orphan nodes.

use std::time::Duration;

use zklock::hold::Hold;
use zklock::{Error, InterProcessMutex};
use zklock_testcontainers::ThrottledOperation;

use crate::common::{children, connect, eventually, unique_path, wait_for_children};
use crate::museum::{behind_proxy, promptly};

/// Waits until the holder's node is the only one of `path`: the failed attempt left nothing.
async fn only_the_holders_node_is_left(observer: &zklock::zookeeper_client::Client, path: &str, holder: &str) {
    let holder = holder.rsplit('/').next().unwrap().to_owned();
    eventually("only the holder's node is left", || async { children(observer, path).await == [holder.clone()] }).await;
}

/// The lock is not stuck: once the holder lets go, a third client takes it.
async fn the_lock_passes_on(observer: &zklock::zookeeper_client::Client, path: &str, holder: zklock::LockGuard) {
    holder.release().await.unwrap();
    let third = connect().await;
    let taken = InterProcessMutex::new(&third, path).unwrap().acquire_timeout(Duration::from_secs(10)).await.unwrap();
    taken.expect("the lock is stuck behind an orphan").release().await.unwrap();
    assert!(children(observer, path).await.is_empty(), "no node left");
}

/// [kazoo#732](https://github.com/python-zk/kazoo/issues/732) (fix in kazoo#760): a
/// non-blocking `Lock.acquire` that found the lock busy while the connection was suspended
/// swallowed its cleanup delete's error; the session resumed, and the contender node stayed: an
/// orphan that became a stuck lock once the holder released.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_try_acquire_while_the_connection_is_suspended_leaves_no_node() {
    let path = unique_path("museum-kazoo-732");
    let observer = connect().await;
    let holder = InterProcessMutex::new(&observer, &path).unwrap().acquire().await.unwrap();
    let (proxy, client) = behind_proxy(Duration::from_secs(20)).await;
    let mutex = InterProcessMutex::new(&client, &path).unwrap();
    for _ in 0..3 {
        proxy.cut();
        let trying = tokio::spawn({
            let mutex = mutex.clone();
            async move { mutex.try_acquire().await }
        });
        tokio::time::sleep(Duration::from_millis(300)).await;
        proxy.heal();
        let outcome = promptly("the try", trying).await.unwrap();
        assert!(matches!(outcome, Ok(None)), "{outcome:?}");
        only_the_holders_node_is_left(&observer, &path, holder.node_path()).await;
    }
    the_lock_passes_on(&observer, &path, holder).await;
}

/// [kazoo#732](https://github.com/python-zk/kazoo/issues/732), its cleanup's delete itself
/// failing: the try found the lock busy and the delete of its node was refused (`Throttled`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_try_acquire_whose_cleanup_delete_fails_leaves_no_node() {
    let path = unique_path("museum-kazoo-732-delete");
    let observer = connect().await;
    let holder = InterProcessMutex::new(&observer, &path).unwrap().acquire().await.unwrap();
    let (proxy, client) = behind_proxy(Duration::from_secs(20)).await;
    let mutex = InterProcessMutex::new(&client, &path).unwrap();
    proxy.throttle_next(ThrottledOperation::Delete);
    let outcome = promptly("the try", mutex.try_acquire()).await;
    match &outcome {
        Ok(None) => {}
        Err(Error::ZooKeeper { source, .. }) => assert_eq!(*source, zookeeper_client::Error::Throttled),
        other => panic!("a busy lock: {other:?}"),
    }
    assert_eq!(proxy.throttled_count(), 1, "the cleanup's delete was refused");
    only_the_holders_node_is_left(&observer, &path, holder.node_path()).await;
    // Cut off between the create and the delete as well: a lost connection mid-cleanup.
    proxy.drop_replies();
    let trying = tokio::spawn({
        let mutex = mutex.clone();
        async move { mutex.try_acquire().await }
    });
    wait_for_children(&observer, &path, 2).await;
    proxy.heal();
    let outcome = promptly("the try", trying).await.unwrap();
    assert!(matches!(outcome, Ok(None)), "{outcome:?}");
    only_the_holders_node_is_left(&observer, &path, holder.node_path()).await;
    the_lock_passes_on(&observer, &path, holder).await;
}
