//! Knowing when the lock is gone: node deleted, long disconnection, session end; and what a
//! short disconnection must not do.

mod common;

use std::time::Duration;

use common::{connect, connect_through, connect_to, eventually, server, unique_path, wait_for_children};
use zklock::{Error, InterProcessMutex, LossPolicy, LossReason};
use zklock_testcontainers::Proxy;
use zookeeper_client::{Client, SessionState};

const PROMPTLY: Duration = Duration::from_secs(10);

async fn wait_for_state(client: &Client, wanted: SessionState) {
    eventually(&format!("the client is {wanted:?}"), || async { client.state() == wanted }).await;
}

#[tokio::test]
async fn lost_resolves_when_someone_deletes_the_node_and_the_hold_refuses_reentry() {
    let path = unique_path("node-deleted");
    let client = connect().await;
    let mutex = InterProcessMutex::new(&client, &path).unwrap();
    let guard = mutex.acquire().await.unwrap();
    let inner = mutex.acquire().await.unwrap();
    assert!(guard.is_held());
    // Start listening (this sets the node watch), then an operator deletes the node.
    let listening = tokio::time::timeout(Duration::from_millis(100), guard.lost()).await;
    assert!(listening.is_err(), "lost() resolved while held");
    let operator = connect().await;
    operator.delete(guard.node_path(), None).await.unwrap();

    let reason = tokio::time::timeout(PROMPTLY, guard.lost()).await.expect("loss not signalled");
    assert_eq!(reason, LossReason::NodeDeleted);
    assert!(!guard.is_held() && !inner.is_held());
    assert!(matches!(mutex.acquire().await, Err(Error::LockLost(LossReason::NodeDeleted))));
    assert!(matches!(inner.release().await, Err(Error::LockLost(LossReason::NodeDeleted))));
    assert!(matches!(guard.release().await, Err(Error::LockLost(LossReason::NodeDeleted))));
    // Once the lost hold's guards are gone, the owner can take the lock again.
    let again = mutex.try_acquire().await.unwrap().expect("free again");
    again.release().await.unwrap();
}

#[tokio::test]
async fn a_deleted_node_is_noticed_without_asking_once_held_a_while() {
    let path = unique_path("node-deleted-lazily");
    let client = connect().await;
    let guard = InterProcessMutex::new(&client, &path).unwrap().acquire().await.unwrap();
    tokio::time::sleep(Duration::from_millis(1_500)).await; // past the delay of the node watch
    connect().await.delete(guard.node_path(), None).await.unwrap();
    eventually("the guard sees its node deleted", || async { !guard.is_held() }).await;
}

#[tokio::test]
async fn lost_is_free_until_asked_and_its_watch_fires_on_our_own_delete() {
    let path = unique_path("watch-cost");
    let client = connect().await;
    let guard = InterProcessMutex::new(&client, &path).unwrap().acquire().await.unwrap();
    let node = guard.node_path().to_owned();
    assert!(node_watchers(&node).is_empty(), "no watch before lost() or the delay");
    let _ = tokio::time::timeout(Duration::from_millis(100), guard.lost()).await;
    eventually("lost() set one watch on our node", || async { node_watchers(&node).len() == 1 }).await;
    guard.release().await.unwrap();
    // The watch fired on our delete: nothing to remove, nothing left on the server.
    eventually("no watch left", || async { node_watchers(&node).is_empty() }).await;
}

fn node_watchers(node: &str) -> Vec<String> {
    server().watchers().remove(node).unwrap_or_default()
}

#[tokio::test]
async fn a_short_disconnection_keeps_the_lock() {
    let path = unique_path("blip-holder");
    let proxy = Proxy::start(server().address()).unwrap();
    let client = connect_through(&proxy, Duration::from_secs(9)).await;
    let guard = InterProcessMutex::new(&client, &path).unwrap().acquire().await.unwrap();
    proxy.cut();
    wait_for_state(&client, SessionState::Disconnected).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    proxy.heal();
    wait_for_state(&client, SessionState::SyncConnected).await;
    assert!(guard.is_held(), "a short disconnection lost the lock");
    guard.release().await.unwrap();
}

#[tokio::test]
async fn a_long_disconnection_is_signalled_before_the_server_can_expire_the_session() {
    let path = unique_path("partitioned-holder");
    let proxy = Proxy::start(server().address()).unwrap();
    let session_timeout = Duration::from_secs(6);
    let client = connect_through(&proxy, session_timeout).await;
    let guard = InterProcessMutex::new(&client, &path).unwrap().acquire().await.unwrap();
    let observer = connect().await;

    proxy.blackhole();
    let reason = tokio::time::timeout(session_timeout * 2, guard.lost()).await.expect("loss not signalled");
    assert!(matches!(reason, LossReason::Disconnected { .. }), "{reason:?}");
    // The holder gives up while the server still has its node: nobody else can hold yet.
    assert!(observer.check_stat(guard.node_path()).await.unwrap().is_some(), "signalled only after expiry");
    wait_for_children(&observer, &path, 0).await; // the server expires the session
    proxy.heal();
    let released = tokio::time::timeout(PROMPTLY, guard.release()).await.expect("release hung");
    assert!(matches!(released, Err(Error::LockLost(LossReason::Disconnected { .. }))), "{released:?}");
}

#[tokio::test]
async fn the_strict_policy_loses_the_lock_on_any_disconnection() {
    let path = unique_path("strict");
    let proxy = Proxy::start(server().address()).unwrap();
    let client = connect_through(&proxy, Duration::from_secs(20)).await;
    let mutex = InterProcessMutex::builder(&client, &path).loss_policy(LossPolicy::AnyDisconnection).build().unwrap();
    let guard = mutex.acquire().await.unwrap();
    proxy.cut();
    let reason = tokio::time::timeout(PROMPTLY, guard.lost()).await.expect("loss not signalled");
    assert_eq!(reason, LossReason::Disconnected { after: Duration::ZERO });
    proxy.heal();
    wait_for_state(&client, SessionState::SyncConnected).await;
    assert!(!guard.is_held(), "a lost hold stays lost");
    assert!(matches!(guard.release().await, Err(Error::LockLost(_))));
    // The session survived: the background delete frees the lock.
    wait_for_children(&client, &path, 0).await;
}

#[tokio::test]
async fn a_lost_create_reply_finds_our_node_instead_of_orphaning_it() {
    let path = unique_path("protection");
    let proxy = Proxy::start(server().address()).unwrap();
    let client = connect_through(&proxy, Duration::from_secs(10)).await;
    let observer = connect().await;
    let mutex = InterProcessMutex::new(&client, &path).unwrap();
    mutex.acquire().await.unwrap().release().await.unwrap(); // parents exist from here on

    proxy.drop_replies();
    let acquiring = tokio::spawn({
        let mutex = mutex.clone();
        async move { mutex.acquire().await }
    });
    // The create reached the server; its reply is lost; the connection then drops.
    wait_for_children(&observer, &path, 1).await;
    proxy.cut();
    proxy.heal();
    let guard = tokio::time::timeout(PROMPTLY, acquiring).await.expect("acquire hung").unwrap().unwrap();
    let children = common::children(&observer, &path).await;
    assert_eq!(children.len(), 1, "a second node was created: {children:?}");
    assert_eq!(guard.node_path(), format!("{path}/{}", children[0]));
    let (_, stat) = observer.get_data(guard.node_path()).await.unwrap();
    assert_eq!(stat.ephemeral_owner, client.session_id().0);
    assert_eq!(guard.fencing_token(), stat.czxid);
    guard.release().await.unwrap();
    assert!(common::children(&observer, &path).await.is_empty());
}

#[tokio::test]
async fn a_waiter_survives_its_predecessor_or_its_own_node_being_deleted() {
    let path = unique_path("operator");
    let holder_client = connect().await;
    let holder = InterProcessMutex::new(&holder_client, &path).unwrap().acquire().await.unwrap();
    let waiter_client = connect().await;
    let waiter = InterProcessMutex::new(&waiter_client, &path).unwrap();
    let third_client = connect().await;
    let third = InterProcessMutex::new(&third_client, &path).unwrap();
    let waiting = tokio::spawn(async move { waiter.acquire().await.map(|guard| guard.node_path().to_owned()) });
    wait_for_children(&holder_client, &path, 2).await;
    let waiting_third = tokio::spawn(async move { third.acquire().await.map(drop) });
    wait_for_children(&holder_client, &path, 3).await;
    let queue = InterProcessMutex::new(&holder_client, &path).unwrap().participants().await.unwrap();
    let operator = connect().await;

    // The third's node is deleted. It watches only its predecessor, so it notices when that one
    // goes, and then queues again with a new node.
    operator.delete(&queue[2], None).await.unwrap();
    wait_for_children(&holder_client, &path, 2).await;
    // The holder's node is deleted: the waiter behind it gets the lock.
    operator.delete(holder.node_path(), None).await.unwrap();
    let acquired = tokio::time::timeout(PROMPTLY, waiting).await.expect("waiter stuck").unwrap().unwrap();
    assert_eq!(acquired, queue[1]);
    tokio::time::timeout(PROMPTLY, waiting_third).await.expect("third stuck").unwrap().unwrap();
    drop(holder);
    let _ = connect_to;
}

#[tokio::test]
async fn a_timed_acquire_returns_in_time_while_partitioned() {
    let path = unique_path("partitioned-acquire");
    let proxy = Proxy::start(server().address()).unwrap();
    let client = connect_through(&proxy, Duration::from_secs(20)).await;
    let mutex = InterProcessMutex::new(&client, &path).unwrap();
    mutex.acquire().await.unwrap().release().await.unwrap();
    proxy.blackhole();
    let started = std::time::Instant::now();
    let outcome = mutex.acquire_timeout(Duration::from_millis(300)).await.unwrap();
    assert!(outcome.is_none());
    // The deadline plus the bounded cleanup; far below the 20 s session (generous for slow CI).
    assert!(started.elapsed() < Duration::from_secs(5), "returned after {:?}", started.elapsed());
    proxy.heal();
    // The cleanup finishes in the background once the client is back: no node stays.
    wait_for_children(&connect().await, &path, 0).await;
}

#[tokio::test]
async fn the_lock_path_deleted_during_contention_is_survived_and_signalled() {
    let path = unique_path("deleteall");
    let clients = [connect().await, connect().await, connect().await];
    let holder = InterProcessMutex::new(&clients[0], &path).unwrap().acquire().await.unwrap();
    let next = InterProcessMutex::new(&clients[1], &path).unwrap();
    let next_waiting = tokio::spawn(async move { next.acquire().await });
    wait_for_children(&clients[0], &path, 2).await;
    let last = InterProcessMutex::new(&clients[2], &path).unwrap();
    let last_waiting = tokio::spawn({
        let last = last.clone();
        async move { last.acquire().await }
    });
    wait_for_children(&clients[0], &path, 3).await;

    // An operator wipes the queue from the back, then the lock path. (Deleted from the front, a
    // waiter would hold for an instant on its own node, which still exists when its predecessor
    // goes, and then lose it: a hold that began on a real node.)
    let operator = connect().await;
    let queue = last.participants().await.unwrap();
    assert_eq!(queue.len(), 3);
    for node in queue.iter().rev() {
        operator.delete(node, None).await.unwrap();
    }
    let _ = operator.delete(&path, None).await;

    assert_eq!(tokio::time::timeout(PROMPTLY, holder.lost()).await.unwrap(), LossReason::NodeDeleted);
    // Both waiters find their nodes gone (neither holds on a deleted node) and queue again under
    // a recreated path: one holds, on a node that exists, and the other waits behind it.
    let (mut next_waiting, mut last_waiting) = (next_waiting, last_waiting);
    let (first, second) = tokio::time::timeout(PROMPTLY, async {
        tokio::select! {
            first = &mut next_waiting => (first, last_waiting),
            first = &mut last_waiting => (first, next_waiting),
        }
    })
    .await
    .expect("nobody holds after the path was recreated");
    let first = first.unwrap().unwrap();
    assert!(first.is_held());
    assert!(
        operator.check_stat(first.node_path()).await.unwrap().is_some(),
        "held on a deleted node {} (the queue: {:?})",
        first.node_path(),
        common::children(&operator, &path).await
    );
    assert!(first.fencing_token() > holder.fencing_token(), "the newer holder carries the higher token");
    assert!(!second.is_finished(), "two holders after the path was recreated");
    let first_token = first.fencing_token();
    first.release().await.unwrap();
    let second = tokio::time::timeout(PROMPTLY, second).await.unwrap().unwrap().unwrap();
    assert!(second.fencing_token() > first_token, "the next holder carries the higher token");
    second.release().await.unwrap();
    drop(holder);
    wait_for_children(&operator, &path, 0).await;
    assert!(last.try_acquire().await.unwrap().is_some(), "the lock works again");
}

/// The loss signal's tasks start with a session's first lock object, not in its first hold:
/// a handoff to a fresh session spawns nothing (the handoff benchmark's 200 fresh sessions each
/// paid two spawns and a wake-up there).
#[tokio::test(flavor = "current_thread")]
async fn a_sessions_first_hold_starts_no_task() {
    let path = unique_path("first-hold-tasks");
    let client = connect().await;
    let mutex = InterProcessMutex::new(&client, &path).unwrap();
    let metrics = tokio::runtime::Handle::current().metrics();
    let before = metrics.num_alive_tasks();
    let guard = mutex.acquire().await.unwrap();
    assert_eq!(metrics.num_alive_tasks(), before, "the first hold started a task");
    guard.release().await.unwrap();
}
