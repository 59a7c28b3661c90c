//! zklock and the real Apache Curator 5.4 (Debian's libcurator-recipes-java) share one lock:
//! mutual exclusion checked across processes through a log that every holder appends to.

use crate::common;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use common::interop::{
    append, check_leases, check_log, check_turns, finish, logged_section, read_write_contention, temp_log, Peer,
    StartLine,
};
use common::{connect, server, unique_path};
use zklock::hold::Hold;
use zklock::{revoke, InterProcessMutex, InterProcessSemaphoreMutex, InterProcessSemaphoreV2, NodeSchema};
use zookeeper_client::Client;

const ITERATIONS: u32 = 15;
/// Bounds every wait for a lock and for a peer to finish its rounds.
const PEER_TIMEOUT: Duration = Duration::from_secs(60);
/// Switches between zklock and Curator holders the shared log must show each way.
const SWITCHES: usize = 5;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zklock_mutex_and_curator_mutex_exclude_each_other() {
    mutexes_exclude_curators("curator-mutex", |client, path| InterProcessMutex::new(client, path).unwrap()).await;
}

/// A mutex built with `fail_on_deadlock` names its nodes with an owner-tagged uuid (version 8,
/// not Curator's version 4): Curator still sees them as lock nodes, waits for them and is
/// waited for, and zklock's looks for deadlocks read Curator's untagged nodes beside them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zklock_mutex_with_owner_tags_and_curator_mutex_exclude_each_other() {
    let client = connect().await;
    let path = unique_path("curator-tagged-name");
    let guard = InterProcessMutex::builder(&client, &path).fail_on_deadlock(&path).build().unwrap().acquire().await;
    let guard = guard.unwrap();
    assert!(guard.node_path().contains("-87a6-"), "a tagged uuid: {}", guard.node_path());
    guard.release().await.unwrap();
    mutexes_exclude_curators("curator-tagged", |client, path| {
        InterProcessMutex::builder(client, path).fail_on_deadlock(path).build().unwrap()
    })
    .await;
}

/// `zklock::blocking`'s mutex, on two plain threads (each its own session), and Curator's two
/// peers take turns on one path: none overlapping, turns switching between the libraries.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zklock_blocking_mutex_and_curator_mutex_exclude_each_other() {
    take_turns_with_curators("curator-blocking", |name, path, log, start| {
        let thread = std::thread::spawn(move || {
            let client = zklock::blocking::connect(&server().connect_string()).unwrap();
            let mutex = zklock::blocking::InterProcessMutex::new(&client, &path).unwrap();
            zklock::blocking::run(start.ready()).unwrap();
            for _ in 0..ITERATIONS {
                let guard = mutex.acquire_timeout(PEER_TIMEOUT).unwrap().expect("zklock starved");
                append(&log, "enter", name, "mutex");
                std::thread::sleep(Duration::from_millis(5));
                append(&log, "exit", name, "mutex");
                guard.release().unwrap();
            }
        });
        tokio::task::spawn_blocking(move || thread.join().unwrap())
    })
    .await;
}

/// Two Curator peers and two zklock tasks (each its own session, its mutex made by `mutex`)
/// take turns on one path.
async fn mutexes_exclude_curators(name: &str, mutex: fn(&Client, &str) -> InterProcessMutex) {
    take_turns_with_curators(name, move |name, path, log, start| {
        tokio::spawn(async move {
            let client = connect().await;
            let mutex = mutex(&client, &path);
            start.ready().await;
            for _ in 0..ITERATIONS {
                let guard = mutex.acquire_timeout(PEER_TIMEOUT).await.unwrap().expect("zklock starved");
                logged_section(&log, name, "mutex", Duration::from_millis(5)).await;
                guard.release().await.unwrap();
            }
        })
    })
    .await;
}

/// Two Curator peers and two zklock parties (`party(name, path, log, start)`, each its own
/// session, logging every round) take turns on one path: the log shows every round, none
/// overlapping, and turns switching between the two libraries.
async fn take_turns_with_curators<P>(name: &str, party: P)
where
    P: Fn(&'static str, String, PathBuf, Arc<StartLine>) -> tokio::task::JoinHandle<()>,
{
    let path = unique_path(name);
    let log = temp_log(name);
    let start = StartLine::new(2);
    let mut peers = [
        Peer::curator("curator-1", &path, "mutex", ITERATIONS, 5, &log),
        Peer::curator("curator-2", &path, "mutex", ITERATIONS, 5, &log),
    ];
    let rust = ["zklock-1", "zklock-2"].map(|name| party(name, path.clone(), log.clone(), start.clone()));
    start.open(&mut peers).await;
    finish(rust.into(), peers, PEER_TIMEOUT).await;
    check_log(
        &log,
        &[("curator-1", ITERATIONS), ("curator-2", ITERATIONS), ("zklock-1", ITERATIONS), ("zklock-2", ITERATIONS)],
    );
    eprintln!("{:?}", check_turns(&log, SWITCHES));
    let _ = std::fs::remove_file(&log);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zklock_and_curator_read_write_locks_share_reads_and_exclude_writes() {
    let path = unique_path("curator-rw");
    let log = temp_log("curator-rw");
    let peers = [
        Peer::curator("curator-reader", &path, "read", 2 * ITERATIONS, 20, &log),
        Peer::curator("curator-writer", &path, "write", ITERATIONS, 5, &log),
    ];
    let run = ("curator", ITERATIONS, PEER_TIMEOUT, SWITCHES);
    read_write_contention(&path, &log, NodeSchema::Curator, peers, run).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curator_and_zklock_agree_on_the_holder_and_the_queue() {
    // A Curator holder keeps zklock out; zklock's view of the queue names Curator's node first.
    let path = unique_path("curator-queue");
    let log = temp_log("curator-queue");
    let client = connect().await;
    let mutex = InterProcessMutex::new(&client, &path).unwrap();
    let mut peer = Peer::curator("curator", &path, "mutex", 1, 3_000, &log);
    peer.start().await;
    common::eventually("Curator holds the lock", || async {
        std::fs::read_to_string(&log).is_ok_and(|t| t.contains("enter"))
    })
    .await;
    assert!(mutex.try_acquire().await.unwrap().is_none(), "Curator's holder must keep zklock out");
    let queue = mutex.participants().await.unwrap();
    assert_eq!(queue.len(), 1);
    assert!(queue[0].rsplit('/').next().unwrap().starts_with("_c_"), "{queue:?}");
    let guard = mutex.acquire_timeout(PEER_TIMEOUT).await.unwrap().expect("zklock gets it after Curator");
    assert!(std::fs::read_to_string(&log).unwrap().contains("exit curator"));
    guard.release().await.unwrap();
    tokio::task::block_in_place(|| peer.wait_success(PEER_TIMEOUT));
    let _ = std::fs::remove_file(&log);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zklock_and_curator_semaphores_never_hold_more_than_max_leases() {
    const LEASES: usize = 3;
    let path = unique_path("curator-semaphore");
    let log = temp_log("curator-semaphore");
    let start = StartLine::new(3);
    let mut peers = [
        Peer::curator("curator-1", &path, "lease:3", ITERATIONS, 30, &log),
        Peer::curator("curator-2", &path, "lease:3", ITERATIONS, 30, &log),
    ];
    let mut rust = Vec::new();
    for name in ["zklock-1", "zklock-2", "zklock-3"] {
        let (path, log, start) = (path.clone(), log.clone(), start.clone());
        rust.push(tokio::spawn(async move {
            let client = connect().await;
            let semaphore = InterProcessSemaphoreV2::new(&client, &path, LEASES as u32).unwrap();
            start.ready().await;
            for _ in 0..ITERATIONS {
                let lease = semaphore.acquire_timeout(PEER_TIMEOUT).await.unwrap().expect("zklock starved");
                logged_section(&log, name, "lease", Duration::from_millis(30)).await;
                lease.release().await.unwrap();
            }
        }));
    }
    start.open(&mut peers).await;
    finish(rust, peers, PEER_TIMEOUT).await;
    let expected = [
        ("curator-1", ITERATIONS),
        ("curator-2", ITERATIONS),
        ("zklock-1", ITERATIONS),
        ("zklock-2", ITERATIONS),
        ("zklock-3", ITERATIONS),
    ];
    let most = check_leases(&log, LEASES, &expected);
    let turns = check_turns(&log, SWITCHES);
    eprintln!("at most {most} leases held at once; {turns:?}");
    assert_eq!(most, LEASES, "the leases were never all taken: no contention");
    assert!(turns.shared_across > 0, "zklock and Curator never held leases at once");
    let _ = std::fs::remove_file(&log);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zklock_and_curator_semaphore_mutexes_exclude_each_other() {
    let path = unique_path("curator-semaphore-mutex");
    let log = temp_log("curator-semaphore-mutex");
    let mut peer = Peer::curator("curator", &path, "semaphore-mutex", ITERATIONS, 5, &log);
    let client = connect().await;
    let mutex = InterProcessSemaphoreMutex::new(&client, &path).unwrap();
    peer.start().await;
    for _ in 0..ITERATIONS {
        let lease = mutex.acquire_timeout(PEER_TIMEOUT).await.unwrap().expect("zklock starved");
        logged_section(&log, "zklock", "semaphore-mutex", Duration::from_millis(5)).await;
        lease.release().await.unwrap();
    }
    tokio::task::block_in_place(|| peer.wait_success(PEER_TIMEOUT));
    check_log(&log, &[("curator", ITERATIONS), ("zklock", ITERATIONS)]);
    eprintln!("{:?}", check_turns(&log, SWITCHES));
    let _ = std::fs::remove_file(&log);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revocation_requests_cross_between_zklock_and_curator() {
    let path = unique_path("curator-revoke");
    let log = temp_log("curator-revoke");
    let client = connect().await;
    let mutex = InterProcessMutex::new(&client, &path).unwrap();

    // zklock asks a revocable Curator holder to let go, and gets the lock.
    let mut holder = Peer::curator("curator", &path, "revocable", 1, 60_000, &log);
    holder.start().await;
    common::eventually("Curator holds the lock", || async {
        std::fs::read_to_string(&log).is_ok_and(|t| t.contains("enter"))
    })
    .await;
    let curator_node = mutex.participants().await.unwrap()[0].clone();
    revoke(&client, &curator_node).await.unwrap();
    let guard = mutex.acquire_timeout(Duration::from_secs(30)).await.unwrap().expect("Curator let go");
    tokio::task::block_in_place(|| holder.wait_success(PEER_TIMEOUT));
    // Its hold ended because it was asked: "unrevoked" would mean it held its whole 60 s.
    let said = std::fs::read_to_string(&log).unwrap();
    let said: Vec<&str> = said.lines().collect();
    assert_eq!(said, ["enter curator revocable", "revoked curator revocable", "exit curator revocable"]);

    // Curator's Revoker asks the zklock holder to let go.
    let mut revoker = Peer::curator("revoker", guard.node_path(), "revoke", 0, 0, &log);
    revoker.start().await;
    tokio::time::timeout(Duration::from_secs(30), guard.revocation_requested()).await.expect("request not heard");
    tokio::task::block_in_place(|| revoker.wait_success(PEER_TIMEOUT));
    guard.release().await.unwrap();
    let _ = std::fs::remove_file(&log);
}
