//! etcd's `clientv3/concurrency` (Mutex, Election) bugs, where they apply to a ZooKeeper lock.

use std::sync::Arc;
use std::time::Duration;

use zklock::hold::Hold;
use zklock::{Error, InterProcessMutex, LeaderLatch, LeaderSelector};
use zklock_testcontainers::expire_session;

use crate::common::{children, connect, eventually, unique_path, wait_for_children};
use crate::museum::{behind_proxy, promptly, SHORT_SESSION};

/// [etcd#11456](https://github.com/etcd-io/etcd/issues/11456) (Jepsen, etcd 3.4.3): a lock
/// returned to a waiter once its predecessor went, without checking that the waiter's lease
/// still lived: the waiter was told it held a lock whose key had expired.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_whose_session_expired_while_it_waited_is_never_told_it_holds() {
    let path = unique_path("museum-etcd-11456");
    let observer = connect().await;
    let holder = InterProcessMutex::new(&observer, &path).unwrap().acquire().await.unwrap();
    let (proxy, client) = behind_proxy(SHORT_SESSION).await;
    let waiting = tokio::spawn({
        let mutex = InterProcessMutex::new(&client, &path).unwrap();
        async move { mutex.acquire().await }
    });
    wait_for_children(&observer, &path, 2).await;
    proxy.blackhole();
    // The server expires the waiter's session and deletes its node; then the holder leaves.
    wait_for_children(&observer, &path, 1).await;
    holder.release().await.unwrap();
    let third = InterProcessMutex::new(&observer, &path).unwrap();
    let taken = third.acquire_timeout(Duration::from_secs(10)).await.unwrap().expect("the lock is free");
    proxy.heal();
    let outcome = promptly("the expired waiter's acquire", waiting).await.unwrap();
    assert!(matches!(outcome, Err(Error::SessionExpired)), "{outcome:?}");
    assert!(taken.is_held());
    taken.release().await.unwrap();
    assert!(children(&observer, &path).await.is_empty(), "no node left");
}

/// [etcd#19597](https://github.com/etcd-io/etcd/issues/19597): a waiter whose session expired
/// kept waiting in `waitDeletes` until every key before it was deleted, and learnt of its
/// expiry only then.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_hears_its_session_expire_while_the_holder_still_holds() {
    let path = unique_path("museum-etcd-19597");
    let observer = connect().await;
    let holder = InterProcessMutex::new(&observer, &path).unwrap().acquire().await.unwrap();
    let (proxy, client) = behind_proxy(Duration::from_secs(20)).await;
    let waiting = tokio::spawn({
        let mutex = InterProcessMutex::new(&client, &path).unwrap();
        async move { mutex.acquire().await }
    });
    wait_for_children(&observer, &path, 2).await;
    expire_session(&client, &proxy).await.unwrap();
    let outcome = promptly("the expired waiter's acquire, the holder still holding", waiting).await.unwrap();
    assert!(matches!(outcome, Err(Error::SessionExpired)), "{outcome:?}");
    assert!(holder.is_held());
    holder.release().await.unwrap();
    assert!(children(&observer, &path).await.is_empty(), "no node left");
}

/// [etcd#19597](https://github.com/etcd-io/etcd/issues/19597), for `Election.Campaign`: a
/// candidate waiting to lead heard its session's expiry only once the leader resigned.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_latch_waiting_to_lead_hears_its_session_expire_while_the_leader_still_leads() {
    let path = unique_path("museum-etcd-19597-election");
    let observer = connect().await;
    let leader = LeaderLatch::new(&observer, &path, "leader").unwrap();
    leader.start().await.unwrap();
    promptly("the leader leads", leader.await_leadership()).await.unwrap();
    let (proxy, client) = behind_proxy(Duration::from_secs(20)).await;
    let candidate = Arc::new(LeaderLatch::new(&client, &path, "candidate").unwrap());
    candidate.start().await.unwrap();
    let waiting = tokio::spawn({
        let candidate = candidate.clone();
        async move { candidate.await_leadership().await.map(drop) }
    });
    wait_for_children(&observer, &path, 2).await;
    expire_session(&client, &proxy).await.unwrap();
    let outcome = promptly("the expired candidate's wait, the leader still leading", waiting).await.unwrap();
    assert!(matches!(outcome, Err(Error::SessionExpired)), "{outcome:?}");
    assert!(leader.has_leadership());
    leader.close().await.unwrap();
    assert!(children(&observer, &path).await.is_empty(), "no node left");
}

/// [etcd#21128](https://github.com/etcd-io/etcd/issues/21128): when `Election.Campaign` failed
/// with an error while its session lived, it did not resign, and its key stayed in the election.
/// Here the campaigns that end without a term: a latch given up after `await_leadership_timeout`
/// and closed, a selector closed while it waits, one whose start is cancelled and which is then
/// closed, and a selector whose queue is listed through refusals.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_campaign_that_ends_without_leading_leaves_no_node() {
    let path = unique_path("museum-etcd-21128");
    let observer = connect().await;
    let leader = LeaderLatch::new(&observer, &path, "leader").unwrap();
    leader.start().await.unwrap();
    promptly("the leader leads", leader.await_leadership()).await.unwrap();
    let mine = |expected: usize| {
        let observer = observer.clone();
        let path = path.clone();
        async move {
            eventually("only the leader's node", || async { children(&observer, &path).await.len() == expected }).await
        }
    };

    let latch = LeaderLatch::new(&observer, &path, "given-up").unwrap();
    latch.start().await.unwrap();
    assert!(latch.await_leadership_timeout(Duration::from_millis(300)).await.unwrap().is_none());
    latch.close().await.unwrap();
    mine(1).await;

    let selector = LeaderSelector::new(&observer, &path, "closed").unwrap();
    selector.start(|_term| std::future::pending()).await.unwrap();
    wait_for_children(&observer, &path, 2).await;
    selector.close().await.unwrap();
    mine(1).await;

    let cancelled = LeaderSelector::new(&observer, &path, "cancelled").unwrap();
    // Dropped at its first await: the selector joins in the background, then is closed.
    let start = cancelled.start(|_term| std::future::pending());
    let _ = tokio::time::timeout(Duration::ZERO, start).await;
    cancelled.close().await.unwrap();
    mine(1).await;

    let (proxy, client) = behind_proxy(Duration::from_secs(20)).await;
    let refused = LeaderSelector::new(&client, &path, "refused").unwrap();
    proxy.throttle_next(zklock_testcontainers::ThrottledOperation::GetChildren);
    proxy.throttle_next(zklock_testcontainers::ThrottledOperation::GetChildren);
    let started = refused.start(|_term| std::future::pending()).await;
    match started {
        Ok(()) => {
            refused.close().await.unwrap();
        }
        Err(err) => assert!(matches!(err, Error::ZooKeeper { .. }), "{err:?}"),
    }
    drop(refused);
    eventually("the refusals met the campaign", || async { proxy.throttled_count() == 2 }).await;
    mine(1).await;
    leader.close().await.unwrap();
    assert!(children(&observer, &path).await.is_empty(), "no node left");
}

/// [etcd#22082](https://github.com/etcd-io/etcd/issues/22082): `Mutex.Unlock` whose delete
/// committed but whose reply was lost, retried, deleted the key by name: by then the key of a
/// newer lock of the same session, which another session could then take beside it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_whose_reply_was_lost_never_deletes_the_next_hold_of_the_session() {
    let path = unique_path("museum-etcd-22082");
    let observer = connect().await;
    let (proxy, client) = behind_proxy(Duration::from_secs(20)).await;
    let mutex = InterProcessMutex::new(&client, &path).unwrap();
    let first = mutex.acquire().await.unwrap();
    proxy.drop_replies();
    let releasing = tokio::spawn(first.release());
    wait_for_children(&observer, &path, 0).await;
    proxy.heal();
    promptly("the release", releasing).await.unwrap().unwrap();
    let second = promptly("the next hold", mutex.acquire()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(observer.check_stat(second.node_path()).await.unwrap().is_some(), "the next hold's node was deleted");
    let other = InterProcessMutex::new(&observer, &path).unwrap();
    assert!(other.try_acquire().await.unwrap().is_none(), "two holders");
    second.release().await.unwrap();
    assert!(children(&observer, &path).await.is_empty(), "no node left");
}
