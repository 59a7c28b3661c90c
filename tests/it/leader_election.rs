//! The leader recipes' own rules (their lock contract is in `tests/it/contract.rs`): fencing tokens that
//! fence one leader from the next, what a latch does when its node or its session goes, leaving
//! the election by itself, misuse, the queue as participants see it, Curator's node names; and for
//! the selector, that the leader's future is cancelled the moment leadership is lost. How terms and
//! participants end otherwise is in `tests/it/leader_lifecycle.rs`.

use crate::common;
use crate::election;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{children, connect, connect_through, eventually, server, unique_path, wait_for_children};
use election::*;
use tokio::sync::mpsc;
use zklock::election::{Leadership, TermEnd};
use zklock::hold::Hold;
use zklock::queue::QueueNode;
use zklock::{Error, LeaderLatch, LeaderSelector, LossPolicy, LossReason};
use zklock_testcontainers::{expire_session, Proxy};
use zookeeper_client::Client;

/// Whether `name` is Curator's protected sequential name `_c_{uuid}-{kind}-{10 digits}`.
fn is_curator_name(name: &str, kind: &str) -> bool {
    let Some(rest) = name.strip_prefix("_c_") else { return false };
    let (uuid, rest) = rest.split_at_checked(36).unwrap_or(("", ""));
    let uuid_shape = uuid.len() == 36
        && uuid
            .char_indices()
            .all(|(at, c)| if [8, 13, 18, 23].contains(&at) { c == '-' } else { c.is_ascii_hexdigit() });
    let Some(sequence) = rest.strip_prefix(&format!("-{kind}-")) else { return false };
    uuid_shape && sequence.len() == 10 && sequence.bytes().all(|b| b.is_ascii_digit())
}

/// The node of `path`'s only participant: named as Curator names it, holding `id`.
async fn expect_curator_node(observer: &Client, path: &str, kind: &str, id: &str, leadership: &Leadership) {
    let names = children(observer, path).await;
    assert_eq!(names.len(), 1, "{names:?}");
    assert!(is_curator_name(&names[0], kind), "{} is not _c_{{uuid}}-{kind}-{{10 digits}}", names[0]);
    assert_eq!(leadership.node_path(), format!("{path}/{}", names[0]));
    let (data, stat) = observer.get_data(leadership.node_path()).await.unwrap();
    assert_eq!(data, id.as_bytes(), "the node's data is the participant's id");
    assert_eq!(leadership.fencing_token(), stat.czxid, "the fencing token is the node's czxid");
}

#[test]
fn the_name_check_rejects_what_curator_would_not_write() {
    let uuid = "0f8fad5b-d9cb-469f-a165-70867728950e";
    assert!(is_curator_name(&format!("_c_{uuid}-latch-0000000042"), "latch"));
    assert!(!is_curator_name(&format!("_c_{uuid}-lock-0000000042"), "latch"));
    assert!(!is_curator_name(&format!("_c_{uuid}-latch-000000042"), "latch"));
    assert!(!is_curator_name(&format!("{uuid}-latch-0000000042"), "latch"));
    assert!(!is_curator_name("_c_0f8fad5b-d9cb-469f-a165-70867728950-latch-0000000042", "latch"));
}

#[tokio::test]
async fn fencing_tokens_strictly_increase_from_leader_to_leader() {
    let path = unique_path("leader-tokens");
    let mut latches = Vec::new();
    for party in 0..3 {
        latches.push(started_latch(&path, &format!("party-{party}")).await);
    }
    let observer = connect().await;
    let mut last_token = 0;
    for (index, (_, latch)) in latches.iter().enumerate() {
        let leadership = leads(latch).await;
        assert!(latches.iter().filter(|(_, other)| other.has_leadership()).count() == 1, "two leaders at once");
        let (_, stat) = observer.get_data(leadership.node_path()).await.unwrap();
        assert_eq!(leadership.fencing_token(), stat.czxid, "the fencing token is the leader's node's czxid");
        assert!(
            leadership.fencing_token() > last_token,
            "leader {index}'s fencing token is not above its predecessor's"
        );
        last_token = leadership.fencing_token();
        latch.close().await.unwrap();
        assert!(!leadership.is_held(), "a closed latch's leadership is still held");
    }
    assert!(children(&observer, &path).await.is_empty());
}

#[tokio::test]
async fn a_deleted_node_is_lost_and_the_latch_reenters_to_lead_again_with_a_greater_fencing_token() {
    let path = unique_path("leader-deleted");
    let (_a_client, a) = started_latch(&path, "a").await;
    let first_term = leads(&a).await;
    let (_b_client, b) = started_latch(&path, "b").await;
    wait_for_children(&connect().await, &path, 2).await;
    assert!(tokio::time::timeout(Duration::from_millis(100), first_term.ended()).await.is_err(), "lost while held");

    let operator = connect().await;
    operator.delete(first_term.node_path(), None).await.unwrap();
    let reason = tokio::time::timeout(PROMPTLY, first_term.ended()).await.expect("loss not signalled");
    assert_eq!(reason, TermEnd::Lost(LossReason::NodeDeleted));
    assert!(!first_term.is_held());
    let b_term = leads(&b).await;
    assert!(b_term.fencing_token() > first_term.fencing_token());

    // The session lives, so a re-enters, behind b, with a node of its own.
    eventually("a queued again", || async {
        let participants = b.participants().await.unwrap();
        participants.len() == 2 && participants[1].id() == "a"
    })
    .await;
    let queued = &b.participants().await.unwrap()[1];
    assert_ne!(queued.node_path, first_term.node_path(), "a re-entered with its old node");
    assert!(!a.has_leadership() && a.leadership().is_none());

    b.close().await.unwrap();
    let second_term = leads(&a).await;
    assert_eq!(second_term.node_path(), queued.node_path);
    assert!(second_term.fencing_token() > b_term.fencing_token(), "a's second term is not fenced above b's");
    assert_eq!(
        tokio::time::timeout(Duration::from_millis(100), first_term.ended()).await,
        Ok(reason),
        "a lost term stays lost"
    );
    a.close().await.unwrap();
    assert!(children(&operator, &path).await.is_empty());
}

/// Curator's latch gives leadership up on SUSPENDED and resets on RECONNECTED; here the loss
/// policy decides, and while the old leader's node is still there nobody else leads.
#[tokio::test]
async fn a_leader_cut_off_past_its_policy_is_told_first_then_rejoins_behind_the_next_leader() {
    let path = unique_path("leader-cut-off");
    let proxy = Proxy::start(server().address()).unwrap();
    let a_client = connect_through(&proxy, Duration::from_secs(20)).await;
    let a = LeaderLatch::builder(&a_client, &path, "a")
        .options(zklock::LockOptions::new().loss_policy(LossPolicy::AnyDisconnection))
        .build()
        .unwrap();
    a.start().await.unwrap();
    let first_term = leads(&a).await;
    let (_b_client, b) = started_latch(&path, "b").await;

    proxy.cut();
    let reason = tokio::time::timeout(PROMPTLY, first_term.ended()).await.expect("loss not signalled");
    assert_eq!(reason, TermEnd::Lost(LossReason::Disconnected { after: Duration::ZERO }));
    assert!(!a.has_leadership());
    // The session lives and so does a's node: b must not lead beside a leader that was told.
    assert!(b.await_leadership_timeout(Duration::from_millis(500)).await.unwrap().is_none());
    let observer = connect().await;
    assert!(observer.check_stat(first_term.node_path()).await.unwrap().is_some());

    proxy.heal();
    // a deletes its old node and rejoins with a new one, behind b, who now leads.
    takes_turns_after_a_lost_term(&a, &first_term, &b).await;
    a.close().await.unwrap();
    assert!(children(&observer, &path).await.is_empty());
}

/// After `a` lost `first_term`: `b` (queued behind it) leads with a greater fencing token, `a` rejoins
/// behind `b` with a new node, and once `b` closes, `a` leads again with a greater fencing token still.
async fn takes_turns_after_a_lost_term(a: &LeaderLatch, first_term: &Leadership, b: &LeaderLatch) {
    let b_term = leads(b).await;
    assert!(b_term.fencing_token() > first_term.fencing_token());
    eventually("a rejoined behind b", || async {
        let participants = b.participants().await.unwrap();
        participants.len() == 2 && participants[1].id() == a.id() && participants[1].node_path != first_term.node_path()
    })
    .await;
    b.close().await.unwrap();
    let second_term = leads(a).await;
    assert!(second_term.fencing_token() > b_term.fencing_token());
}

/// Curator's latch joins again on its framework's new session after an expiry; a latch on a
/// `Session` made from a client of ours (`Session::from_client`) does too.
#[tokio::test]
async fn a_latch_on_a_session_from_a_client_leads_again_on_a_new_session() {
    let path = unique_path("leader-rejoins");
    let (proxy, client) = expirable_session().await;
    let connects = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&connects);
    let session = zklock::Session::from_client(client.clone(), move || {
        counted.fetch_add(1, Ordering::SeqCst);
        async { Ok(connect().await) }
    })
    .unwrap();
    let a = LeaderLatch::new(&session, &path, "a").unwrap();
    a.start().await.unwrap();
    let first_term = leads(&a).await;
    let (_b_client, b) = started_latch(&path, "b").await;

    expire_session(&client, &proxy).await.unwrap();
    assert_eq!(tokio::time::timeout(PROMPTLY, first_term.ended()).await, Ok(TermEnd::Lost(LossReason::SessionExpired)));
    takes_turns_after_a_lost_term(&a, &first_term, &b).await;
    assert_eq!(connects.load(Ordering::SeqCst), 1, "one new session");
    a.close().await.unwrap();
    assert!(children(&connect().await, &path).await.is_empty());
}

#[tokio::test]
async fn after_session_expiry_await_leadership_fails_and_the_latches_leave_no_node() {
    let path = unique_path("leader-expired");
    let (proxy, client) = expirable_session().await;
    let leader = LeaderLatch::new(&client, &path, "leader").unwrap();
    leader.start().await.unwrap();
    let leadership = leads(&leader).await;
    let queued = LeaderLatch::new(&client, &path, "queued").unwrap();
    queued.start().await.unwrap();
    let (observer, survivor) = started_latch(&path, "survivor").await;
    assert_eq!(children(&observer, &path).await.len(), 3);

    expire_session(&client, &proxy).await.unwrap();

    let reason = tokio::time::timeout(PROMPTLY, leadership.ended()).await.expect("loss not signalled");
    assert_eq!(reason, TermEnd::Lost(LossReason::SessionExpired));
    assert!(!leadership.is_held() && !leader.has_leadership());
    for latch in [&leader, &queued] {
        let outcome = tokio::time::timeout(PROMPTLY, latch.await_leadership()).await.expect("await hung");
        assert!(matches!(outcome, Err(Error::SessionExpired)), "{}: {outcome:?}", latch.id());
        let outcome = tokio::time::timeout(PROMPTLY, latch.await_leadership_timeout(PROMPTLY)).await.unwrap();
        assert!(matches!(outcome, Err(Error::SessionExpired)), "{}: {outcome:?}", latch.id());
    }
    let survivor_term = leads(&survivor).await;
    assert_eq!(nodes(&observer, &path).await, [survivor_term.node_path()], "the expired latches left nodes");
    // close() reports what ended the latch.
    for latch in [&leader, &queued] {
        let closed = tokio::time::timeout(PROMPTLY, latch.close()).await.expect("close hung");
        assert!(matches!(closed, Err(Error::SessionExpired)), "{}: {closed:?}", latch.id());
    }
    let late = LeaderLatch::new(&client, &path, "late").unwrap();
    let started = tokio::time::timeout(PROMPTLY, late.start()).await.expect("start hung");
    assert!(matches!(started, Err(Error::SessionExpired)), "{started:?}");
    assert_eq!(nodes(&observer, &path).await, [survivor_term.node_path()]);
    survivor.close().await.unwrap();
}

#[tokio::test]
async fn misusing_a_latch_gives_typed_errors() {
    let path = unique_path("leader-misuse");
    let client = connect().await;
    assert!(matches!(LeaderLatch::new(&client, "relative", "id"), Err(Error::InvalidPath { .. })));
    let latch = LeaderLatch::new(&client, &path, "id").unwrap();
    assert!(matches!(latch.await_leadership().await, Err(Error::ElectionNotStarted)));
    assert!(matches!(latch.await_leadership_timeout(PROMPTLY).await, Err(Error::ElectionNotStarted)));
    assert!(matches!(latch.close().await, Err(Error::ElectionNotStarted)));
    assert!(!latch.has_leadership() && latch.leadership().is_none());

    latch.start().await.unwrap();
    assert!(matches!(latch.start().await, Err(Error::ElectionAlreadyStarted)));
    let leadership = leads(&latch).await;
    assert_eq!(latch.leadership().map(|held| held.fencing_token()), Some(leadership.fencing_token()));

    latch.close().await.unwrap();
    assert!(matches!(latch.await_leadership().await, Err(Error::ElectionClosed)));
    assert!(matches!(latch.await_leadership_timeout(PROMPTLY).await, Err(Error::ElectionClosed)));
    assert!(matches!(latch.start().await, Err(Error::ElectionClosed)));
    latch.close().await.expect("close is idempotent");
    assert!(children(&client, &path).await.is_empty());
    assert_eq!((latch.id(), latch.path()), ("id", path.as_str()));
}

/// What everyone sees: the queue in order, the leader first.
fn expected_queue(ids: &[&str], node_paths: &[String]) -> Vec<(String, bool, String)> {
    ids.iter().zip(node_paths).enumerate().map(|(at, (id, node))| ((*id).to_owned(), at == 0, node.clone())).collect()
}

/// Each participant's id, whether it leads (it is first) and its node.
fn seen(participants: Vec<QueueNode>) -> Vec<(String, bool, String)> {
    participants
        .into_iter()
        .enumerate()
        .map(|(at, participant)| (participant.id(), at == 0, participant.node_path))
        .collect()
}

#[tokio::test]
async fn participants_and_leader_list_the_queue_in_order_with_unicode_ids() {
    let path = unique_path("leader-participants");
    let ids = ["first", "zweiter-ü", "λ-三-😀", "with space/and slash"];
    let mut latches = Vec::new();
    for id in ids {
        latches.push(started_latch(&path, id).await);
    }
    let observer = connect().await;
    let node_paths = nodes(&observer, &path).await;
    assert_eq!(node_paths.len(), ids.len());
    for (_, latch) in &latches {
        assert_eq!(
            seen(latch.participants().await.unwrap()),
            expected_queue(&ids, &node_paths),
            "as {} sees it",
            latch.id()
        );
        let leader = latch.leader().await.unwrap().expect("a leader");
        assert_eq!((leader.id(), &leader.node_path), (ids[0].to_owned(), &node_paths[0]));
    }
    // One listing and one multi-read, whoever asks (a latch that never joined too).
    let reader = LeaderLatch::new(&observer, &path, "reader").unwrap();
    let before = server().session_requests(observer.session_id().0).unwrap();
    assert_eq!(seen(reader.participants().await.unwrap()), expected_queue(&ids, &node_paths));
    assert_eq!(server().session_requests(observer.session_id().0).unwrap() - before, 2, "requests to list");

    latches[0].1.close().await.unwrap();
    assert_eq!(seen(latches[3].1.participants().await.unwrap()), expected_queue(&ids[1..], &node_paths[1..]));
    assert_eq!(latches[2].1.leader().await.unwrap().map(|leader| leader.id()), Some(ids[1].to_owned()));
    for (_, latch) in &latches[1..] {
        latch.close().await.unwrap();
    }
    assert_eq!(latches[1].1.participants().await.unwrap(), []);
    assert_eq!(latches[1].1.leader().await.unwrap(), None);
}

#[tokio::test]
async fn latch_nodes_are_named_as_curator_names_them() {
    let path = unique_path("leader-latch-names");
    let id = "curator-named-ü";
    let (client, latch) = started_latch(&path, id).await;
    let leadership = leads(&latch).await;
    expect_curator_node(&client, &path, "latch", id, &leadership).await;
    let (_, stat) = client.get_data(leadership.node_path()).await.unwrap();
    assert_eq!(stat.ephemeral_owner, client.session_id().0);
    latch.close().await.unwrap();
}

#[tokio::test]
async fn a_selectors_lead_future_is_dropped_when_its_node_is_deleted() {
    let path = unique_path("selector-deleted");
    let (Contender { client, selector, .. }, term, mut other) = leader_and_follower(&path, false).await;

    connect().await.delete(term.leadership.node_path(), None).await.unwrap();
    let leadership = term.expect_cancelled().await;
    assert_eq!(tokio::time::timeout(PROMPTLY, leadership.ended()).await, Ok(TermEnd::Lost(LossReason::NodeDeleted)));
    assert!(!leadership.is_held() && !selector.has_leadership());
    let other_term = next_term(&mut other.terms).await;
    assert!(other_term.leadership.fencing_token() > leadership.fencing_token());
    // Without auto-requeue the selector waits to be queued again.
    assert_eq!(nodes(&client, &path).await, [other_term.leadership.node_path()]);
    assert!(selector.requeue().unwrap());
    wait_for_children(&client, &path, 2).await;

    selector.close().await.unwrap();
    other.selector.close().await.unwrap();
    other_term.expect_cancelled().await;
    assert!(children(&client, &path).await.is_empty());
}

#[tokio::test]
async fn a_selectors_lead_future_is_dropped_when_its_session_expires() {
    let path = unique_path("selector-expired");
    let (proxy, client) = expirable_session().await;
    let (selector, mut terms) = started_selector(&client, &path, "s", true).await;
    let term = next_term(&mut terms).await;
    let observer = connect().await;
    let (other, mut other_terms) = started_selector(&observer, &path, "other", false).await;

    expire_session(&client, &proxy).await.unwrap();

    let leadership = term.expect_cancelled().await;
    assert_eq!(tokio::time::timeout(PROMPTLY, leadership.ended()).await, Ok(TermEnd::Lost(LossReason::SessionExpired)));
    assert!(!selector.has_leadership());
    let other_term = next_term(&mut other_terms).await;
    assert_eq!(nodes(&observer, &path).await, [other_term.leadership.node_path()]);
    // It cannot requeue on an expired session, even with auto-requeue: it ended, and says why.
    let closed = tokio::time::timeout(PROMPTLY, selector.close()).await.expect("close hung");
    assert!(matches!(closed, Err(Error::SessionExpired)), "{closed:?}");
    other.close().await.unwrap();
}

#[tokio::test]
async fn misusing_a_selector_gives_typed_errors() {
    let path = unique_path("selector-misuse");
    let client = connect().await;
    let selector = LeaderSelector::new(&client, &path, "s").unwrap();
    assert!(matches!(selector.requeue(), Err(Error::ElectionNotStarted)));
    let (sender, mut terms) = mpsc::unbounded_channel();
    selector.start(lead_until_cancelled(sender.clone())).await.unwrap();
    let started_again = selector.start(lead_until_cancelled(sender)).await;
    assert!(matches!(started_again, Err(Error::ElectionAlreadyStarted)), "{started_again:?}");
    next_term(&mut terms).await;
    selector.close().await.unwrap();
    let (sender, _terms) = mpsc::unbounded_channel();
    assert!(matches!(selector.start(lead_until_cancelled(sender)).await, Err(Error::ElectionClosed)));
    assert!(matches!(selector.requeue(), Err(Error::ElectionClosed)));
    selector.close().await.expect("close is idempotent");
    assert_eq!((selector.id(), selector.path()), ("s", path.as_str()));
}

#[tokio::test]
async fn selector_nodes_are_named_as_curator_names_them() {
    let path = unique_path("selector-names");
    let id = "selector-named-λ";
    let (Contender { client, selector, .. }, term) = lone_leader(&path, id).await;
    expect_curator_node(&client, &path, "lock", id, &term.leadership).await;
    assert_eq!(selector.leader().await.unwrap().map(|leader| leader.id()), Some(id.to_owned()));
    selector.close().await.unwrap();
}

/// The errors are `Clone` (the spec of issue 15): a leadership's outcome may be shared.
#[allow(dead_code)]
fn errors_are_clone(error: &Error) -> Error {
    error.clone()
}
