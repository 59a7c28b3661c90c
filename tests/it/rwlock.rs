//! InterProcessReadWriteLock: readers share, writers exclude, downgrade yes, upgrade no.

use crate::common;

use std::time::Duration;

use common::{children, connect, eventually, unique_path, wait_for_children};
use zklock::hold::Hold;
use zklock::{Error, InterProcessReadWriteLock, LossReason};

#[tokio::test]
async fn readers_share_and_a_writer_is_alone() {
    let path = unique_path("rw-share");
    let (a, b, c) = (connect().await, connect().await, connect().await);
    let (lock_a, lock_b, lock_c) = (
        InterProcessReadWriteLock::new(&a, &path).unwrap(),
        InterProcessReadWriteLock::new(&b, &path).unwrap(),
        InterProcessReadWriteLock::new(&c, &path).unwrap(),
    );
    let read_a = lock_a.read_lock().acquire().await.unwrap();
    let read_b = lock_b.read_lock().try_acquire().await.unwrap().expect("readers share");
    assert!(lock_c.write_lock().try_acquire().await.unwrap().is_none(), "a writer waits for readers");
    read_a.release().await.unwrap();
    read_b.release().await.unwrap();
    let write_c = lock_c.write_lock().try_acquire().await.unwrap().expect("free for a writer");
    assert!(lock_a.read_lock().try_acquire().await.unwrap().is_none(), "a writer excludes readers");
    assert!(lock_b.write_lock().try_acquire().await.unwrap().is_none(), "and writers");
    assert!(write_c.node_path().contains("-__WRIT__"), "{}", write_c.node_path());
    write_c.release().await.unwrap();
    assert!(children(&a, &path).await.is_empty());
}

#[tokio::test]
async fn a_waiting_writer_keeps_later_readers_out() {
    let path = unique_path("rw-fair");
    let (a, b, c) = (connect().await, connect().await, connect().await);
    let reader = InterProcessReadWriteLock::new(&a, &path).unwrap().read_lock().acquire().await.unwrap();
    let writer_lock = InterProcessReadWriteLock::new(&b, &path).unwrap();
    let writer = tokio::spawn(async move { writer_lock.write_lock().acquire().await.map(|g| g.fencing_token()) });
    wait_for_children(&a, &path, 2).await;
    let late_reader = InterProcessReadWriteLock::new(&c, &path).unwrap();
    assert!(late_reader.read_lock().acquire_timeout(Duration::from_millis(200)).await.unwrap().is_none());
    reader.release().await.unwrap();
    writer.await.unwrap().unwrap();
    let guard = late_reader.read_lock().acquire_timeout(Duration::from_secs(10)).await.unwrap();
    assert!(guard.is_some(), "readers go once the writer is done");
}

#[tokio::test]
async fn the_writer_may_downgrade_but_a_reader_may_not_upgrade() {
    let path = unique_path("rw-grade");
    let client = connect().await;
    let lock = InterProcessReadWriteLock::new(&client, &path).unwrap();
    let other_client = connect().await;
    let other = InterProcessReadWriteLock::new(&other_client, &path).unwrap();

    let write = lock.write_lock().acquire().await.unwrap();
    let nested_write = lock.write_lock().acquire().await.unwrap(); // each side is reentrant
    let read = tokio::time::timeout(Duration::from_secs(10), lock.read_lock().acquire()).await.unwrap().unwrap();
    assert!(other.read_lock().try_acquire().await.unwrap().is_none(), "still writing");
    nested_write.release().await.unwrap();
    write.release().await.unwrap();
    // Downgraded: we read, and so may others, but nobody writes.
    let other_read = other.read_lock().try_acquire().await.unwrap().expect("readers share after a downgrade");
    other_read.release().await.unwrap();
    assert!(other.write_lock().try_acquire().await.unwrap().is_none(), "nobody writes while we read");

    assert!(matches!(lock.write_lock().acquire().await, Err(Error::WouldDeadlock(_))));
    assert!(matches!(lock.write_lock().try_acquire().await, Err(Error::WouldDeadlock(_))));
    read.release().await.unwrap();
    let write = lock.write_lock().try_acquire().await.unwrap().expect("released readers may write");
    write.release().await.unwrap();
    assert!(children(&client, &path).await.is_empty());
}

#[tokio::test]
async fn participants_list_readers_and_writers_in_queue_order() {
    let path = unique_path("rw-participants");
    let (a, b) = (connect().await, connect().await);
    let lock = InterProcessReadWriteLock::new(&a, &path).unwrap();
    let read = lock.read_lock().acquire().await.unwrap();
    let writer = InterProcessReadWriteLock::new(&b, &path).unwrap();
    let waiting = tokio::spawn(async move { writer.write_lock().acquire().await.map(drop) });
    wait_for_children(&a, &path, 2).await;
    let queue = lock.write_lock().participants().await.unwrap();
    assert_eq!(queue.len(), 2);
    assert_eq!(queue[0], read.node_path());
    assert!(queue[1].contains("-__WRIT__"));
    assert_eq!(queue, lock.read_lock().participants().await.unwrap());
    read.release().await.unwrap();
    waiting.await.unwrap().unwrap();
}

/// CURATOR-621: a downgrade must not let a writer that queued behind the write holder in. The
/// queued writer's listing shows only the holder's write node ahead; the downgrade's read node
/// must still keep it out once the write node goes.
#[tokio::test]
async fn a_downgrade_keeps_a_queued_writer_out_until_the_read_is_released() {
    let path = unique_path("rw-downgrade-queued");
    let (a, b) = (connect().await, connect().await);
    let lock = InterProcessReadWriteLock::new(&a, &path).unwrap();
    let write = lock.write_lock().acquire().await.unwrap();
    let queued = InterProcessReadWriteLock::new(&b, &path).unwrap();
    let writer = tokio::spawn(async move {
        let guard = queued.write_lock().acquire().await.unwrap();
        let token = guard.fencing_token();
        guard.release().await.unwrap();
        token
    });
    wait_for_children(&a, &path, 2).await;
    let read = lock.read_lock().acquire().await.unwrap();
    // Curator 5.5's layout: the read node sorts level with the write node, ahead of the queue.
    let sequence = |node: &str| node.rsplit("__").next().unwrap().to_owned();
    assert_eq!(sequence(read.node_path()), sequence(write.node_path()), "{} / {}", read.node_path(), write.node_path());
    write.release().await.unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!writer.is_finished(), "the queued writer holds while the downgraded holder still reads");
    assert!(read.is_held());
    read.release().await.unwrap();
    tokio::time::timeout(Duration::from_secs(10), writer).await.expect("the writer holds after the read").unwrap();
    assert!(children(&a, &path).await.is_empty());
}

/// The same with the writer arriving after the downgrade: it lists the read node and waits for
/// it, whichever order the server lists the two nodes of one sequence in.
#[tokio::test]
async fn a_writer_arriving_after_a_downgrade_waits_for_the_read() {
    let path = unique_path("rw-downgrade-late");
    let (a, b) = (connect().await, connect().await);
    let lock = InterProcessReadWriteLock::new(&a, &path).unwrap();
    let write = lock.write_lock().acquire().await.unwrap();
    let read = lock.read_lock().acquire().await.unwrap();
    let other = InterProcessReadWriteLock::new(&b, &path).unwrap();
    assert!(other.write_lock().try_acquire().await.unwrap().is_none());
    let reader = other.read_lock().try_acquire().await.unwrap();
    assert!(reader.is_none(), "a reader waits while the write lock is held");
    write.release().await.unwrap();
    assert!(other.write_lock().acquire_timeout(Duration::from_millis(300)).await.unwrap().is_none());
    let shared = other.read_lock().try_acquire().await.unwrap().expect("readers share after the downgrade");
    shared.release().await.unwrap();
    read.release().await.unwrap();
    let write = other.write_lock().try_acquire().await.unwrap().expect("free once the read is released");
    write.release().await.unwrap();
    assert!(children(&a, &path).await.is_empty());
}

/// Found by the explorer (`tests/it/explore.rs`): a write holder whose node an operator deleted
/// (before the holder could know: no watch yet) downgraded, and its read node, level with the
/// deleted write node, held at once, beside the writer that was then first. A downgrade now
/// proves its write node still exists once the read node is there (a read sent right behind the
/// create): it fails with `LockLost(NodeDeleted)`, the write hold says it is lost, and no read
/// node is left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_downgrade_after_the_write_node_was_deleted_never_reads_beside_the_next_writer() {
    let path = unique_path("rw-downgrade-deleted");
    let (client, other_client) = (connect().await, connect().await);
    let lock = InterProcessReadWriteLock::new(&client, &path).unwrap();
    let writing = lock.write_lock().acquire().await.unwrap();
    let other = InterProcessReadWriteLock::new(&other_client, &path).unwrap();
    let next_writer = tokio::spawn(async move { other.write_lock().acquire().await.unwrap() });
    eventually("the next writer queued", || async { children(&client, &path).await.len() == 2 }).await;
    other_client.delete(writing.node_path(), None).await.unwrap();
    let next_writer = tokio::time::timeout(Duration::from_secs(10), next_writer).await.expect("never held").unwrap();
    assert!(writing.is_held(), "nothing watches the write node yet: its holder cannot know");

    let downgraded = lock.read_lock().try_acquire().await;
    assert!(
        matches!(downgraded, Err(Error::LockLost(LossReason::NodeDeleted))),
        "a downgrade beside a deleted write node: {downgraded:?}"
    );
    assert!(!writing.is_held(), "the write hold is known lost");
    assert_eq!(children(&client, &path).await.len(), 1, "only the next writer's node is left");
    next_writer.release().await.unwrap();
    drop(writing);
}
