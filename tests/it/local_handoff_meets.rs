//! Local handoff where it meets the other features: a downgrade, a deletion that comes before
//! any task waits (issue 43's sequence: another process holds meanwhile), a deletion while the
//! connection is down (on a client and on a `Session`), a revocation, a waiter cancelled during
//! the pass's check. Each was sound alone; each passed a hold on that nobody may have (a writer
//! beside a reader, a hold on a deleted node, a node asked back).

use crate::common;

use std::future::Future;
use std::task::Poll;
use std::time::Duration;

use zklock::hold::Hold;
use zklock::{InterProcessMutex, InterProcessReadWriteLock, LocalHandoff, LockGuard};
use zookeeper_client::Client;

use common::{children, connect, connect_through, eventually, server, unique_path, watchers_under};
use zklock_testcontainers::Proxy;

const BOUND: LocalHandoff = LocalHandoff::new(8, Duration::from_secs(60));

/// Polls `future` once, leaving it pending (it joins the line).
async fn poll_once<F: Future + Unpin>(future: &mut F) {
    std::future::poll_fn(|cx| {
        assert!(std::pin::Pin::new(&mut *future).poll(cx).is_pending(), "resolved at once");
        Poll::Ready(())
    })
    .await;
}

async fn exists(client: &Client, node: &str) -> bool {
    client.check_stat(node).await.unwrap().is_some()
}

/// A writer that downgrades (takes the read lock, then lets the write lock go) keeps reading:
/// the write node must not pass to the next writer of ours, who would write beside the reader.
/// Without handoff the next writer's node queues behind the read node; with it, the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_downgraded_write_node_is_not_passed_to_the_next_writer() {
    let (client, path) = (connect().await, unique_path("handoff-downgrade"));
    let lock = InterProcessReadWriteLock::builder(&client, &path).local_handoff(BOUND).build().unwrap();
    let writing = lock.write_lock().acquire().await.unwrap();
    let write_node = writing.node_path().to_owned();
    let next_writer = tokio::spawn({
        let lock = lock.clone();
        async move { lock.write_lock().acquire().await.unwrap() }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(!next_writer.is_finished());
    let reading = lock.read_lock().acquire().await.unwrap();
    writing.release().await.unwrap();

    // The next writer either holds (passed the write node) or queues a node of its own.
    let write_name = write_node.rsplit('/').next().unwrap().to_owned();
    eventually("the next writer held or queued", || async {
        next_writer.is_finished()
            || children(&client, &path).await.iter().any(|child| child.contains("__WRIT__") && *child != write_name)
    })
    .await;
    assert!(!next_writer.is_finished(), "a writer of ours holds {write_node} beside our reader");
    assert!(reading.is_held());
    assert!(!exists(&client, &write_node).await, "the downgraded write node was not deleted");
    let read_token = reading.fencing_token();
    reading.release().await.unwrap();
    let next_writer =
        tokio::time::timeout(Duration::from_secs(10), next_writer).await.expect("the writer never held").unwrap();
    assert_ne!(next_writer.node_path(), write_node);
    assert!(next_writer.fencing_token() >> 8 > read_token, "the writer's node is not newer than the reader's");
    next_writer.release().await.unwrap();
    assert!(children(&client, &path).await.is_empty(), "nodes left behind");
}

/// The node is deleted while nobody of ours waits, so it is not watched yet (a hold watches its
/// node after a second, or once a task waits). A task then joins the line, and the holder lets
/// go at once: the pass may not run ahead of the watch the waiter's arrival sent, whose reply
/// says the node is gone.
#[tokio::test]
async fn a_node_deleted_before_anyone_waited_is_not_passed_on() {
    let (client, path) = (connect().await, unique_path("handoff-deleted-before"));
    let mutex = InterProcessMutex::builder(&client, &path).local_handoff(BOUND).reentrant(false).build().unwrap();
    let holder = mutex.acquire().await.unwrap();
    let node = holder.node_path().to_owned();
    connect().await.delete(&node, None).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(holder.is_held(), "nothing watches the node yet: the deletion is not known");

    let mut waiter = Box::pin(mutex.acquire());
    poll_once(&mut waiter).await;
    drop(holder);
    let waiter = tokio::time::timeout(Duration::from_secs(10), waiter).await.expect("the waiter never held").unwrap();
    assert_ne!(waiter.node_path(), node, "the hold was passed on on a node deleted 200 ms before");
    assert!(exists(&client, waiter.node_path()).await);
    waiter.release().await.unwrap();
    assert!(children(&client, &path).await.is_empty(), "nodes left behind");
}

/// A holder asked to give the lock back (Curator's `Revoker`) lets go: its node must go with
/// it, so that the participant that asked holds next, not another task of ours.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_node_is_not_passed_on() {
    let (client, path) = (connect().await, unique_path("handoff-revoked"));
    let mutex = InterProcessMutex::builder(&client, &path).local_handoff(BOUND).build().unwrap();
    let holder = mutex.acquire().await.unwrap();
    let node = holder.node_path().to_owned();
    let local = tokio::spawn({
        let mutex = mutex.clone();
        async move { mutex.acquire().await.unwrap() }
    });
    let asker_client = connect().await;
    let asker = InterProcessMutex::new(&asker_client, &path).unwrap();
    let asked = tokio::spawn(async move { asker.acquire().await.unwrap() });
    eventually("the asker queued", || async { children(&client, &path).await.len() == 2 }).await;

    zklock::revoke(&asker_client, &node).await.unwrap();
    tokio::time::timeout(Duration::from_secs(10), holder.revocation_requested()).await.expect("never asked");
    holder.release().await.unwrap();
    let asked = tokio::time::timeout(Duration::from_secs(10), asked).await.expect("the asker never held").unwrap();
    assert!(!local.is_finished(), "a task of ours holds beside the participant that asked for the lock");
    asked.release().await.unwrap();
    let local = tokio::time::timeout(Duration::from_secs(10), local).await.expect("the local task never held").unwrap();
    assert_ne!(local.node_path(), node, "the revoked node was passed on");
    local.release().await.unwrap();
    assert!(children(&client, &path).await.is_empty(), "nodes left behind");
}

/// An operator deletes `node`, and another process then takes the lock: it holds, by right.
async fn deleted_and_taken_by_another(path: &str, node: &str) -> (Client, LockGuard) {
    let other_client = connect().await;
    other_client.delete(node, None).await.unwrap();
    let other = InterProcessMutex::new(&other_client, path).unwrap();
    let guard = tokio::time::timeout(Duration::from_secs(10), other.acquire())
        .await
        .expect("the other process never held")
        .unwrap();
    (other_client, guard)
}

/// The other process lets go: the task of ours holds next, on a node of its own that exists,
/// and leaves nothing behind.
async fn then_ours_holds_a_new_node(other: (Client, LockGuard), ours: impl Future<Output = LockGuard>, node: &str) {
    let (observer, other_guard) = other;
    assert!(other_guard.is_held());
    let path = node.rsplit_once('/').unwrap().0.to_owned();
    other_guard.release().await.unwrap();
    let ours = tokio::time::timeout(Duration::from_secs(20), ours).await.expect("the task of ours never held");
    assert_ne!(ours.node_path(), node);
    assert!(exists(&observer, ours.node_path()).await);
    ours.release().await.unwrap();
    eventually("no nodes left behind", || async { children(&observer, &path).await.is_empty() }).await;
}

/// Issue 43, step by step: the node is deleted, another process then holds the lock (its
/// right), and only then does a task of ours join the line, its arrival's node watch spawned but
/// not sent, before the holder lets go. The pass must not hand over the deleted node: the other
/// process would hold beside the task of ours.
async fn a_node_deleted_before_the_line_formed_is_not_passed_beside_another_holder() {
    let (client, path) = (connect().await, unique_path("handoff-deleted-other-holds"));
    let mutex = InterProcessMutex::builder(&client, &path).local_handoff(BOUND).reentrant(false).build().unwrap();
    let holder = mutex.acquire().await.unwrap();
    let node = holder.node_path().to_owned();
    let other = deleted_and_taken_by_another(&path, &node).await;
    tokio::time::sleep(Duration::from_millis(200)).await;

    let mut waiter = Box::pin(mutex.acquire());
    poll_once(&mut waiter).await;
    drop(holder);
    let held_beside = tokio::time::timeout(Duration::from_millis(500), &mut waiter).await;
    assert!(held_beside.is_err(), "a task of ours holds on {node}, deleted 200 ms before, beside another process");
    then_ours_holds_a_new_node(other, async { waiter.await.unwrap() }, &node).await;
}

#[tokio::test]
async fn a_node_deleted_before_the_line_formed_is_not_passed_beside_another_holder_current_thread() {
    a_node_deleted_before_the_line_formed_is_not_passed_beside_another_holder().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_deleted_before_the_line_formed_is_not_passed_beside_another_holder_multi_thread() {
    a_node_deleted_before_the_line_formed_is_not_passed_beside_another_holder().await;
}

/// The same invariant across a disconnection: the node's watch was answered, then the
/// connection dropped, an operator deleted the node and another process took the lock. The
/// deletion's notification cannot come before the reconnection, so the watch's old answer
/// proves nothing: the pass must check (here the check cannot be made, and the waiter queues).
/// `mutex`, on `path`, is on a session through `proxy`.
async fn a_node_deleted_while_disconnected_is_not_passed_beside_another_holder(
    proxy: Proxy,
    mutex: InterProcessMutex,
    path: &str,
) {
    let holder = mutex.acquire().await.unwrap();
    let node = holder.node_path().to_owned();
    let mut waiter = Box::pin(mutex.acquire());
    poll_once(&mut waiter).await;
    eventually("the waiter's arrival set the node's watch", || async { watchers_under(path).contains_key(&node) })
        .await;
    // The watch's answer reaches the process (a round trip after the server set it).
    tokio::time::sleep(Duration::from_millis(100)).await;

    proxy.cut();
    let other = deleted_and_taken_by_another(path, &node).await;
    drop(holder);
    let held_beside = tokio::time::timeout(Duration::from_millis(500), &mut waiter).await;
    assert!(held_beside.is_err(), "a task of ours holds on {node}, deleted while it was disconnected");
    proxy.heal();
    then_ours_holds_a_new_node(other, async { waiter.await.unwrap() }, &node).await;
}

/// A non-reentrant mutex with local handoff on a client through a new proxy.
async fn proxied_handoff_mutex(name: &str) -> (Proxy, InterProcessMutex, String) {
    let path = unique_path(name);
    let proxy = Proxy::start(server().address()).unwrap();
    let client = connect_through(&proxy, Duration::from_secs(20)).await;
    let mutex = InterProcessMutex::builder(&client, &path).local_handoff(BOUND).reentrant(false).build().unwrap();
    (proxy, mutex, path)
}

#[tokio::test]
async fn a_node_deleted_while_disconnected_is_not_passed_beside_another_holder_current_thread() {
    let (proxy, mutex, path) = proxied_handoff_mutex("handoff-deleted-disconnected").await;
    a_node_deleted_while_disconnected_is_not_passed_beside_another_holder(proxy, mutex, &path).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_deleted_while_disconnected_is_not_passed_beside_another_holder_multi_thread() {
    let (proxy, mutex, path) = proxied_handoff_mutex("handoff-deleted-disconnected").await;
    a_node_deleted_while_disconnected_is_not_passed_beside_another_holder(proxy, mutex, &path).await;
}

/// The same on a `Session` (a disconnection shorter than an expiry keeps its client).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_deleted_while_a_session_was_disconnected_is_not_passed_beside_another_holder() {
    let path = unique_path("handoff-deleted-disconnected-session");
    let proxy = Proxy::start(server().address()).unwrap();
    let session = common::session::session_through(&proxy).await;
    let mutex = InterProcessMutex::builder(&session, &path).local_handoff(BOUND).reentrant(false).build().unwrap();
    a_node_deleted_while_disconnected_is_not_passed_beside_another_holder(proxy, mutex, &path).await;
}

/// Where the check meets a cancelled waiter and reentrancy (tasks are owners): the first waiter
/// is given the deleted node while disconnected and is cancelled, at whatever point of its check;
/// what it was given passes to the second, which checks again and never holds beside.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_cancelled_during_the_check_leaves_the_next_one_checking() {
    let path = unique_path("handoff-cancelled-check");
    let proxy = Proxy::start(server().address()).unwrap();
    let client = connect_through(&proxy, Duration::from_secs(20)).await;
    let mutex = InterProcessMutex::builder(&client, &path).local_handoff(BOUND).build().unwrap();
    let holder = mutex.acquire().await.unwrap();
    let node = holder.node_path().to_owned();
    let waiter = || {
        let mutex = mutex.clone();
        tokio::spawn(async move { mutex.acquire().await.unwrap() })
    };
    let (first, second) = (waiter(), waiter());
    eventually("a waiter's arrival set the node's watch", || async { watchers_under(&path).contains_key(&node) }).await;
    tokio::time::sleep(Duration::from_millis(100)).await;

    proxy.cut();
    let other = deleted_and_taken_by_another(&path, &node).await;
    drop(holder);
    first.abort();
    assert!(first.await.unwrap_err().is_cancelled(), "the first waiter held on {node}, deleted while disconnected");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!second.is_finished(), "the second waiter holds on {node} beside another process");
    proxy.heal();
    then_ours_holds_a_new_node(other, async { second.await.unwrap() }, &node).await;
}
