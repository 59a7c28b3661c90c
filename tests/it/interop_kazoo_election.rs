//! zklock's `LeaderSelector` in kazoo's layout and the real kazoo 2.8 `Election` (Debian's
//! python3-kazoo) elect one leader among them: a kazoo `Election` is a kazoo `Lock` whose holder
//! leads, and the selector's mutex in kazoo's layout is that lock. `LeaderView::kazoo` follows
//! such an election.

use crate::common;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::interop::{check_log, check_turns, finish, logged_section, temp_log, Peer, StartLine};
use common::{connect, eventually, unique_path};
use zklock::election::{LeaderView, Leadership};
use zklock::hold::Hold;
use zklock::{LeaderSelector, NodeSchema};

/// Terms each participant leads.
const TERMS: u32 = 12;
/// Bounds every wait for a peer to finish its terms.
const PEER_TIMEOUT: Duration = Duration::from_secs(90);
/// Switches of leadership between zklock and kazoo the shared log must show each way.
const SWITCHES: usize = 5;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zklock_selectors_and_kazoo_elections_take_turns_one_leader_at_a_time() {
    let path = unique_path("kazoo-election");
    let log = temp_log("kazoo-election");
    let start = StartLine::new(2);
    let mut peers = [
        Peer::kazoo("kazoo-1", &path, "election", TERMS, 20, &log, &[]),
        Peer::kazoo("kazoo-2", &path, "election", TERMS, 20, &log, &[]),
    ];
    let mut rust = Vec::new();
    for name in ["zklock-1", "zklock-2"] {
        let (path, log, start) = (path.clone(), log.clone(), start.clone());
        rust.push(tokio::spawn(async move {
            let client = connect().await;
            let selector = LeaderSelector::builder(&client, &path, name)
                .node_schema(NodeSchema::Kazoo)
                .auto_requeue(true)
                .build()
                .unwrap();
            let (done, mut all_done) = tokio::sync::mpsc::unbounded_channel();
            let terms = Arc::new(AtomicU32::new(0));
            start.ready().await;
            selector
                .start(move |leadership: Leadership| {
                    let (log, terms, done) = (log.clone(), terms.clone(), done.clone());
                    async move {
                        assert!(leadership.node_path().contains("__lock__"), "{}", leadership.node_path());
                        logged_section(&log, name, "election", Duration::from_millis(20)).await;
                        if terms.fetch_add(1, Ordering::SeqCst) + 1 == TERMS {
                            // Returning would queue again: lead on, unlogged, until closed.
                            let _ = done.send(());
                            std::future::pending::<()>().await;
                        }
                    }
                })
                .await
                .unwrap();
            tokio::time::timeout(PEER_TIMEOUT, all_done.recv()).await.expect("zklock starved");
            selector.close().await.unwrap();
        }));
    }
    start.open(&mut peers).await;
    finish(rust, peers, PEER_TIMEOUT).await;
    check_log(&log, &[("kazoo-1", TERMS), ("kazoo-2", TERMS), ("zklock-1", TERMS), ("zklock-2", TERMS)]);
    let turns = check_turns(&log, SWITCHES);
    eprintln!("{turns:?}");
    assert_eq!(turns.shared_across, 0, "two leaders at once");
    let _ = std::fs::remove_file(&log);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zklock_names_the_kazoo_leader_and_waits_behind_it() {
    let path = unique_path("kazoo-election-view");
    let log = temp_log("kazoo-election-view");
    let client = connect().await;
    let mut leader = Peer::kazoo("kazoo-leader", &path, "election", 1, 60_000, &log, &[]);
    leader.start().await;
    eventually("kazoo leads", || async { std::fs::read_to_string(&log).is_ok_and(|text| text.contains("enter")) })
        .await;
    let mut view = LeaderView::kazoo(&client, &path).unwrap();
    let seen = loop {
        match view.leader() {
            Some(seen) => break seen,
            None => view.changed().await.unwrap(),
        };
    };
    assert_eq!(seen.id(), "kazoo-leader");
    assert!(seen.node_path.contains("__lock__"), "{}", seen.node_path);

    let selector = LeaderSelector::builder(&client, &path, "zklock").node_schema(NodeSchema::Kazoo).build().unwrap();
    let (led, mut has_led) = tokio::sync::mpsc::unbounded_channel();
    selector
        .start(move |_: Leadership| {
            let led = led.clone();
            async move {
                let _ = led.send(());
                std::future::pending::<()>().await; // leads until closed, for the view to see
            }
        })
        .await
        .unwrap();
    eventually("zklock queues", || async { selector.participants().await.is_ok_and(|queue| queue.len() == 2) }).await;
    let queue: Vec<String> = selector.participants().await.unwrap().iter().map(|p| p.id()).collect();
    assert_eq!(queue, ["kazoo-leader", "zklock"]);
    assert!(has_led.try_recv().is_err(), "zklock led beside kazoo's leader");

    drop(leader); // its session ends: zklock leads, and the view says so
    tokio::time::timeout(PEER_TIMEOUT, has_led.recv()).await.expect("zklock never led");
    let next = tokio::time::timeout(PEER_TIMEOUT, async {
        loop {
            match view.changed().await.unwrap() {
                Some(seen) if seen.id() != "kazoo-leader" => break seen,
                _ => continue,
            }
        }
    })
    .await
    .expect("the view never saw zklock lead");
    assert_eq!(next.id(), "zklock");
    selector.close().await.unwrap();
    let _ = std::fs::remove_file(&log);
}
