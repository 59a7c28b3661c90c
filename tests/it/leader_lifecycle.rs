//! How a participant's terms and its membership end, and what it is told: closing and dropping
//! a latch or a selector, interrupting a term, a leader's work that finishes or panics, queueing
//! again after a term, and leaving while a create is in flight.

use crate::common;
use crate::election;

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Waker};
use std::time::Duration;

use common::{children, connect, eventually, unique_path, wait_for_children};
use election::*;
use tokio::sync::watch;
use tokio::sync::{mpsc, oneshot};
use zklock::election::{ElectionState, Leadership, TermEnd};
use zklock::hold::Hold;
use zklock::queue::QueueNode;
use zklock::{Error, LeaderLatch, LeaderSelector, LossReason};

#[tokio::test]
async fn closing_a_queued_latch_or_the_leader_leaves_no_node_and_hands_over() {
    let path = unique_path("leader-close");
    let ([(_, a), (_, b), (observer, c)], a_term) = a_leads_b_and_c_queue(&path).await;
    let [_, b_node, c_node] = <[String; 3]>::try_from(nodes(&observer, &path).await).unwrap();

    // close() returns once the server has deleted the node.
    b.close().await.unwrap();
    assert_eq!(nodes(&observer, &path).await, [a_term.node_path(), c_node.as_str()]);
    assert!(observer.check_stat(&b_node).await.unwrap().is_none());
    assert!(a.has_leadership(), "closing a queued latch disturbed the leader");

    a.close().await.unwrap();
    assert!(!a_term.is_held() && !a.has_leadership());
    assert_eq!(nodes(&observer, &path).await, [c_node.as_str()]);
    let c_term = leads(&c).await;
    assert_eq!(c_term.node_path(), c_node);
    assert!(c_term.fencing_token() > a_term.fencing_token());
    expect_ended(&a_term, TermEnd::Closed).await;

    c.close().await.unwrap();
    assert!(children(&observer, &path).await.is_empty());
    c.close().await.expect("close is idempotent");
}

#[tokio::test]
async fn dropping_a_started_latch_leaves_the_election() {
    let path = unique_path("leader-dropped");
    let ([(_, a), (_, b), (observer, c)], a_term) = a_leads_b_and_c_queue(&path).await;
    drop(c);
    wait_for_children(&observer, &path, 2).await;
    drop(a);
    let b_term = leads(&b).await;
    assert!(b_term.fencing_token() > a_term.fencing_token());
    assert!(!a_term.is_held());
    assert_eq!(nodes(&observer, &path).await, [b_term.node_path()]);
    b.close().await.unwrap();
}

#[tokio::test]
async fn interrupting_leadership_drops_the_future_and_requeue_leads_again() {
    let path = unique_path("selector-interrupt");
    let (Contender { client, selector, mut terms }, first) = lone_leader(&path, "s").await;
    assert!(selector.has_leadership());
    assert!(!selector.requeue().unwrap(), "requeued while leading");

    selector.interrupt_leadership();
    let first = first.expect_cancelled().await;
    wait_for_children(&client, &path, 0).await;
    assert!(!first.is_held() && !selector.has_leadership());
    expect_ended(&first, TermEnd::Interrupted).await;
    selector.interrupt_leadership(); // not leading: nothing to interrupt
    assert!(tokio::time::timeout(Duration::from_millis(300), terms.recv()).await.is_err(), "led again unasked");

    assert!(selector.requeue().unwrap());
    let second = next_term(&mut terms).await;
    assert!(second.leadership.fencing_token() > first.fencing_token());
    assert!(!selector.requeue().unwrap(), "requeued while leading");
    selector.close().await.unwrap();
    second.expect_cancelled().await;
    assert!(children(&client, &path).await.is_empty());
}

#[tokio::test]
async fn a_finished_lead_future_ends_the_term_and_hands_over() {
    let path = unique_path("selector-finished");
    let client = connect().await;
    let selector = LeaderSelector::new(&client, &path, "brief").unwrap();
    let (sender, mut terms) = mpsc::unbounded_channel();
    let (finish, finished) = oneshot::channel::<()>();
    let mut finished = Some(finished);
    selector
        .start(move |leadership| {
            let (sender, finished) = (sender.clone(), finished.take());
            async move {
                let _ = sender.send(leadership);
                if let Some(finished) = finished {
                    let _ = finished.await;
                }
            }
        })
        .await
        .unwrap();
    let leadership = tokio::time::timeout(PROMPTLY, terms.recv()).await.unwrap().unwrap();
    let other_client = connect().await;
    let (other, mut other_terms) = started_selector(&other_client, &path, "other", false).await;
    wait_for_children(&client, &path, 2).await;
    assert!(leadership.is_held(), "the term ended before its future did");

    finish.send(()).unwrap();
    let other_term = next_term(&mut other_terms).await;
    assert!(other_term.leadership.fencing_token() > leadership.fencing_token());
    assert!(!leadership.is_held() && !selector.has_leadership());
    expect_ended(&leadership, TermEnd::Finished).await;
    // Without auto-requeue the selector waits to be queued again.
    assert_eq!(nodes(&client, &path).await, [other_term.leadership.node_path()]);
    selector.close().await.unwrap();
    other.close().await.unwrap();
}

/// `requeue()` as soon as `interrupt_leadership()` returned, or once `has_leadership()` is false
/// (as the docs say), queues the selector: it never answers `Ok(false)` ("already queued or
/// leading") for a term that is ending, which left the selector idle.
#[tokio::test]
async fn requeue_right_after_an_interrupt_queues_the_selector_again() {
    let path = unique_path("selector-interrupt-requeue");
    let (Contender { selector, mut terms, .. }, mut term) = lone_leader(&path, "s").await;
    for round in 0..4 {
        selector.interrupt_leadership();
        if round % 2 == 1 {
            eventually("the interrupted term reads as ended", || async { !selector.has_leadership() }).await;
        }
        assert!(selector.requeue().unwrap(), "round {round}: requeue() refused while the interrupted term ended");
        let next = next_term(&mut terms).await;
        assert!(next.leadership.fencing_token() > term.leadership.fencing_token(), "round {round}");
        term.expect_cancelled().await;
        term = next;
    }
    selector.close().await.unwrap();
}

#[tokio::test]
async fn dropping_a_leading_selector_cancels_its_future_and_leaves_the_election() {
    let path = unique_path("selector-dropped");
    let (Contender { client, selector, .. }, term, mut other) = leader_and_follower(&path, true).await;
    drop(selector);
    let leadership = term.expect_cancelled().await;
    let other_term = next_term(&mut other.terms).await;
    assert!(other_term.leadership.fencing_token() > leadership.fencing_token());
    assert_eq!(nodes(&client, &path).await, [other_term.leadership.node_path()]);
    other.selector.close().await.unwrap();
}

#[tokio::test]
async fn with_auto_requeue_selectors_queue_again_by_themselves() {
    let path = unique_path("selector-auto-requeue");
    let (mut first, term, mut second) = leader_and_follower(&path, true).await;
    let client = first.client.clone();

    first.selector.interrupt_leadership();
    let first_epoch = term.expect_cancelled().await.fencing_token();
    // first queued again, behind second, which leads.
    let term = next_term(&mut second.terms).await;
    assert!(term.leadership.fencing_token() > first_epoch);
    wait_for_children(&client, &path, 2).await;
    let queue = second.selector.participants().await.unwrap();
    assert_eq!(queue.iter().map(QueueNode::id).collect::<Vec<_>>(), ["follower", "leader"]);

    second.selector.interrupt_leadership();
    let second_epoch = term.expect_cancelled().await.fencing_token();
    let term = next_term(&mut first.terms).await;
    assert!(term.leadership.fencing_token() > second_epoch);
    // second queued again too (closing it while its create is in flight is another test's).
    wait_for_children(&client, &path, 2).await;

    first.selector.close().await.unwrap();
    term.expect_cancelled().await;
    second.selector.close().await.unwrap();
    assert!(children(&client, &path).await.is_empty());
}

#[tokio::test]
async fn closing_a_leading_selector_cancels_the_future_and_leaves_no_node() {
    let path = unique_path("selector-close");
    let (Contender { client, selector, .. }, mut term, mut other) = leader_and_follower(&path, true).await;

    selector.close().await.unwrap();
    // close() returns once the future is dropped and the node deleted.
    assert!(term.future_dropped.try_recv().is_err_and(|err| err == oneshot::error::TryRecvError::Closed));
    assert!(!term.leadership.is_held());
    let other_term = next_term(&mut other.terms).await;
    assert_eq!(nodes(&client, &path).await, [other_term.leadership.node_path()]);
    assert!(matches!(selector.requeue(), Err(Error::ElectionClosed)));
    other.selector.close().await.unwrap();
}

/// `close()` right after `requeue()` stops the task while the new node's create may be in
/// flight: `close` must find that node by its prefix and see its delete through, not leave it to
/// the acquire's background cleanup. The delays sweep the window.
#[tokio::test]
async fn closing_a_selector_while_it_queues_again_leaves_no_node() {
    let path = unique_path("selector-close-requeueing");
    let client = connect().await;
    for delay_us in [0, 200, 500, 1_000, 2_000, 3_000, 5_000].into_iter().cycle().take(21) {
        let (selector, mut terms) = started_selector(&client, &path, "s", false).await;
        let term = next_term(&mut terms).await;
        selector.interrupt_leadership();
        term.expect_cancelled().await;
        wait_for_children(&client, &path, 0).await;
        assert!(selector.requeue().unwrap());
        tokio::time::sleep(Duration::from_micros(delay_us)).await;
        selector.close().await.unwrap();
        let left = children(&client, &path).await;
        assert!(left.is_empty(), "close() returned with our node still there ({delay_us} us after requeue): {left:?}");
    }
}

/// After a loss the latch re-enters at once, so `close()` called as the loss is seen (the
/// latch's own doc example) stops it while that create is in flight; as above, `close` must not
/// return before that node is gone.
#[tokio::test]
async fn closing_a_latch_as_its_loss_is_seen_leaves_no_node() {
    let path = unique_path("leader-close-after-loss");
    let (client, operator) = (connect().await, connect().await);
    for round in 0..5 {
        let latch = LeaderLatch::new(&client, &path, "l").unwrap();
        latch.start().await.unwrap();
        let leadership = leads(&latch).await;
        operator.delete(leadership.node_path(), None).await.unwrap();
        assert_eq!(
            tokio::time::timeout(PROMPTLY, leadership.ended()).await,
            Ok(TermEnd::Lost(LossReason::NodeDeleted))
        );
        latch.close().await.unwrap();
        let left = children(&client, &path).await;
        assert!(left.is_empty(), "round {round}: close() returned with our new node still there: {left:?}");
    }
}

/// A panic in the leader's work must end its term, not the selector's task (which would leave
/// the selector out of the election for good).
#[tokio::test]
async fn a_leaders_work_that_panics_ends_its_term_and_the_selector_leads_again() {
    let path = unique_path("selector-panicking-work");
    let client = connect().await;
    let selector = LeaderSelector::builder(&client, &path, "p").auto_requeue(true).build().unwrap();
    let (terms, mut led) = mpsc::unbounded_channel();
    let mut term = 0;
    selector
        .start(move |leadership| {
            term += 1;
            let (terms, this_term) = (terms.clone(), term);
            async move {
                terms.send(leadership).unwrap();
                if this_term == 1 {
                    panic!("the leader's work fails in its first term");
                }
                std::future::pending::<()>().await
            }
        })
        .await
        .unwrap();
    let first = led.recv().await.unwrap();
    let second = tokio::time::timeout(PROMPTLY, led.recv()).await.expect("no second term").unwrap();
    assert!(!first.is_held() && second.is_held(), "{first:?} {second:?}");
    assert_eq!(first.end_reason(), Some(TermEnd::Panicked));
    assert!(second.fencing_token() > first.fencing_token());
    selector.close().await.unwrap();
    assert!(children(&client, &path).await.is_empty());
}

/// A closure that panics when called, before it returns the leader's work, must end that term
/// like work that panics, not the selector's task (which left the selector out of the election
/// for good while `requeue` and `close` said all was well).
#[tokio::test]
async fn a_lead_closure_that_panics_when_called_ends_its_term_and_the_selector_leads_again() {
    let path = unique_path("selector-panicking-closure");
    let client = connect().await;
    let selector = LeaderSelector::new(&client, &path, "p").unwrap();
    let (terms, mut led) = mpsc::unbounded_channel();
    let mut calls = 0;
    selector
        .start(move |leadership| {
            calls += 1;
            terms.send(leadership).unwrap();
            assert!(calls > 1, "the closure fails when called for the first term");
            std::future::pending::<()>()
        })
        .await
        .unwrap();
    let first = tokio::time::timeout(PROMPTLY, led.recv()).await.expect("no first term").unwrap();
    wait_for_children(&client, &path, 0).await;
    assert!(!first.is_held());
    assert_eq!(first.end_reason(), Some(TermEnd::Panicked));
    assert!(selector.requeue().unwrap(), "the selector is not waiting to be queued again");
    let second = tokio::time::timeout(PROMPTLY, led.recv()).await.expect("no second term").unwrap();
    assert!(second.is_held() && second.fencing_token() > first.fencing_token());
    selector.close().await.unwrap();
    assert!(children(&client, &path).await.is_empty());
}

/// A `close()` cancelled after its first poll (a timeout around it during a partition) still
/// leaves: the latch reads as closed at once (`await_leadership` and `start` say so, instead of
/// handing out the term being closed, waiting for ever, or refusing as "already started"), its
/// node goes and the next one leads.
#[tokio::test]
async fn a_cancelled_close_still_leaves_and_the_latch_reads_as_closed() {
    let path = unique_path("leader-close-cancelled");
    let (client, a) = started_latch(&path, "a").await;
    let a_term = leads(&a).await;
    let (_b_client, b) = started_latch(&path, "b").await;
    let _ = pin!(a.close()).poll(&mut Context::from_waker(Waker::noop()));

    let awaited = tokio::time::timeout(PROMPTLY, a.await_leadership()).await.expect("await_leadership() hung");
    assert!(matches!(awaited, Err(Error::ElectionClosed)), "{awaited:?}");
    assert!(matches!(a.start().await, Err(Error::ElectionClosed)));
    let b_term = leads(&b).await;
    assert!(b_term.fencing_token() > a_term.fencing_token());
    assert_eq!(nodes(&client, &path).await, [b_term.node_path()]);
    let closed = tokio::time::timeout(PROMPTLY, a.close()).await.expect("a second close() hung");
    assert!(closed.is_ok(), "{closed:?}");
    b.close().await.unwrap();
}

/// Cut off from ZooKeeper, a leader's `close()` returns Ok once its session can no longer be alive
/// (a session timeout of disconnection: the server has expired it, and our node with it), not
/// the session's expiry that the client reports later, and the next participant leads.
#[tokio::test]
async fn closing_a_leader_cut_off_from_zookeeper_returns_ok_once_its_session_cannot_be_alive() {
    let path = unique_path("leader-close-partitioned");
    let cut_off = leader_to_cut_off(&path).await;
    cut_off.cut_off_and_close().await;
    let LeaderToCutOff { proxy, a, a_term, observer, b, .. } = &cut_off;
    assert!(!a_term.is_held() && !a.has_leadership());
    proxy.heal();
    let b_term = leads(b).await;
    assert_eq!(nodes(observer, &path).await, [b_term.node_path()]);
    b.close().await.unwrap();
}

/// Waits (bounded) for `term.lost()`, which must resolve with `end`; from then on the term
/// reads as ended, and how.
async fn expect_ended(term: &Leadership, end: TermEnd) {
    let told = tokio::time::timeout(PROMPTLY, term.ended()).await;
    assert_eq!(told, Ok(end), "lost() did not resolve as it should");
    assert_eq!(term.end_reason(), Some(end));
    assert!(!term.is_held(), "{end}: still held");
}

/// Every way a term is given up resolves `lost()`, so that leader work watching it from a task of
/// its own stops: a latch closed or dropped; a selector interrupted, closed or dropped, and its
/// work finished.
#[tokio::test]
async fn lost_resolves_when_a_term_is_given_up_whatever_ended_it() {
    let path = unique_path("leader-given-up");
    let (_, latch) = started_latch(&path, "closed").await;
    let term = leads(&latch).await;
    latch.close().await.unwrap();
    expect_ended(&term, TermEnd::Closed).await;

    let (_, latch) = started_latch(&path, "dropped").await;
    let term = leads(&latch).await;
    drop(latch);
    expect_ended(&term, TermEnd::Dropped).await;

    let (Contender { selector, mut terms, .. }, term) = lone_leader(&path, "selector").await;
    selector.interrupt_leadership();
    expect_ended(&term.leadership, TermEnd::Interrupted).await;
    assert!(selector.requeue().unwrap());
    let term = next_term(&mut terms).await;
    selector.close().await.unwrap();
    expect_ended(&term.leadership, TermEnd::Closed).await;

    let (Contender { selector, .. }, term) = lone_leader(&path, "dropped selector").await;
    drop(selector);
    expect_ended(&term.leadership, TermEnd::Dropped).await;

    let client = connect().await;
    let selector = LeaderSelector::new(&client, &path, "finished").unwrap();
    let (sender, mut finished) = mpsc::unbounded_channel();
    selector
        .start(move |leadership| {
            sender.send(leadership).unwrap();
            std::future::ready(())
        })
        .await
        .unwrap();
    let term = tokio::time::timeout(PROMPTLY, finished.recv()).await.expect("no term").unwrap();
    expect_ended(&term, TermEnd::Finished).await;
    selector.close().await.unwrap();
    assert!(children(&client, &path).await.is_empty());
}

/// Waits (bounded) until `states` says what `state` accepts, and returns it.
async fn becomes(
    states: &mut watch::Receiver<ElectionState>,
    what: &str,
    state: impl FnMut(&ElectionState) -> bool,
) -> ElectionState {
    let seen = tokio::time::timeout(PROMPTLY, states.wait_for(state)).await.map(|seen| seen.map(|state| state.clone()));
    match seen {
        Ok(seen) => seen.expect("the participant is gone"),
        Err(_elapsed) => panic!("never {what}: {:?}", *states.borrow()),
    }
}

/// A latch's subscription tells, without polling: idle before it starts, queued behind a leader,
/// leading with the epoch of the term it leads (the term handed out by `await_leadership`), queued
/// again and leading again after a loss, and left once closed (the last state: the receiver ends
/// with the latch).
#[tokio::test]
async fn a_latch_subscription_tells_queued_leading_with_its_epoch_and_left() {
    let path = unique_path("leader-subscribed");
    let (_a_client, a) = started_latch(&path, "a").await;
    let a_term = leads(&a).await;
    let client = connect().await;
    let b = LeaderLatch::new(&client, &path, "b").unwrap();
    let mut states = b.subscribe();
    assert!(matches!(*states.borrow_and_update(), ElectionState::Idle));
    b.start().await.unwrap();
    becomes(&mut states, "queued", |state| matches!(state, ElectionState::Queued)).await;

    a.close().await.unwrap();
    let first = becomes(&mut states, "leading", |state| state.fencing_token().is_some()).await;
    let first = first.leadership().unwrap().clone();
    assert!(first.fencing_token() > a_term.fencing_token());
    assert_eq!(leads(&b).await.fencing_token(), first.fencing_token(), "the term told is the term handed out");

    connect().await.delete(first.node_path(), None).await.unwrap();
    let second =
        becomes(&mut states, "leading again", |state| state.fencing_token() > Some(first.fencing_token())).await;
    assert_eq!(first.end_reason(), Some(TermEnd::Lost(LossReason::NodeDeleted)));
    assert!(second.leadership().unwrap().is_held());

    b.close().await.unwrap();
    becomes(&mut states, "left", |state| matches!(state, ElectionState::Left)).await;
    assert_eq!(second.leadership().unwrap().end_reason(), Some(TermEnd::Closed), "left with its term still held");
    drop(b);
    let ended = tokio::time::timeout(PROMPTLY, states.changed()).await.expect("the receiver outlived the latch");
    assert!(ended.is_err(), "a state after Left");
}

/// A selector without auto-requeue is told idle between a term and `requeue`, and left when its
/// session ends by itself; each change comes once, in order.
#[tokio::test]
async fn a_selector_subscription_tells_idle_between_terms_and_left_when_its_session_ends() {
    let path = unique_path("selector-subscribed");
    let (proxy, client) = expirable_session().await;
    let selector = LeaderSelector::new(&client, &path, "s").unwrap();
    let mut states = selector.subscribe();
    let (sender, mut terms) = mpsc::unbounded_channel();
    selector.start(lead_until_cancelled(sender)).await.unwrap();
    let first = next_term(&mut terms).await;
    let leading = becomes(&mut states, "leading", |state| state.fencing_token().is_some()).await;
    assert_eq!(leading.fencing_token(), Some(first.leadership.fencing_token()));

    selector.interrupt_leadership();
    // The term is over before the state moves on from it.
    assert!(matches!(*states.borrow_and_update(), ElectionState::Idle));
    assert_eq!(first.leadership.end_reason(), Some(TermEnd::Interrupted));
    assert!(selector.requeue().unwrap());
    assert!(matches!(*states.borrow_and_update(), ElectionState::Queued));
    let second = next_term(&mut terms).await;
    let leading = becomes(&mut states, "leading again", |state| state.fencing_token().is_some()).await;
    assert_eq!(leading.fencing_token(), Some(second.leadership.fencing_token()));

    zklock_testcontainers::expire_session(&client, &proxy).await.unwrap();
    becomes(&mut states, "left", |state| matches!(state, ElectionState::Left)).await;
    assert_eq!(second.leadership.end_reason(), Some(TermEnd::Lost(LossReason::SessionExpired)));
    assert!(matches!(selector.close().await, Err(Error::SessionExpired)));
}
