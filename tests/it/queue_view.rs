//! A waiter's view of its queue (`zklock::queue::watch_queue`): where it stands and who holds, for
//! every lock recipe, what it costs, and that an acquire nobody watches sends nothing for it.

use crate::common;

use std::time::{Duration, SystemTime};

use common::{connect, connect_through, server, unique_path};
use tokio::sync::watch;
use zklock::hold::Hold;
use zklock::queue::{watch_queue, QueuePosition};
use zklock::{
    InterProcessMultiLock, InterProcessMutex, InterProcessReadWriteLock, InterProcessSemaphoreMutex,
    InterProcessSemaphoreV2, NodeSchema,
};
use zklock_testcontainers::{Proxy, ThrottledOperation};
use zookeeper_client::Client;

/// Generous bound for a view to be told: a hang would exceed it.
const PROMPTLY: Duration = Duration::from_secs(10);

/// ZooKeeper's opcode for `getData`: the view's read of the queue's head, and the acquire's
/// watch on its predecessor.
const GET_DATA: i32 = 4;

/// Waits until `seen` tells a position that `wanted` accepts, and returns it.
async fn told(
    seen: &mut watch::Receiver<Option<QueuePosition>>,
    wanted: impl Fn(&QueuePosition) -> bool,
) -> QueuePosition {
    let waited = tokio::time::timeout(PROMPTLY, seen.wait_for(|position| position.as_ref().is_some_and(&wanted)))
        .await
        .map(|position| position.expect("the sender lives").clone());
    match waited {
        Ok(position) => position.unwrap(),
        Err(_) => panic!("the position was never told; the last told: {:?}", *seen.borrow()),
    }
}

/// `waiter` (a future of one acquire, on `waiter_client`) waits behind what the holder holds, on
/// `holder_client`'s session: its view names the holder's node and session, one node ahead.
async fn shows_the_holder<F>(what: &str, holder_client: &Client, waiter: F)
where
    F: std::future::Future + Send + 'static,
    F::Output: Send + 'static,
{
    let (position, mut seen) = watch::channel(None);
    let waiting = tokio::spawn(watch_queue(position, waiter));
    let view = told(&mut seen, |position| position.holder.is_some()).await;
    let holder = view.holder.as_ref().unwrap();
    assert_eq!(holder.session_id, holder_client.session_id().0, "{what}: the holder's session");
    assert_eq!(view.ahead, Some(1), "{what}: one node ahead, the holder's: {view:?}");
    assert!(holder.created <= SystemTime::now() + Duration::from_secs(5), "{what}: held since {:?}", holder.created);
    assert_ne!(view.node_path, holder.node_path, "{what}");
    waiting.abort();
}

#[tokio::test]
async fn every_lock_recipe_tells_its_waiter_who_holds() {
    let (holder, waiter) = (connect().await, connect().await);

    let path = unique_path("view-mutex");
    let _held = InterProcessMutex::new(&holder, &path).unwrap().acquire().await.unwrap();
    let mutex = InterProcessMutex::new(&waiter, &path).unwrap();
    shows_the_holder("mutex", &holder, async move { mutex.acquire().await }).await;

    let path = unique_path("view-rwlock");
    let _read = InterProcessReadWriteLock::new(&holder, &path).unwrap().read_lock().acquire().await.unwrap();
    let rwlock = InterProcessReadWriteLock::new(&waiter, &path).unwrap();
    shows_the_holder("write behind a read", &holder, async move { rwlock.write_lock().acquire().await }).await;

    let path = unique_path("view-kazoo-rwlock");
    let kazoo = |client| InterProcessReadWriteLock::builder(client, &path).node_schema(NodeSchema::Kazoo).build();
    let _write = kazoo(&holder).unwrap().write_lock().acquire().await.unwrap();
    let rwlock = kazoo(&waiter).unwrap();
    shows_the_holder("kazoo read behind a write", &holder, async move { rwlock.read_lock().acquire().await }).await;

    let path = unique_path("view-semaphore");
    let _lease = InterProcessSemaphoreV2::new(&holder, &path, 1).unwrap().acquire().await.unwrap();
    let semaphore = InterProcessSemaphoreV2::new(&waiter, &path, 1).unwrap();
    shows_the_holder("semaphore", &holder, async move { semaphore.acquire().await }).await;

    let path = unique_path("view-semaphore-mutex");
    let _taken = InterProcessSemaphoreMutex::new(&holder, &path).unwrap().acquire().await.unwrap();
    let semaphore_mutex = InterProcessSemaphoreMutex::new(&waiter, &path).unwrap();
    shows_the_holder("semaphore mutex", &holder, async move { semaphore_mutex.acquire().await }).await;

    let (free, taken) = (unique_path("view-multi-free"), unique_path("view-multi-taken"));
    let _second = InterProcessMutex::new(&holder, &taken).unwrap().acquire().await.unwrap();
    let locks = vec![InterProcessMutex::new(&waiter, &free).unwrap(), InterProcessMutex::new(&waiter, &taken).unwrap()];
    let multi = InterProcessMultiLock::new(locks).unwrap();
    shows_the_holder("multi-lock", &holder, async move { multi.acquire().await }).await;
}

#[tokio::test]
async fn the_view_follows_the_queue_as_it_moves() {
    let path = unique_path("view-moves");
    let (first, second, third) = (connect().await, connect().await, connect().await);
    let held = InterProcessMutex::new(&first, &path).unwrap().acquire().await.unwrap();
    let (second_position, mut second_seen) = watch::channel(None);
    let second_mutex = InterProcessMutex::new(&second, &path).unwrap();
    let second_waits = tokio::spawn(watch_queue(second_position, async move { second_mutex.acquire().await }));
    let second_view = told(&mut second_seen, |position| position.ahead == Some(1)).await;
    let (third_position, mut third_seen) = watch::channel(None);
    let third_mutex = InterProcessMutex::new(&third, &path).unwrap();
    let third_waits = tokio::spawn(watch_queue(third_position, async move { third_mutex.acquire().await }));
    let behind = told(&mut third_seen, |position| position.ahead == Some(2)).await;
    assert_eq!(behind.holder.as_ref().unwrap().node_path, held.node_path());

    // The holder lets go: the second holds, and the third sees it one ahead, holding.
    held.release().await.unwrap();
    let second_guard = second_waits.await.unwrap().unwrap();
    let moved = told(&mut third_seen, |position| position.ahead == Some(1)).await;
    let holder = moved.holder.unwrap();
    assert_eq!(holder.node_path, second_view.node_path, "the second's node heads the queue now");
    assert_eq!(holder.session_id, second.session_id().0);
    assert_eq!(moved.waiting_since, behind.waiting_since, "one wait, one start");
    second_guard.release().await.unwrap();
    third_waits.await.unwrap().unwrap().release().await.unwrap();
}

/// What the view costs, on the wire: a read of the queue's head (its data and stat) when a node
/// comes to head it while watched (not again when the queue changes behind an unchanged head: a
/// participant that queues behind and leaves meanwhile), nothing for an acquire outside
/// `watch_queue`. The acquire's own reads (the watch on its predecessor) are the same in both.
#[tokio::test]
async fn a_watched_wait_reads_the_head_and_an_unwatched_one_sends_nothing_more() {
    let path = unique_path("view-cost");
    let holder = connect().await;
    let held = InterProcessMutex::new(&holder, &path).unwrap().acquire().await.unwrap();
    let mut reads = Vec::new();
    for watched in [false, true] {
        let proxy = Proxy::start(server().address()).unwrap();
        let waiter = connect_through(&proxy, Duration::from_secs(10)).await;
        let mutex = InterProcessMutex::new(&waiter, &path).unwrap();
        let before = proxy.requests_sent().len();
        let patience = Duration::from_millis(1500);
        let waits = async {
            match watched {
                true => watch_queue(watch::channel(None).0, mutex.acquire_timeout(patience)).await,
                false => mutex.acquire_timeout(patience).await,
            }
        };
        let behind = async {
            tokio::time::sleep(Duration::from_millis(300)).await;
            InterProcessMutex::new(&holder, &path).unwrap().acquire_timeout(Duration::from_millis(300)).await
        };
        let (timed_out, behind) = tokio::join!(waits, behind);
        assert!(timed_out.unwrap().is_none());
        assert!(behind.unwrap().is_none(), "the one behind timed out too");
        let sent = proxy.requests_sent()[before..].to_vec();
        reads.push((sent.iter().filter(|opcode| **opcode == GET_DATA).count(), sent));
    }
    let [(unwatched, _), (watched, sent)] = &reads[..] else { unreachable!("two rounds") };
    assert!(*unwatched >= 1, "the acquire watches its predecessor");
    assert_eq!(*watched, unwatched + 1, "one read more for the view: {sent:?}");
    held.release().await.unwrap();
}

/// Issue 38 item 5: one refused listing froze the view for good. The holder, then a waiter,
/// then a watched waiter through a proxy (two ahead); the server refuses the view's next listing
/// (`Throttled`, the path a lost connection takes too) and the holder lets go: the view is
/// listed again and tells the truth, one ahead, while the acquire still waits.
#[tokio::test]
async fn a_refused_listing_does_not_freeze_the_view() {
    let path = unique_path("view-throttled");
    let (first, second) = (connect().await, connect().await);
    let held = InterProcessMutex::new(&first, &path).unwrap().acquire().await.unwrap();
    let second_mutex = InterProcessMutex::new(&second, &path).unwrap();
    let second_waits = tokio::spawn(async move { second_mutex.acquire().await });
    common::wait_for_children(&first, &path, 2).await;
    let proxy = Proxy::start(server().address()).unwrap();
    let third = connect_through(&proxy, Duration::from_secs(10)).await;
    let (position, mut seen) = watch::channel(None);
    let third_mutex = InterProcessMutex::new(&third, &path).unwrap();
    let third_waits = tokio::spawn(watch_queue(position, async move { third_mutex.acquire().await }));
    told(&mut seen, |position| position.ahead == Some(2) && position.holder.is_some()).await;

    // The third watches the second's node, so the next listing on its session is the view's.
    proxy.throttle_next(ThrottledOperation::GetChildren);
    held.release().await.unwrap();
    let moved = told(&mut seen, |position| position.ahead == Some(1)).await;
    assert_eq!(proxy.throttled_count(), 1, "the view's listing was not the one refused");
    assert_eq!(moved.holder.as_ref().map(|holder| holder.session_id), Some(second.session_id().0));
    assert!(!third_waits.is_finished(), "the third holds beside the second");
    second_waits.await.unwrap().unwrap().release().await.unwrap();
    let third_guard = tokio::time::timeout(PROMPTLY, third_waits).await.expect("the third never held").unwrap();
    third_guard.unwrap().release().await.unwrap();
}
