//! zklock and the real kazoo (Debian's python3-kazoo) share one lock when zklock uses kazoo's
//! node schema, a mutex or a read-write lock; with Curator's schema they do not see each other,
//! which is why the option exists. The last test shows that kazoo's `Semaphore` does not exclude
//! zklock's semaphore in Curator's layout, as docs/interop.md's matrix says (in kazoo's layout it
//! does: `tests/it/interop_kazoo_semaphore.rs`).

use crate::common;

use std::time::Duration;

use common::interop::{
    check_log, check_turns, finish, logged_section, read_write_contention, temp_log, Peer, StartLine,
};
use common::{connect, unique_path};
use zklock::hold::Hold;
use zklock::{InterProcessMutex, InterProcessReadWriteLock, InterProcessSemaphoreV2, NodeSchema};

const ITERATIONS: u32 = 15;
/// Bounds every wait for a lock and for a peer to finish its rounds.
const PEER_TIMEOUT: Duration = Duration::from_secs(60);
/// Switches between zklock and kazoo holders the shared log must show each way.
const SWITCHES: usize = 5;
/// How long a kazoo holder keeps its lock when the test does not wait for it to finish.
const LONG_HOLD_MS: u64 = 60_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zklock_in_kazoo_schema_and_kazoo_exclude_each_other() {
    let path = unique_path("kazoo-mutex");
    let log = temp_log("kazoo-mutex");
    let start = StartLine::new(2);
    let mut peers = [
        Peer::kazoo("kazoo-1", &path, "mutex", ITERATIONS, 5, &log, &[]),
        Peer::kazoo("kazoo-2", &path, "mutex", ITERATIONS, 5, &log, &[]),
    ];
    let mut rust = Vec::new();
    for name in ["zklock-1", "zklock-2"] {
        let (path, log, start) = (path.clone(), log.clone(), start.clone());
        rust.push(tokio::spawn(async move {
            let client = connect().await;
            let mutex = InterProcessMutex::builder(&client, &path).node_schema(NodeSchema::Kazoo).build().unwrap();
            start.ready().await;
            for _ in 0..ITERATIONS {
                let guard = mutex.acquire_timeout(PEER_TIMEOUT).await.unwrap().expect("zklock starved");
                assert!(guard.node_path().contains("__lock__"));
                logged_section(&log, name, "mutex", Duration::from_millis(5)).await;
                guard.release().await.unwrap();
            }
        }));
    }
    start.open(&mut peers).await;
    finish(rust, peers, PEER_TIMEOUT).await;
    check_log(
        &log,
        &[("kazoo-1", ITERATIONS), ("kazoo-2", ITERATIONS), ("zklock-1", ITERATIONS), ("zklock-2", ITERATIONS)],
    );
    eprintln!("{:?}", check_turns(&log, SWITCHES));
    let _ = std::fs::remove_file(&log);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_curators_schema_kazoo_does_not_see_zklock_unless_told_to() {
    let path = unique_path("kazoo-unsafe");
    let log = temp_log("kazoo-unsafe");
    let client = connect().await;
    let guard = InterProcessMutex::new(&client, &path).unwrap().acquire().await.unwrap();

    // kazoo by default ignores `_c_..-lock-` nodes: it takes the lock zklock holds.
    let blind = Peer::kazoo("kazoo-blind", &path, "mutex", 1, 0, &log, &[]);
    finishes_beside_zklock(blind).await;
    // Told about Curator's names, kazoo waits for zklock.
    let mut seeing = Peer::kazoo("kazoo-seeing", &path, "mutex", 1, 0, &log, &["-lock-"]);
    seeing.start().await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(!seeing.has_exited(), "kazoo with extra_lock_patterns must wait for zklock's holder");
    guard.release().await.unwrap();
    tokio::task::block_in_place(|| seeing.wait_success(PEER_TIMEOUT));
    let text = std::fs::read_to_string(&log).unwrap();
    assert_eq!(text.lines().filter(|line| line.starts_with("enter")).count(), 2);
    let _ = std::fs::remove_file(&log);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zklock_and_kazoo_read_write_locks_share_reads_and_exclude_writes() {
    let path = unique_path("kazoo-rw");
    let log = temp_log("kazoo-rw");
    // kazoo 2.8's reader gives its place up after 500 ms and queues again: it waits for writers
    // queued behind it too (kazoo #649), a ring only a timeout breaks.
    let peers = [
        Peer::kazoo("kazoo-reader", &path, "read:500", 2 * ITERATIONS, 20, &log, &[]),
        Peer::kazoo("kazoo-writer", &path, "write", ITERATIONS, 5, &log, &[]),
    ];
    let run = ("kazoo", ITERATIONS, PEER_TIMEOUT, SWITCHES);
    read_write_contention(&path, &log, NodeSchema::Kazoo, peers, run).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kazoo_writer_waits_through_a_zklock_downgrade() {
    let path = unique_path("kazoo-downgrade");
    let log = temp_log("kazoo-downgrade");
    let client = connect().await;
    let lock = InterProcessReadWriteLock::builder(&client, &path).node_schema(NodeSchema::Kazoo).build().unwrap();
    let writing = lock.write_lock().acquire().await.unwrap();
    let mut writer = Peer::kazoo("kazoo-writer", &path, "write", 1, 0, &log, &[]);
    writer.start().await;
    common::eventually("kazoo's writer queues", || async {
        client.list_children(&path).await.is_ok_and(|children| children.len() == 2)
    })
    .await;
    // The read node takes the write node's sequence: it sorts ahead of kazoo's writer, which
    // must wait for it once the write node is gone.
    let reading = lock.read_lock().acquire().await.unwrap();
    assert!(reading.node_path().contains("__rlock__"), "{}", reading.node_path());
    writing.release().await.unwrap();
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(!writer.has_exited(), "kazoo's writer took the lock from zklock's downgraded reader");
    assert!(std::fs::read_to_string(&log).unwrap_or_default().is_empty(), "kazoo's writer entered");
    reading.release().await.unwrap();
    tokio::task::block_in_place(|| writer.wait_success(PEER_TIMEOUT));
    let _ = std::fs::remove_file(&log);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_curators_layout_kazoo_write_locks_and_zklock_write_locks_ignore_each_other() {
    let path = unique_path("kazoo-rw-curator");
    let log = temp_log("kazoo-rw-curator");
    let client = connect().await;
    let lock = InterProcessReadWriteLock::new(&client, &path).unwrap();

    // kazoo's WriteLock counts only `__lock__`/`__rlock__` nodes: zklock's `__WRIT__` holder is
    // invisible to it.
    let guard = lock.write_lock().acquire().await.unwrap();
    finishes_beside_zklock(Peer::kazoo("kazoo-writer", &path, "write", 1, 0, &log, &[])).await;
    guard.release().await.unwrap();

    // zklock counts only `__READ__`/`__WRIT__` nodes: kazoo's holder is invisible to it.
    let holder = holds(Peer::kazoo("kazoo-holder", &path, "write", 1, LONG_HOLD_MS, &log, &[]), &log).await;
    let guard = lock.write_lock().try_acquire().await.unwrap();
    assert!(guard.is_some(), "zklock's writer waited for kazoo's: they can share a path after all");
    assert_still_holds(holder, &log);
    let _ = std::fs::remove_file(&log);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kazoo_and_zklock_semaphores_of_one_lease_both_hold() {
    // kazoo keeps leases as `{path}/{hex}` and counts every child of the path; Curator's layout
    // keeps them under `{path}/leases`, and zklock counts only those.
    let path = unique_path("kazoo-semaphore");
    let log = temp_log("kazoo-semaphore");
    let holder = holds(Peer::kazoo("kazoo-holder", &path, "lease:1", 1, LONG_HOLD_MS, &log, &[]), &log).await;
    let client = connect().await;
    let lease = InterProcessSemaphoreV2::new(&client, &path, 1).unwrap().try_acquire().await.unwrap();
    assert!(lease.is_some(), "zklock waited for kazoo's lease: they can share a path after all");
    assert_still_holds(holder, &log);
    let _ = std::fs::remove_file(&log);
}

/// Starts a kazoo peer of one round and checks that it takes its lock and finishes while zklock
/// holds the same path.
async fn finishes_beside_zklock(mut peer: Peer) {
    peer.start().await;
    tokio::task::block_in_place(|| peer.wait_success(PEER_TIMEOUT));
}

/// Starts a kazoo peer of one long round and returns it once it holds its lock (its `enter`
/// line is in `log`).
async fn holds(mut peer: Peer, log: &std::path::Path) -> Peer {
    peer.start().await;
    let entered = format!("enter {} ", peer.name());
    common::eventually("kazoo holds its lock", || async {
        std::fs::read_to_string(log).is_ok_and(|text| text.contains(&entered))
    })
    .await;
    peer
}

/// Checks that a peer from [`holds`] has not let go yet (it logs `exit` before it releases), then
/// stops it.
fn assert_still_holds(peer: Peer, log: &std::path::Path) {
    let text = std::fs::read_to_string(log).unwrap();
    assert!(
        !text.contains(&format!("exit {} ", peer.name())),
        "kazoo let go before zklock took the lock: nothing shown\n{text}"
    );
    drop(peer);
}
