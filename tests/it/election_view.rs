//! Watching an election without joining it (`LeaderView`): the first reading, a leader change,
//! a leader's session expiring, its node deleted by an operator, a selector's election, and the
//! view's own session expiring.

use crate::common;
use crate::election;

use std::time::Duration;

use common::{connect, unique_path};
use election::*;
use zklock::election::LeaderView;
use zklock::hold::Hold;
use zklock::{Error, LeaderSelector};
use zklock_testcontainers::expire_session;

/// A bound against a hang, not a timing.
const HANG: Duration = Duration::from_secs(20);

/// The next change the view tells, within [`HANG`]: the leader's id, or `None`.
async fn next(view: &mut LeaderView) -> Option<String> {
    let told = tokio::time::timeout(HANG, view.changed()).await.expect("the view told nothing");
    told.unwrap().map(|leader| leader.id())
}

#[tokio::test]
async fn a_leader_change_is_told_with_the_leaders_token() {
    let path = unique_path("view-change");
    let mut view = LeaderView::latch(&connect().await, &path).unwrap();
    assert_eq!(next(&mut view).await, None, "no election at the path yet");
    let (_a_client, a) = started_latch(&path, "a").await;
    let a_term = leads(&a).await;
    assert_eq!(next(&mut view).await.as_deref(), Some("a"));
    let leader = view.leader().unwrap();
    assert_eq!((leader.fencing_token, leader.node_path.as_str()), (a_term.fencing_token(), a_term.node_path()));
    let (_b_client, b) = started_latch(&path, "b").await;
    a.close().await.unwrap();
    assert_eq!(next(&mut view).await.as_deref(), Some("b"), "b leads once a left");
    let b_term = leads(&b).await;
    assert_eq!(view.leader().unwrap().fencing_token, b_term.fencing_token());
    assert!(b_term.fencing_token() > a_term.fencing_token());
    b.close().await.unwrap();
    assert_eq!(next(&mut view).await, None, "nobody leads once both left");
}

#[tokio::test]
async fn a_leaders_expired_session_passes_the_lead_and_the_view_follows() {
    let path = unique_path("view-expiry");
    let (proxy, a_client) = expirable_session().await;
    let a = zklock::LeaderLatch::new(&a_client, &path, "a").unwrap();
    a.start().await.unwrap();
    let _a_term = leads(&a).await;
    let (_b_client, _b) = started_latch(&path, "b").await;
    let mut view = LeaderView::latch(&connect().await, &path).unwrap();
    assert_eq!(next(&mut view).await.as_deref(), Some("a"));
    expire_session(&a_client, &proxy).await.unwrap();
    assert_eq!(next(&mut view).await.as_deref(), Some("b"));
}

#[tokio::test]
async fn a_leaders_node_deleted_by_an_operator_is_told() {
    let path = unique_path("view-deleted");
    let (_a_client, a) = started_latch(&path, "a").await;
    let a_term = leads(&a).await;
    let (_b_client, _b) = started_latch(&path, "b").await;
    let mut view = LeaderView::latch(&connect().await, &path).unwrap();
    assert_eq!(next(&mut view).await.as_deref(), Some("a"));
    connect().await.delete(a_term.node_path(), None).await.unwrap();
    // b leads; a queues again behind it.
    assert_eq!(next(&mut view).await.as_deref(), Some("b"));
}

#[tokio::test]
async fn a_selectors_election_is_followed_too() {
    let path = unique_path("view-selector");
    let client = connect().await;
    let (started, mut work_started) = tokio::sync::mpsc::unbounded_channel::<()>();
    let selector = LeaderSelector::new(&client, &path, "worker").unwrap();
    selector
        .start(move |_term| {
            let _ = started.send(());
            std::future::pending::<()>()
        })
        .await
        .unwrap();
    work_started.recv().await.unwrap();
    let mut view = LeaderView::selector(&connect().await, &path).unwrap();
    assert_eq!(next(&mut view).await.as_deref(), Some("worker"));
    selector.close().await.unwrap();
    assert_eq!(next(&mut view).await, None);
}

#[tokio::test]
async fn a_view_on_a_client_stops_with_that_clients_expiry() {
    let path = unique_path("view-own-expiry");
    let (_a_client, _a) = started_latch(&path, "a").await;
    let (proxy, view_client) = expirable_session().await;
    let mut view = LeaderView::latch(&view_client, &path).unwrap();
    assert_eq!(next(&mut view).await.as_deref(), Some("a"));
    expire_session(&view_client, &proxy).await.unwrap();
    let told = tokio::time::timeout(HANG, view.changed()).await.expect("the view told nothing");
    assert!(matches!(told, Err(Error::SessionExpired)), "{told:?}");
    assert!(matches!(view.changed().await, Err(Error::SessionExpired)), "and from then on");
}

#[tokio::test]
async fn a_view_on_a_session_goes_on_across_its_expiry() {
    let path = unique_path("view-session");
    let (_a_client, a) = started_latch(&path, "a").await;
    let (_b_client, _b) = started_latch(&path, "b").await;
    let (proxy, session, mut states, _observer) = common::session::expirable().await;
    let mut view = LeaderView::latch(&session, &path).unwrap();
    assert_eq!(next(&mut view).await.as_deref(), Some("a"));
    common::session::expire(&session, &proxy, &mut states).await;
    a.close().await.unwrap();
    assert_eq!(next(&mut view).await.as_deref(), Some("b"), "told on the next session");
}

#[tokio::test]
async fn a_leader_proclaims_data_the_view_tells_and_a_lost_term_cannot() {
    let path = unique_path("view-proclaim");
    let (_a_client, a) = started_latch(&path, "a").await;
    let a_term = leads(&a).await;
    let (_b_client, b) = started_latch(&path, "b").await;
    let mut view = LeaderView::latch(&connect().await, &path).unwrap();
    assert_eq!(next(&mut view).await.as_deref(), Some("a"));
    a_term.proclaim(b"a at 10.0.0.1:8080").await.unwrap();
    let leader = tokio::time::timeout(HANG, view.changed()).await.unwrap().unwrap().unwrap();
    assert_eq!(leader.data, b"a at 10.0.0.1:8080");
    assert_eq!(leader.fencing_token, a_term.fencing_token(), "the same term, with new data");
    connect().await.delete(a_term.node_path(), None).await.unwrap();
    assert_eq!(next(&mut view).await.as_deref(), Some("b"));
    let stale = a_term.proclaim(b"a again").await;
    assert!(matches!(stale, Err(Error::LockLost(_))), "{stale:?}");
    assert_eq!(view.leader().unwrap().id(), "b", "the stale leader's data went nowhere");
    let b_term = leads(&b).await;
    assert_eq!(b_term.node_path(), view.leader().unwrap().node_path);
}
