//! Giving up: a timed-out, tried or dropped acquire leaves no node, wherever it stopped; a
//! dropped release, or a hold dropped on a thread with no runtime, still frees the lock.

use std::future::Future;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use zookeeper_client::{Acls, CreateMode};

use crate::common::{connect, connect_through, unique_path};
use crate::contract::lock::{Held, LockUnderTest};
use crate::contract::support::{nodes, start_proxy, wait_for_nodes, wait_until_queued, PROMPTLY};

/// Early give-ups: before the create is answered, between create and list, while watching.
const GIVE_UP_AFTER_MS: [u64; 5] = [0, 1, 2, 5, 20];

/// The timeout whose length is checked: long enough to be measured, short enough to keep the
/// binary quick.
const MEASURED_TIMEOUT: Duration = Duration::from_millis(300);

/// Timed-out and tried acquires behind a holder return `None`, a timed one no sooner than its
/// timeout, and have deleted what they created by the time they return: only the holder's
/// nodes are left.
pub async fn timeouts_leave_only_the_holders_nodes<L: LockUnderTest>() {
    let path = unique_path("contract-timeout");
    let holder_client = connect().await;
    let holder = L::rival(&holder_client, &path).acquire().await.unwrap();
    let client = connect().await;
    let mut holder_nodes = holder.node_paths();
    holder_nodes.sort();
    wait_for_nodes::<L>(&client, &path, &holder_nodes).await;
    let lock = L::make(&client, &path);
    for timeout in GIVE_UP_AFTER_MS.map(Duration::from_millis).into_iter().chain([MEASURED_TIMEOUT]) {
        let started = Instant::now();
        let outcome = lock.acquire_timeout(timeout).await.unwrap();
        let waited = started.elapsed();
        assert!(outcome.is_none(), "acquired a held lock within {timeout:?}");
        assert!(waited >= timeout, "gave up early: {waited:?} of {timeout:?}");
        // A generous bound: this checks that the timeout is honoured at all, not how fast.
        assert!(waited < timeout + Duration::from_secs(5), "gave up late: {waited:?} of {timeout:?}");
        assert_eq!(nodes::<L>(&client, &path).await, holder_nodes, "a node outlived the timed-out acquire");
        assert_ne!(lock.holds_in_this_process(), Some(true), "timed out, yet held in this process");
    }
    assert!(lock.try_acquire().await.unwrap().is_none(), "tried and acquired a held lock");
    assert_eq!(nodes::<L>(&client, &path).await, holder_nodes, "a node outlived the tried acquire");
    holder.release().await.unwrap();
    let held = lock.try_acquire().await.unwrap().expect("nothing left behind blocks the lock");
    held.release().await.unwrap();
    assert!(nodes::<L>(&client, &path).await.is_empty());
}

/// Acquire futures dropped at every await point, and once queued behind the holder, leave only
/// the holder's nodes.
pub async fn cancelled_acquires_leave_only_the_holders_nodes<L: LockUnderTest>() {
    let path = unique_path("contract-cancel");
    let holder_client = connect().await;
    let holder = L::rival(&holder_client, &path).acquire().await.unwrap();
    let held_nodes = holder.node_paths();
    let client = connect().await;
    let lock = std::sync::Arc::new(L::make(&client, &path));
    for ms in GIVE_UP_AFTER_MS {
        let outcome = tokio::time::timeout(Duration::from_millis(ms), lock.acquire()).await;
        assert!(outcome.is_err(), "acquired a held lock within {ms} ms");
    }
    wait_for_nodes::<L>(&client, &path, &held_nodes).await;

    let queued = tokio::spawn({
        let lock = lock.clone();
        async move { lock.acquire().await.map(drop) }
    });
    wait_until_queued::<L>(&client, &path, held_nodes.len()).await;
    queued.abort();
    assert!(queued.await.unwrap_err().is_cancelled(), "the queued acquire finished behind a holder");
    wait_for_nodes::<L>(&client, &path, &held_nodes).await;

    holder.release().await.unwrap();
    let held = tokio::time::timeout(PROMPTLY, lock.try_acquire()).await.unwrap().unwrap();
    held.expect("nothing left behind blocks the lock").release().await.unwrap();
    assert!(nodes::<L>(&client, &path).await.is_empty());
}

/// Acquires polled by hand, one to four times with the replies left unread between polls, then
/// dropped: the first poll sends the create, later ones see its reply, the listing, and so on.
/// Wherever it stopped, nothing of it stays, and a hold it got is released.
pub async fn an_acquire_dropped_between_polls_leaves_no_node<L: LockUnderTest>() {
    let path = unique_path("contract-cancel-polls");
    let client = connect().await;
    // Persistent directories (no container to be reaped meanwhile), so that the very first
    // poll's create succeeds on the server.
    let persistent = CreateMode::Persistent.with_acls(Acls::anyone_all());
    for dir in L::node_dirs(&path) {
        client.mkdir(&dir, &persistent).await.unwrap();
    }
    let lock = L::make(&client, &path);
    for polls in 1..=4 {
        let mut acquire = Box::pin(lock.acquire());
        let mut context = Context::from_waker(Waker::noop());
        let mut acquired = None;
        for _ in 0..polls {
            if let Poll::Ready(held) = acquire.as_mut().poll(&mut context) {
                acquired = Some(held.unwrap());
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        match acquired {
            Some(held) => held.release().await.unwrap(),
            None => assert_ne!(lock.holds_in_this_process(), Some(true), "dropped, yet held in this process"),
        }
        drop(acquire);
        wait_for_nodes::<L>(&client, &path, &[]).await;
    }
}

/// A release polled once (which sends the delete) and then dropped still frees the lock, for
/// this process at once and for everyone once the delete is answered.
pub async fn a_release_dropped_after_its_first_poll_still_frees_the_lock<L: LockUnderTest>() {
    let_go_each_time::<L>("contract-cancel-release", 3, "the dropped release", |held| {
        let mut release = Box::pin(held.release());
        let mut context = Context::from_waker(Waker::noop());
        assert!(release.as_mut().poll(&mut context).is_pending(), "a delete takes a round trip");
    })
    .await;
}

/// An acquire waiting behind a holder and dropped on a thread with no tokio runtime leaves no
/// node: the cleanup of what it created runs on zklock's own runtime.
pub async fn an_acquire_dropped_on_a_plain_thread_leaves_no_node<L: LockUnderTest>() {
    let path = unique_path("contract-cancel-plain-thread");
    let holder_client = connect().await;
    let holder = L::rival(&holder_client, &path).acquire().await.unwrap();
    let holder_nodes = holder.node_paths();
    let client = connect().await;
    let lock = L::make(&client, &path);
    let mut acquire = Box::pin(lock.acquire());
    tokio::select! {
        held = &mut acquire => panic!("held beside the holder: {:?}", held.map(|held| held.node_paths())),
        () = wait_until_queued::<L>(&client, &path, holder_nodes.len()) => {}
    }
    std::thread::scope(|scope| {
        scope.spawn(move || drop(acquire));
    });
    wait_for_nodes::<L>(&client, &path, &holder_nodes).await;
    holder.release().await.unwrap();
}

/// A hold dropped on a thread with no tokio runtime (a synchronous caller's) frees the lock all
/// the same: its node's delete is sent at once and seen through on zklock's own runtime.
pub async fn a_hold_dropped_on_a_plain_thread_frees_the_lock<L: LockUnderTest>() {
    let_go_each_time::<L>("contract-drop-plain-thread", 2, "a drop on a plain thread", |held| {
        std::thread::spawn(move || drop(held)).join().unwrap();
    })
    .await;
}

/// `rounds` times on a fresh path named after `name`: takes the lock, ends the hold with
/// `let_go` (`how`, for the messages), and checks that the lock is free, for this process at
/// once and for a rival once its node is gone.
async fn let_go_each_time<L: LockUnderTest>(name: &str, rounds: usize, how: &str, let_go: impl Fn(L::Held)) {
    let path = unique_path(name);
    let client = connect().await;
    let lock = L::make(&client, &path);
    let rival_client = connect().await;
    let rival = L::rival(&rival_client, &path);
    for _ in 0..rounds {
        let_go(lock.acquire().await.unwrap());
        assert_ne!(lock.holds_in_this_process(), Some(true), "held in this process after {how}");
        wait_for_nodes::<L>(&client, &path, &[]).await;
        let rival_held = rival.try_acquire().await.unwrap().unwrap_or_else(|| panic!("not free after {how}"));
        rival_held.release().await.unwrap();
    }
}

/// A release dropped while the client is cut off from the server: its delete never arrived,
/// and is sent again once the partition heals, well within the session.
pub async fn a_release_dropped_while_partitioned_is_sent_after_the_partition<L: LockUnderTest>() {
    let path = unique_path("contract-release-partitioned");
    let observer = connect().await;
    let proxy = start_proxy();
    // Its 20 s session outlasts the wait below: a node left behind would still be there.
    let client = connect_through(&proxy, Duration::from_secs(20)).await;
    let held = L::make(&client, &path).acquire().await.unwrap();
    let mut held_nodes = held.node_paths();
    held_nodes.sort();
    wait_for_nodes::<L>(&observer, &path, &held_nodes).await;
    proxy.blackhole();
    let mut release = Box::pin(held.release());
    let mut context = Context::from_waker(Waker::noop());
    assert!(release.as_mut().poll(&mut context).is_pending());
    drop(release);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(nodes::<L>(&observer, &path).await, held_nodes, "the delete never reached the server");
    proxy.heal();
    wait_for_nodes::<L>(&observer, &path, &[]).await;
}
