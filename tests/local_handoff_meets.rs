//! Local handoff where it meets the other features: a downgrade, a deletion that comes before
//! any task waits, a revocation. Each was sound alone; each passed a hold on that nobody may
//! have (a writer beside a reader, a hold on a deleted node, a node asked back).

mod common;

use std::future::Future;
use std::task::Poll;
use std::time::Duration;

use zklock::{InterProcessMutex, LocalHandoff};
use zookeeper_client::Client;

use common::{children, connect, eventually, unique_path};

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
    let lock = InterProcessMutex::builder(&client, &path).local_handoff(BOUND).build_read_write().unwrap();
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
