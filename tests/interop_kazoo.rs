//! zklock and the real kazoo (Debian's python3-kazoo) share one lock when zklock uses kazoo's
//! node schema; with Curator's schema they do not see each other, which is why the option exists.

mod common;

use std::time::Duration;

use common::interop::{check_log, finish, logged_section, temp_log, Peer};
use common::{connect, server, unique_path};
use zklock::{InterProcessMutex, NodeSchema};

const ITERATIONS: u32 = 15;
const PEER_TIMEOUT: Duration = Duration::from_secs(180);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zklock_in_kazoo_schema_and_kazoo_exclude_each_other() {
    let path = unique_path("kazoo-mutex");
    let log = temp_log("kazoo-mutex");
    let connect_string = server().connect_string();
    let peers = [
        Peer::kazoo("kazoo-1", &connect_string, &path, ITERATIONS, 5, &log, &[]),
        Peer::kazoo("kazoo-2", &connect_string, &path, ITERATIONS, 5, &log, &[]),
    ];
    let mut rust = Vec::new();
    for name in ["zklock-1", "zklock-2"] {
        let (path, log) = (path.clone(), log.clone());
        rust.push(tokio::spawn(async move {
            let client = connect().await;
            let mutex = InterProcessMutex::builder(&client, &path).node_schema(NodeSchema::Kazoo).build().unwrap();
            for _ in 0..ITERATIONS {
                let guard = mutex.acquire_timeout(PEER_TIMEOUT).await.unwrap().expect("zklock starved");
                assert!(guard.node_path().contains("__lock__"));
                logged_section(&log, name, "mutex", Duration::from_millis(5)).await;
                guard.release().await.unwrap();
            }
        }));
    }
    finish(rust, peers, PEER_TIMEOUT).await;
    check_log(
        &log,
        &[("kazoo-1", ITERATIONS), ("kazoo-2", ITERATIONS), ("zklock-1", ITERATIONS), ("zklock-2", ITERATIONS)],
    );
    let _ = std::fs::remove_file(&log);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_curators_schema_kazoo_does_not_see_zklock_unless_told_to() {
    let path = unique_path("kazoo-unsafe");
    let log = temp_log("kazoo-unsafe");
    let client = connect().await;
    let guard = InterProcessMutex::new(&client, &path).unwrap().acquire().await.unwrap();

    // kazoo by default ignores `_c_..-lock-` nodes: it takes the lock zklock holds.
    let mut blind = Peer::kazoo("kazoo-blind", &server().connect_string(), &path, 1, 0, &log, &[]);
    common::eventually("kazoo got the lock beside zklock", || {
        let exited = blind.has_exited();
        async move { exited }
    })
    .await;
    blind.wait_success(PEER_TIMEOUT);
    // Told about Curator's names, kazoo waits for zklock.
    let mut seeing = Peer::kazoo("kazoo-seeing", &server().connect_string(), &path, 1, 0, &log, &["-lock-"]);
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(!seeing.has_exited(), "kazoo with extra_lock_patterns must wait for zklock's holder");
    guard.release().await.unwrap();
    tokio::task::block_in_place(|| seeing.wait_success(PEER_TIMEOUT));
    let text = std::fs::read_to_string(&log).unwrap();
    assert_eq!(text.lines().filter(|line| line.starts_with("enter")).count(), 2);
    let _ = std::fs::remove_file(&log);
}
