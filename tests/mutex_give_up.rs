//! Timeouts, try_acquire and cancelled acquires: whoever gives up leaves no node behind.

mod common;

use std::future::Future;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use common::{children, connect, connect_to, eventually, server, unique_path, wait_for_children};
use zklock::InterProcessMutex;
use zklock_testcontainers::Proxy;

/// ZooKeeper's opcodes, as the proxy reports them: a node's create (create, create2), a delete, a
/// getData.
const CREATE: [i32; 2] = [1, 15];
const DELETE: i32 = 2;
const GET_DATA: i32 = 4;

#[tokio::test]
async fn acquire_timeout_returns_none_in_time_and_leaves_no_node() {
    let path = unique_path("timeout");
    let holder_client = connect().await;
    let holder = InterProcessMutex::new(&holder_client, &path).unwrap().acquire().await.unwrap();
    let client = connect().await;
    let mutex = InterProcessMutex::new(&client, &path).unwrap();

    let timeout = Duration::from_millis(300);
    let started = Instant::now();
    let outcome = mutex.acquire_timeout(timeout).await.unwrap();
    let waited = started.elapsed();
    assert!(outcome.is_none());
    assert!(waited >= timeout, "gave up early: {waited:?}");
    // A generous bound: this checks that the timeout is honoured at all, not how fast.
    assert!(waited < timeout + Duration::from_secs(5), "gave up late: {waited:?}");
    // Deleted before acquire_timeout returned, not eventually.
    assert_eq!(children(&client, &path).await, [holder.node_path().rsplit('/').next().unwrap()]);
    assert!(!mutex.is_acquired_in_this_process());

    holder.release().await.unwrap();
    let guard = mutex.acquire_timeout(Duration::from_secs(5)).await.unwrap().expect("free now");
    guard.release().await.unwrap();
}

#[tokio::test]
async fn try_acquire_does_not_wait_and_leaves_no_node() {
    let path = unique_path("try");
    let holder_client = connect().await;
    let holder = InterProcessMutex::new(&holder_client, &path).unwrap().acquire().await.unwrap();
    let client = connect().await;
    let mutex = InterProcessMutex::new(&client, &path).unwrap();
    assert!(mutex.try_acquire().await.unwrap().is_none());
    assert!(mutex.acquire_timeout(Duration::ZERO).await.unwrap().is_none(), "zero timeout is try_acquire");
    assert_eq!(children(&client, &path).await.len(), 1);
    holder.release().await.unwrap();
    let guard = mutex.try_acquire().await.unwrap().expect("free now");
    guard.release().await.unwrap();
}

#[tokio::test]
async fn cancelled_acquires_leave_no_node_whenever_they_are_dropped() {
    let path = unique_path("cancel");
    let holder_client = connect().await;
    let holder = InterProcessMutex::new(&holder_client, &path).unwrap().acquire().await.unwrap();
    // Through a proxy that reports what the client sends.
    let proxy = Proxy::start(server().address()).unwrap();
    let client = connect_to(&proxy.connect_string()).await;
    let mutex = InterProcessMutex::new(&client, &path).unwrap();
    // Drop the acquire future after ever longer times: before the create is sent back, between
    // create and list, while watching, while waiting.
    const DROPS: [u64; 12] = [0, 10, 50, 100, 200, 400, 800, 1_600, 3_200, 6_400, 12_800, 50_000];
    for micros in DROPS {
        let outcome = tokio::time::timeout(Duration::from_micros(micros), mutex.acquire()).await;
        assert!(outcome.is_err(), "acquired a held lock");
    }
    // Every acquire created its node and was cut short: each node deleted, and some while
    // watching the holder's.
    let sent = || proxy.requests_sent();
    let count = |sent: &[i32], opcodes: &[i32]| sent.iter().filter(|opcode| opcodes.contains(opcode)).count();
    eventually("every cancelled acquire's node is deleted", || async { count(&sent(), &[DELETE]) == DROPS.len() })
        .await;
    let sent = sent();
    assert_eq!(count(&sent, &CREATE), DROPS.len(), "{sent:?}");
    assert!(count(&sent, &[GET_DATA]) > 0, "no acquire was dropped while watching: {sent:?}");
    wait_for_children(&client, &path, 1).await;
    assert!(!mutex.is_acquired_in_this_process());
    holder.release().await.unwrap();
    let guard = mutex.try_acquire().await.unwrap().expect("no abandoned node blocks the lock");
    guard.release().await.unwrap();
    wait_for_children(&client, &path, 0).await;
}

#[tokio::test]
async fn an_acquire_dropped_between_polls_leaves_no_node() {
    let path = unique_path("cancel-polls");
    let client = connect().await;
    let mutex = InterProcessMutex::new(&client, &path).unwrap();
    // A persistent lock path (no container to be reaped meanwhile), so that the very first
    // poll's create succeeds on the server.
    let persistent = zookeeper_client::CreateMode::Persistent.with_acls(zookeeper_client::Acls::anyone_all());
    client.mkdir(&path, &persistent).await.unwrap();
    // Poll by hand, letting replies arrive between polls without being read, then drop: the
    // first poll sends the create, later polls see its reply, the list, and so on.
    for polls in 1..=4 {
        let mut acquire = Box::pin(mutex.acquire());
        let mut context = Context::from_waker(Waker::noop());
        let mut acquired = None;
        for _ in 0..polls {
            if let Poll::Ready(guard) = acquire.as_mut().poll(&mut context) {
                acquired = Some(guard.unwrap());
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        match acquired {
            Some(guard) => guard.release().await.unwrap(),
            None => assert!(!mutex.is_acquired_in_this_process()),
        }
        drop(acquire);
        wait_for_children(&client, &path, 0).await;
    }
    client.delete(&path, None).await.unwrap();
}

#[tokio::test]
async fn a_cancelled_waiter_behind_a_reentrant_acquire_lets_the_owner_go_on() {
    let path = unique_path("cancel-pending");
    let holder_client = connect().await;
    let holder = InterProcessMutex::new(&holder_client, &path).unwrap().acquire().await.unwrap();
    let client = connect().await;
    let mutex = InterProcessMutex::new(&client, &path).unwrap();
    // The first acquire of this task queues; the second waits for it; both time out.
    let (first, second) = tokio::join!(
        mutex.acquire_timeout(Duration::from_millis(200)),
        mutex.acquire_timeout(Duration::from_millis(100))
    );
    assert!(first.unwrap().is_none() && second.unwrap().is_none());
    assert_eq!(children(&client, &path).await.len(), 1);
    holder.release().await.unwrap();
    let guard = mutex.acquire_timeout(Duration::from_secs(5)).await.unwrap().expect("owner can acquire again");
    guard.release().await.unwrap();
}

#[tokio::test]
async fn a_release_dropped_after_its_first_poll_still_deletes_the_node() {
    let path = unique_path("cancel-release");
    let client = connect().await;
    let mutex = InterProcessMutex::new(&client, &path).unwrap();
    let other = InterProcessMutex::new(&connect().await, &path).unwrap();
    for _ in 0..3 {
        let guard = mutex.acquire().await.unwrap();
        // One poll sends the delete; the reply is never awaited here.
        let mut release = Box::pin(guard.release());
        let mut context = Context::from_waker(Waker::noop());
        assert!(release.as_mut().poll(&mut context).is_pending(), "a delete takes a round trip");
        drop(release);
        assert!(!mutex.is_acquired_in_this_process(), "released as far as this process knows");
        wait_for_children(&client, &path, 0).await;
        // And the lock is free for everyone.
        other.try_acquire().await.unwrap().expect("free after the dropped release").release().await.unwrap();
    }
}

#[tokio::test]
async fn a_release_dropped_while_partitioned_is_seen_through_after_the_partition() {
    let path = unique_path("release-partitioned");
    let observer = connect().await;
    let proxy = Proxy::start(server().address()).unwrap();
    // Its 20 s session outlasts the wait below: a node left behind would still be there.
    let client = connect_to(&proxy.connect_string()).await;
    let guard = InterProcessMutex::new(&client, &path).unwrap().acquire().await.unwrap();
    proxy.blackhole();
    // The delete goes into the partition; then the caller gives up on the release.
    let mut release = Box::pin(guard.release());
    let mut context = Context::from_waker(Waker::noop());
    assert!(release.as_mut().poll(&mut context).is_pending());
    drop(release);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(children(&observer, &path).await.len(), 1, "the delete never reached the server");
    // Healed well within the session timeout: the lost delete is sent again, in the background.
    proxy.heal();
    wait_for_children(&observer, &path, 0).await;
}

/// After a create whose reply was lost, the client may reconnect to a server that has not
/// applied the create yet; a listing there would miss our node, a second create would follow,
/// and we would wait behind our own first node until the session ends. So the lock path is
/// synced before our node is looked for (checked on the wire: a sync precedes the listing),
/// and the acquire ends with exactly one node.
#[tokio::test]
async fn after_a_lost_create_reply_the_lock_path_is_synced_before_our_node_is_looked_for() {
    const CREATE2: i32 = 15;
    const SYNC: i32 = 9;
    const GET_CHILDREN: i32 = 8;
    let path = unique_path("lost-create");
    let observer = connect().await;
    let proxy = Proxy::start(server().address()).unwrap();
    let client = connect_to(&proxy.connect_string()).await;
    let mutex = InterProcessMutex::new(&client, &path).unwrap();
    mutex.acquire().await.unwrap().release().await.unwrap(); // parents exist: one create below
    proxy.drop_replies();
    let acquire = tokio::spawn(async move { mutex.acquire().await.map(|guard| (guard, mutex)) });
    wait_for_children(&observer, &path, 1).await; // the create ran; its reply is lost
    let sent_before_heal = proxy.requests_sent().len();
    proxy.heal(); // the connection closes; the client reconnects and looks for its node
    let (guard, _mutex) = tokio::time::timeout(Duration::from_secs(20), acquire).await.unwrap().unwrap().unwrap();
    assert_eq!(children(&observer, &path).await.len(), 1, "exactly our one node");
    let sent = proxy.requests_sent();
    let after_heal = &sent[sent_before_heal..];
    let sync = after_heal.iter().position(|&opcode| opcode == SYNC);
    let listing = after_heal.iter().position(|&opcode| opcode == GET_CHILDREN);
    assert!(matches!((sync, listing), (Some(sync), Some(listing)) if sync < listing), "{after_heal:?}");
    assert!(!after_heal.contains(&CREATE2), "the create was sent again: {sent:?}");
    guard.release().await.unwrap();
}
