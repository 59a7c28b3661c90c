//! A term's end as leader work that watches it sees it: a `lost()` already awaited when the term
//! is given up resolves with how it ended, and a cut-off leader's `close()` returns only once its
//! session, and so its node, can no longer be alive.

use crate::common;
use crate::election;

use std::time::{Duration, Instant};

use common::{children, unique_path};
use election::*;
use zklock::election::{Leadership, TermEnd};
use zklock::hold::Hold;

/// Awaits `term.lost()` in a task of its own, as leader work does, and returns that task once
/// it is waiting (the term still held).
async fn watching(term: &Leadership) -> tokio::task::JoinHandle<TermEnd> {
    let watcher = tokio::spawn({
        let term = term.clone();
        async move { term.ended().await }
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!watcher.is_finished() && term.is_held(), "the term ended by itself");
    watcher
}

async fn told(watcher: tokio::task::JoinHandle<TermEnd>) -> TermEnd {
    tokio::time::timeout(PROMPTLY, watcher).await.expect("a pending lost() was never resolved").unwrap()
}

/// Leader work awaiting `lost()` before the term is given up (closed, dropped, interrupted)
/// is told, with the right end, not left waiting.
#[tokio::test]
async fn a_pending_lost_resolves_when_the_term_is_given_up() {
    let path = unique_path("leader-pending-lost");
    let (_, latch) = started_latch(&path, "closed").await;
    let watcher = watching(&leads(&latch).await).await;
    latch.close().await.unwrap();
    assert_eq!(told(watcher).await, TermEnd::Closed);

    let (_, latch) = started_latch(&path, "dropped").await;
    let watcher = watching(&leads(&latch).await).await;
    drop(latch);
    assert_eq!(told(watcher).await, TermEnd::Dropped);

    let (Contender { selector, .. }, term) = lone_leader(&path, "interrupted").await;
    let watcher = watching(&term.leadership).await;
    selector.interrupt_leadership();
    assert_eq!(told(watcher).await, TermEnd::Interrupted);
    selector.close().await.unwrap();
}

/// A leader cut off from ZooKeeper: `close()` waits for its bound (a session timeout of
/// disconnection), after which the server has expired the session; returning sooner would tell
/// the caller it left while its node still stood, and another could not lead yet.
#[tokio::test]
async fn closing_a_cut_off_leader_returns_once_its_node_is_gone() {
    let path = unique_path("leader-close-bound");
    let cut_off = leader_to_cut_off(&path).await;
    let a_node = cut_off.a_term.node_path().rsplit('/').next().unwrap().to_owned();
    let LeaderToCutOff { proxy, observer, b, .. } = &cut_off;

    cut_off.cut_off_and_close().await;
    // The server expires a session within a tick or two of its timeout: by then the node is
    // gone (a close that returned at once would leave it there for the whole session timeout).
    let returned = Instant::now();
    while children(observer, &path).await.contains(&a_node) {
        assert!(returned.elapsed() < Duration::from_millis(1500), "close() returned while our node still stood");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    proxy.heal();
    let b_term = leads(b).await;
    assert_eq!(nodes(observer, &path).await, [b_term.node_path()]);
    b.close().await.unwrap();
}
