//! Local handoff (lock cohorting): tasks of one process pass the hold behind one queue node,
//! within the bound, with tokens that keep rising, while other processes keep their FIFO turn.
//! The lock contract runs on it too (`tests/it/contract.rs`, `mutex_with_local_handoff`).

use crate::common;

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::Duration;

use tokio::sync::Barrier;
use zklock::hold::Hold;
use zklock::{Error, InterProcessMutex, InterProcessReadWriteLock, LocalHandoff, LossReason};
use zookeeper_client::Client;

use common::{children, connect, connect_through, eventually, server, unique_path};
use zklock_testcontainers::{expire_session, Proxy};

fn handoff_mutex(client: &Client, path: &str, bound: LocalHandoff) -> InterProcessMutex {
    InterProcessMutex::builder(client, path).local_handoff(bound).build().unwrap()
}

/// The node a token was taken on: the czxid (see `LocalHandoff`'s docs).
fn node_of(token: i64) -> i64 {
    token >> 8
}

/// Who entered, in the order they entered, with their tokens; overlapping entries are breaches.
#[derive(Debug, Default)]
struct Entries {
    inside: usize,
    order: Vec<(String, i64)>,
    breaches: Vec<String>,
}

impl Entries {
    fn enter(&mut self, who: &str, token: i64) {
        if self.inside > 0 {
            self.breaches.push(format!("{who} entered beside a holder"));
        }
        if let Some((before, last)) = self.order.last() {
            if token <= *last {
                self.breaches.push(format!("{who} entered with token {token}, not above {before}'s {last}"));
            }
        }
        self.inside += 1;
        self.order.push((who.to_owned(), token));
    }

    fn exit(&mut self) {
        self.inside -= 1;
    }

    /// How many holders each node had, by czxid.
    fn holders_per_node(&self) -> BTreeMap<i64, usize> {
        let mut per_node = BTreeMap::new();
        for (_, token) in &self.order {
            *per_node.entry(node_of(*token)).or_default() += 1;
        }
        per_node
    }
}

/// `tasks` tasks share `mutex`, each taking it `rounds` times and staying inside for `inside`.
async fn contend(
    mutex: &InterProcessMutex,
    name: &str,
    tasks: usize,
    rounds: usize,
    inside: Duration,
    entries: &Arc<Mutex<Entries>>,
) {
    let ready = Arc::new(Barrier::new(tasks));
    let running: Vec<_> = (0..tasks)
        .map(|task| {
            let (mutex, entries, ready, who) =
                (mutex.clone(), entries.clone(), ready.clone(), format!("{name} {task}"));
            tokio::spawn(async move {
                ready.wait().await;
                for _ in 0..rounds {
                    let guard = mutex.acquire().await.unwrap();
                    // Reentrancy stays per task: no wait, the same token.
                    let again = mutex.acquire_timeout(Duration::ZERO).await.unwrap().expect("the holder re-enters");
                    assert_eq!(again.fencing_token(), guard.fencing_token());
                    drop(again);
                    entries.lock().unwrap().enter(&who, guard.fencing_token());
                    tokio::time::sleep(inside).await;
                    entries.lock().unwrap().exit();
                    guard.release().await.unwrap();
                }
            })
        })
        .collect();
    for task in running {
        tokio::time::timeout(Duration::from_secs(60), task).await.expect("contention never ended").unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_of_one_process_pass_the_hold_up_to_the_bound_with_rising_tokens() {
    let (client, path) = (connect().await, unique_path("handoff-bound"));
    let mutex = handoff_mutex(&client, &path, LocalHandoff::new(4, Duration::from_secs(60)));
    let entries = Arc::new(Mutex::new(Entries::default()));
    contend(&mutex, "task", 6, 6, Duration::from_millis(1), &entries).await;
    let entries = std::mem::take(&mut *entries.lock().unwrap());
    assert!(entries.breaches.is_empty(), "{:#?}", entries.breaches);
    let per_node = entries.holders_per_node();
    assert!(per_node.values().all(|holders| *holders <= 4), "more holders than the bound: {per_node:?}");
    // Six tasks always waiting: every node but the last is passed on to its bound.
    assert!(per_node.values().rev().skip(1).all(|holders| *holders == 4), "handoffs missing: {per_node:?}");
    assert!(children(&client, &path).await.is_empty(), "nodes left behind");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hold_past_the_time_bound_is_not_passed_on() {
    let (client, path) = (connect().await, unique_path("handoff-time"));
    // Every hold lasts 5 ms, longer than the 1 ms bound: each node has a single holder.
    let mutex = handoff_mutex(&client, &path, LocalHandoff::new(256, Duration::from_millis(1)));
    let entries = Arc::new(Mutex::new(Entries::default()));
    contend(&mutex, "task", 3, 3, Duration::from_millis(5), &entries).await;
    let entries = std::mem::take(&mut *entries.lock().unwrap());
    assert!(entries.breaches.is_empty(), "{:#?}", entries.breaches);
    let per_node = entries.holders_per_node();
    assert!(per_node.values().all(|holders| *holders == 1), "passed on past the time bound: {per_node:?}");
    assert_eq!(per_node.len(), 9);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_process_behind_a_busy_cohort_holds_within_the_bound() {
    const BOUND: u32 = 3;
    let path = unique_path("handoff-fair");
    let (busy_client, other_client) = (connect().await, connect().await);
    let busy = handoff_mutex(&busy_client, &path, LocalHandoff::new(BOUND, Duration::from_secs(60)));
    let other = handoff_mutex(&other_client, &path, LocalHandoff::new(BOUND, Duration::from_secs(60)));
    let entries = Arc::new(Mutex::new(Entries::default()));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    // Four tasks of one process keep the lock busy: one of them always waits for it.
    let cohort: Vec<_> = (0..4)
        .map(|task| {
            let (busy, entries, stop) = (busy.clone(), entries.clone(), stop.clone());
            tokio::spawn(async move {
                while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                    let guard = busy.acquire().await.unwrap();
                    entries.lock().unwrap().enter(&format!("busy {task}"), guard.fencing_token());
                    tokio::time::sleep(Duration::from_millis(2)).await;
                    entries.lock().unwrap().exit();
                    guard.release().await.unwrap();
                }
            })
        })
        .collect();
    eventually("the cohort passed a hold on", || async {
        entries.lock().unwrap().holders_per_node().values().any(|holders| *holders > 1)
    })
    .await;
    let guard = other.acquire_timeout(Duration::from_secs(30)).await.unwrap().expect("starved behind the cohort");
    entries.lock().unwrap().enter("other", guard.fencing_token());
    entries.lock().unwrap().exit();
    guard.release().await.unwrap();
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    for task in cohort {
        task.await.unwrap();
    }
    let entries = std::mem::take(&mut *entries.lock().unwrap());
    assert!(entries.breaches.is_empty(), "{:#?}", entries.breaches);
    let per_node = entries.holders_per_node();
    assert!(per_node.values().all(|holders| *holders as u32 <= BOUND), "more holders than the bound: {per_node:?}");
    // The other process's node came before the cohort's next one (tokens rise in entry order),
    // so it waited for the holders of one node at most.
    let other_at = entries.order.iter().position(|(who, _)| who == "other").unwrap();
    assert!(entries.order[other_at + 1..]
        .iter()
        .all(|(_, token)| node_of(*token) > node_of(entries.order[other_at].1)));
    assert!(children(&busy_client, &path).await.is_empty(), "nodes left behind");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_loss_reaches_the_task_the_hold_was_passed_to() {
    let (client, path) = (connect().await, unique_path("handoff-loss"));
    let mutex = handoff_mutex(&client, &path, LocalHandoff::new(8, Duration::from_secs(60)));
    let first = mutex.acquire().await.unwrap();
    let passed_to = tokio::spawn({
        let mutex = mutex.clone();
        async move { mutex.acquire().await.unwrap() }
    });
    // The second task waits in the process, not in ZooKeeper: one node only.
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(children(&client, &path).await.len(), 1);
    let node = first.node_path().to_owned();
    let first_token = first.fencing_token();
    first.release().await.unwrap();
    let second = passed_to.await.unwrap();
    assert_eq!(second.node_path(), node, "the hold was not passed on");
    assert_eq!(second.fencing_token(), first_token + 1);

    let operator = connect().await;
    operator.delete(&node, None).await.unwrap();
    let reason = tokio::time::timeout(Duration::from_secs(10), second.lost()).await.expect("loss not told");
    assert_eq!(reason, LossReason::NodeDeleted);
    assert!(!second.is_held());
    // A lost hold is not passed on: the next task queues a node of its own.
    let third = tokio::spawn({
        let mutex = mutex.clone();
        async move { mutex.acquire().await.unwrap() }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(matches!(second.release().await, Err(Error::LockLost(LossReason::NodeDeleted))));
    let third = tokio::time::timeout(Duration::from_secs(10), third).await.expect("the next task never held").unwrap();
    assert_ne!(third.node_path(), node);
    assert!(third.is_held());
    assert!(node_of(third.fencing_token()) > node_of(first_token));
    third.release().await.unwrap();
    assert!(children(&client, &path).await.is_empty(), "nodes left behind");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deletion_before_a_short_hold_ends_is_heard_and_the_node_not_passed_on() {
    let (client, path) = (connect().await, unique_path("handoff-deleted-early"));
    let mutex = handoff_mutex(&client, &path, LocalHandoff::new(8, Duration::from_secs(60)));
    // Uncontended, the first hold has no watch on its node: a hold sets one only after a second.
    let first = mutex.acquire().await.unwrap();
    let held_since = std::time::Instant::now();
    let node = first.node_path().to_owned();
    let waiter = tokio::spawn({
        let mutex = mutex.clone();
        async move { mutex.acquire().await.unwrap() }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    connect().await.delete(&node, None).await.unwrap();
    // A task waits for the hold, so its node is watched: the deletion is heard long before the
    // second after which every hold watches (the hold never asks, so this is that watch).
    while first.is_held() {
        assert!(
            held_since.elapsed() < Duration::from_millis(900),
            "the deletion was not heard in the hold's first second"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    drop(first);
    let waiter = tokio::time::timeout(Duration::from_secs(10), waiter).await.expect("the waiter never held").unwrap();
    assert_ne!(waiter.node_path(), node, "the hold was passed on on a deleted node");
    assert!(waiter.is_held());
    waiter.release().await.unwrap();
    assert!(children(&client, &path).await.is_empty(), "nodes left behind");
}

/// Polls `future` once, leaving it pending (it joins the line).
async fn poll_once<F: Future + Unpin>(future: &mut F) {
    std::future::poll_fn(|cx| {
        assert!(std::pin::Pin::new(&mut *future).poll(cx).is_pending(), "resolved at once");
        Poll::Ready(())
    })
    .await;
}

/// A mutex whose every acquire is a participant of its own, so that one task can play
/// holder and waiters.
fn one_task_plays_all(client: &Client, path: &str) -> InterProcessMutex {
    let bound = LocalHandoff::new(8, Duration::from_secs(60));
    InterProcessMutex::builder(client, path).local_handoff(bound).reentrant(false).build().unwrap()
}

#[tokio::test]
async fn a_local_waiter_dropped_after_the_hold_was_passed_to_it_passes_it_on() {
    let (client, path) = (connect().await, unique_path("handoff-dropped"));
    let mutex = one_task_plays_all(&client, &path);
    let holder = mutex.acquire().await.unwrap();
    let node = holder.node_path().to_owned();
    // Two waiters in line; the first is given the hold, then dropped before it takes it.
    let mut dropped = Box::pin(mutex.acquire());
    poll_once(&mut dropped).await;
    let mut next = Box::pin(mutex.acquire());
    poll_once(&mut next).await;
    drop(holder);
    drop(dropped);
    let next = tokio::time::timeout(Duration::from_secs(10), next).await.expect("the hold was stranded").unwrap();
    assert_eq!(next.node_path(), node, "the hold was not passed on to the next waiter");

    // Given to a waiter dropped with nobody behind it, the node is deleted.
    let mut dropped = Box::pin(mutex.acquire());
    poll_once(&mut dropped).await;
    drop(next);
    drop(dropped);
    eventually("the node was deleted", || async { children(&client, &path).await.is_empty() }).await;
    let other = InterProcessMutex::new(&connect().await, &path).unwrap();
    let held = tokio::time::timeout(Duration::from_secs(10), other.acquire()).await.expect("stranded").unwrap();
    held.release().await.unwrap();
}

#[tokio::test]
async fn local_waiters_that_give_up_leave_nothing() {
    let (client, path) = (connect().await, unique_path("handoff-give-up"));
    let mutex = one_task_plays_all(&client, &path);
    let holder = mutex.acquire().await.unwrap();
    let waiter = tokio::spawn({
        let mutex = mutex.clone();
        async move { mutex.acquire().await.map(drop) }
    });
    tokio::time::sleep(Duration::from_millis(20)).await;
    // A try never waits behind a task of ours, a timeout gives up in line, an abort leaves it.
    assert!(mutex.try_acquire().await.unwrap().is_none());
    assert!(mutex.acquire_timeout(Duration::from_millis(30)).await.unwrap().is_none());
    waiter.abort();
    assert!(waiter.await.unwrap_err().is_cancelled());
    assert_eq!(children(&client, &path).await, vec![holder.node_path().rsplit('/').next().unwrap().to_owned()]);
    // Another process queued behind us gets the lock on release: nothing was left in line.
    let other = InterProcessMutex::new(&connect().await, &path).unwrap();
    let other_acquire = tokio::spawn(async move { other.acquire().await.unwrap().release().await });
    eventually("the other process queued", || async { children(&client, &path).await.len() == 2 }).await;
    holder.release().await.unwrap();
    tokio::time::timeout(Duration::from_secs(10), other_acquire).await.expect("stranded").unwrap().unwrap();
    let again = mutex.try_acquire().await.unwrap().expect("the line is free again");
    again.release().await.unwrap();
    assert!(children(&client, &path).await.is_empty(), "nodes left behind");
}

#[tokio::test]
async fn a_bound_outside_the_token_format_is_refused() {
    let client = connect().await;
    for bound in [
        LocalHandoff::new(1, Duration::from_secs(1)),
        LocalHandoff::new(257, Duration::from_secs(1)),
        LocalHandoff::new(8, Duration::ZERO),
    ] {
        let built = InterProcessMutex::builder(&client, "/zklock-tests/handoff-bad").local_handoff(bound).build();
        assert!(matches!(built, Err(Error::InvalidOptions(_))), "{bound:?}");
        let built =
            InterProcessReadWriteLock::builder(&client, "/zklock-tests/handoff-bad").local_handoff(bound).build();
        assert!(matches!(built, Err(Error::InvalidOptions(_))), "{bound:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_side_passes_its_hold_and_readers_wait_their_turn() {
    let (client, path) = (connect().await, unique_path("handoff-write"));
    let lock = InterProcessReadWriteLock::builder(&client, &path)
        .local_handoff(LocalHandoff::new(8, Duration::from_secs(60)))
        .build()
        .unwrap();
    let writer = lock.write_lock().acquire().await.unwrap();
    let next_writer = tokio::spawn({
        let lock = lock.clone();
        async move { lock.write_lock().acquire().await.unwrap() }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    let reader_client = connect().await;
    let reader_lock = zklock::InterProcessReadWriteLock::new(&reader_client, &path).unwrap();
    let reader = tokio::spawn(async move { reader_lock.read_lock().acquire().await.unwrap().release().await });
    eventually("the reader queued", || async { children(&client, &path).await.len() == 2 }).await;
    let (node, token) = (writer.node_path().to_owned(), writer.fencing_token());
    writer.release().await.unwrap();
    let next_writer = next_writer.await.unwrap();
    assert_eq!((next_writer.node_path(), next_writer.fencing_token()), (node.as_str(), token + 1));
    assert!(!reader.is_finished(), "a reader held beside a writer");
    next_writer.release().await.unwrap();
    tokio::time::timeout(Duration::from_secs(10), reader).await.expect("the reader starved").unwrap().unwrap();
}

#[tokio::test]
async fn a_local_waiter_fails_promptly_when_the_session_ends() {
    let path = unique_path("handoff-expired");
    let proxy = Proxy::start(server().address()).unwrap();
    let client = connect_through(&proxy, Duration::from_secs(20)).await;
    let mutex = one_task_plays_all(&client, &path);
    let holder = mutex.acquire().await.unwrap();
    let waiter = tokio::spawn({
        let mutex = mutex.clone();
        async move { mutex.acquire().await.map(drop) }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    expire_session(&client, &proxy).await.unwrap();
    // The holder keeps its guard: the waiter in the process must not wait for it.
    let outcome = tokio::time::timeout(Duration::from_secs(10), waiter).await.expect("the local waiter hung").unwrap();
    assert!(matches!(outcome, Err(Error::SessionExpired)), "{outcome:?}");
    assert!(!holder.is_held());
    assert!(matches!(mutex.acquire().await, Err(Error::SessionExpired)));
    drop(holder);
}
