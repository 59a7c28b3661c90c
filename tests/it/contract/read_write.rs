//! The read-write lock's own rules: readers share and exclude writers, writers queue in order,
//! a reader behind a waiting writer waits, no upgrade, and a downgrade keeps writers out. Each
//! runs in both layouts, Curator's (`curator::`) and kazoo's (`kazoo::`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use zklock::hold::Hold;
use zklock::{Error, InterProcessReadWriteLock, LockGuard, NodeSchema};
use zookeeper_client::Client;

use crate::common::{children, connect, unique_path, wait_for_children};
use crate::contract::exclusion::Ledger;
use crate::contract::support::PROMPTLY;

/// Runs each rule, an `async fn(NodeSchema)`, as a test in each layout.
macro_rules! in_both_layouts {
    ($($rule:ident),* $(,)?) => {
        mod curator {
            $(
                #[tokio::test]
                async fn $rule() {
                    super::$rule(zklock::NodeSchema::Curator).await;
                }
            )*
        }
        mod kazoo {
            $(
                #[tokio::test]
                async fn $rule() {
                    super::$rule(zklock::NodeSchema::Kazoo).await;
                }
            )*
        }
    };
}

in_both_layouts!(
    readers_share_and_exclude_writers,
    writers_hold_in_the_order_they_queued,
    a_reader_behind_a_waiting_writer_waits_for_it,
    a_reader_asking_to_write_is_refused_without_a_node,
    a_downgraded_reader_keeps_out_a_writer_queued_before_the_downgrade,
    a_downgraded_reader_keeps_out_a_writer_queued_after_the_downgrade,
);

async fn rw(path: &str, schema: NodeSchema) -> (Client, InterProcessReadWriteLock) {
    let client = connect().await;
    let lock = InterProcessReadWriteLock::builder(&client, path).node_schema(schema).build().unwrap();
    (client, lock)
}

/// Holds `guard` for `inside` in `ledger`'s books as `party`.
async fn hold(ledger: &Mutex<Ledger>, party: &str, shared: bool, guard: LockGuard, inside: Duration) {
    ledger.lock().unwrap().enter(party, shared, guard.fencing_token());
    tokio::time::sleep(inside).await;
    ledger.lock().unwrap().exit(shared);
    guard.release().await.unwrap();
}

async fn readers_share_and_exclude_writers(schema: NodeSchema) {
    let path = unique_path("rw-share");
    let ledger = Arc::new(Mutex::new(Ledger::default()));
    let (observer, first) = rw(&path, schema).await;
    let (_b, second) = rw(&path, schema).await;
    let first_read = first.read_lock().acquire().await.unwrap();
    // Both readers hold at once: the second does not wait for the first.
    let second_read = second.read_lock().try_acquire().await.unwrap().expect("readers share");
    ledger.lock().unwrap().enter("reader 0", true, first_read.fencing_token());
    ledger.lock().unwrap().enter("reader 1", true, second_read.fencing_token());
    let (_c, writer) = rw(&path, schema).await;
    assert!(writer.write_lock().try_acquire().await.unwrap().is_none(), "a writer beside readers");
    let writing = tokio::spawn({
        let ledger = ledger.clone();
        async move {
            let guard = writer.write_lock().acquire().await.unwrap();
            hold(&ledger, "writer", false, guard, Duration::from_millis(50)).await;
        }
    });
    wait_for_children(&observer, &path, 3).await;
    for (shared_guard, inside) in [(first_read, 20), (second_read, 20)] {
        tokio::time::sleep(Duration::from_millis(inside)).await;
        ledger.lock().unwrap().exit(true);
        shared_guard.release().await.unwrap();
    }
    tokio::time::timeout(PROMPTLY, writing).await.expect("the writer never held").unwrap();
    ledger.lock().unwrap().check(3);
    assert!(children(&observer, &path).await.is_empty());
}

async fn writers_hold_in_the_order_they_queued(schema: NodeSchema) {
    const WRITERS: usize = 4;
    let path = unique_path("rw-fifo");
    let (observer, holder) = rw(&path, schema).await;
    let held = holder.write_lock().acquire().await.unwrap();
    let order = Arc::new(Mutex::new(Vec::new()));
    let mut writers = Vec::new();
    for id in 0..WRITERS {
        let (client, lock) = rw(&path, schema).await;
        let order = order.clone();
        writers.push(tokio::spawn(async move {
            let guard = lock.write_lock().acquire().await.unwrap();
            order.lock().unwrap().push(id);
            guard.release().await.unwrap();
            drop(client);
        }));
        // The next writer comes only once this one is in the queue.
        wait_for_children(&observer, &path, id + 2).await;
    }
    held.release().await.unwrap();
    for writer in writers {
        tokio::time::timeout(PROMPTLY, writer).await.expect("a writer never held").unwrap();
    }
    assert_eq!(*order.lock().unwrap(), (0..WRITERS).collect::<Vec<_>>());
}

async fn a_reader_behind_a_waiting_writer_waits_for_it(schema: NodeSchema) {
    let path = unique_path("rw-reader-behind-writer");
    let (observer, first) = rw(&path, schema).await;
    let reading = first.read_lock().acquire().await.unwrap();
    let order = Arc::new(Mutex::new(Vec::new()));
    let queue = |name: &'static str, lock: InterProcessReadWriteLock, reader: bool| {
        let order = order.clone();
        tokio::spawn(async move {
            let side = if reader { lock.read_lock() } else { lock.write_lock() };
            let guard = side.acquire().await.unwrap();
            order.lock().unwrap().push(name);
            tokio::time::sleep(Duration::from_millis(20)).await;
            guard.release().await.unwrap();
        })
    };
    let (_b, writer) = rw(&path, schema).await;
    let writing = queue("writer", writer, false);
    wait_for_children(&observer, &path, 2).await;
    let (_c, late) = rw(&path, schema).await;
    let late_reading = queue("late reader", late, true);
    wait_for_children(&observer, &path, 3).await;
    // A reader that jumped the writer would hold now, beside the first reader.
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(order.lock().unwrap().is_empty(), "someone held beside the first reader: {:?}", order.lock().unwrap());
    reading.release().await.unwrap();
    tokio::time::timeout(PROMPTLY, writing).await.expect("the writer never held").unwrap();
    tokio::time::timeout(PROMPTLY, late_reading).await.expect("the late reader never held").unwrap();
    assert_eq!(*order.lock().unwrap(), ["writer", "late reader"]);
}

async fn a_reader_asking_to_write_is_refused_without_a_node(schema: NodeSchema) {
    let path = unique_path("rw-upgrade");
    let (client, lock) = rw(&path, schema).await;
    let reading = lock.read_lock().acquire().await.unwrap();
    assert!(matches!(lock.write_lock().acquire().await, Err(Error::WouldDeadlock(_))));
    assert!(matches!(lock.write_lock().try_acquire().await, Err(Error::WouldDeadlock(_))));
    assert!(matches!(lock.write_lock().acquire_timeout(Duration::from_secs(5)).await, Err(Error::WouldDeadlock(_))));
    assert_eq!(children(&client, &path).await.len(), 1, "the refused upgrade left a node");
    reading.release().await.unwrap();
    let writing = lock.write_lock().try_acquire().await.unwrap().expect("a released reader may write");
    writing.release().await.unwrap();
}

/// The write holder takes the read lock and lets the write lock go; a writer queued meanwhile
/// (`queued_before_the_downgrade`: before the read lock was taken) must wait for the read.
async fn a_downgraded_reader_keeps_a_queued_writer_out(schema: NodeSchema, queued_before_the_downgrade: bool) {
    let path = unique_path("rw-downgrade");
    let (observer, lock) = rw(&path, schema).await;
    let writing = lock.write_lock().acquire().await.unwrap();
    let (_b, other) = rw(&path, schema).await;
    let still_reading = Arc::new(AtomicBool::new(true));
    let queue_writer = || {
        let still_reading = still_reading.clone();
        let other = other.clone();
        tokio::spawn(async move {
            let guard = other.write_lock().acquire().await.unwrap();
            let beside_the_reader = still_reading.load(Ordering::SeqCst);
            guard.release().await.unwrap();
            beside_the_reader
        })
    };
    let (queued, reading) = if queued_before_the_downgrade {
        let queued = queue_writer();
        wait_for_children(&observer, &path, 2).await;
        (queued, lock.read_lock().acquire().await.unwrap())
    } else {
        let reading = lock.read_lock().acquire().await.unwrap();
        let queued = queue_writer();
        wait_for_children(&observer, &path, 3).await;
        (queued, reading)
    };
    writing.release().await.unwrap();
    // Still reading, for long enough that a writer let in would have held.
    tokio::time::sleep(Duration::from_millis(300)).await;
    still_reading.store(false, Ordering::SeqCst);
    reading.release().await.unwrap();
    let beside_the_reader = tokio::time::timeout(PROMPTLY, queued).await.expect("the writer never held").unwrap();
    assert!(!beside_the_reader, "a writer held while the downgraded reader was still reading");
}

async fn a_downgraded_reader_keeps_out_a_writer_queued_before_the_downgrade(schema: NodeSchema) {
    a_downgraded_reader_keeps_a_queued_writer_out(schema, true).await;
}

async fn a_downgraded_reader_keeps_out_a_writer_queued_after_the_downgrade(schema: NodeSchema) {
    a_downgraded_reader_keeps_a_queued_writer_out(schema, false).await;
}
