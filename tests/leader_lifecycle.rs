//! How a participant's terms and its membership end, and what it is told: closing and dropping
//! a latch or a selector, interrupting a term, a leader's work that finishes or panics, queueing
//! again after a term, and leaving while a create is in flight.

mod common;
mod election;

use std::time::Duration;

use common::{children, connect, unique_path, wait_for_children};
use election::*;
use tokio::sync::{mpsc, oneshot};
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
    assert!(c_term.epoch() > a_term.epoch());
    // Given up by its owner, a term is not lost: lost() stays pending.
    assert!(tokio::time::timeout(Duration::from_millis(100), a_term.lost()).await.is_err());

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
    assert!(b_term.epoch() > a_term.epoch());
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
    assert!(tokio::time::timeout(Duration::from_millis(100), first.lost()).await.is_err(), "given up is not lost");
    selector.interrupt_leadership(); // not leading: nothing to interrupt
    assert!(tokio::time::timeout(Duration::from_millis(300), terms.recv()).await.is_err(), "led again unasked");

    assert!(selector.requeue().unwrap());
    let second = next_term(&mut terms).await;
    assert!(second.leadership.epoch() > first.epoch());
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
    assert!(other_term.leadership.epoch() > leadership.epoch());
    assert!(!leadership.is_held() && !selector.has_leadership());
    assert!(tokio::time::timeout(Duration::from_millis(100), leadership.lost()).await.is_err(), "finished is not lost");
    // Without auto-requeue the selector waits to be queued again.
    assert_eq!(nodes(&client, &path).await, [other_term.leadership.node_path()]);
    selector.close().await.unwrap();
    other.close().await.unwrap();
}

#[tokio::test]
async fn requeue_after_an_interrupt_leads_again_once_the_term_has_ended() {
    let path = unique_path("selector-interrupt-requeue");
    let (Contender { client, selector, mut terms }, first) = lone_leader(&path, "s").await;
    selector.interrupt_leadership();
    let requeued = selector.requeue();
    let first = first.expect_cancelled().await;
    // Either it is queued again now, or it said it was not: then asking again once idle works.
    if !requeued.unwrap() {
        wait_for_children(&client, &path, 0).await;
        assert!(selector.requeue().unwrap(), "requeue() said 'already queued or leading' and then stayed idle");
    }
    let second = next_term(&mut terms).await;
    assert!(second.leadership.epoch() > first.epoch());
    selector.close().await.unwrap();
}

#[tokio::test]
async fn dropping_a_leading_selector_cancels_its_future_and_leaves_the_election() {
    let path = unique_path("selector-dropped");
    let (Contender { client, selector, .. }, term, mut other) = leader_and_follower(&path, true).await;
    drop(selector);
    let leadership = term.expect_cancelled().await;
    let other_term = next_term(&mut other.terms).await;
    assert!(other_term.leadership.epoch() > leadership.epoch());
    assert_eq!(nodes(&client, &path).await, [other_term.leadership.node_path()]);
    other.selector.close().await.unwrap();
}

#[tokio::test]
async fn with_auto_requeue_selectors_queue_again_by_themselves() {
    let path = unique_path("selector-auto-requeue");
    let (mut first, term, mut second) = leader_and_follower(&path, true).await;
    let client = first.client.clone();

    first.selector.interrupt_leadership();
    let first_epoch = term.expect_cancelled().await.epoch();
    // first queued again, behind second, which leads.
    let term = next_term(&mut second.terms).await;
    assert!(term.leadership.epoch() > first_epoch);
    wait_for_children(&client, &path, 2).await;
    let queue = second.selector.participants().await.unwrap();
    assert_eq!(queue.iter().map(|participant| participant.id.as_str()).collect::<Vec<_>>(), ["follower", "leader"]);

    second.selector.interrupt_leadership();
    let second_epoch = term.expect_cancelled().await.epoch();
    let term = next_term(&mut first.terms).await;
    assert!(term.leadership.epoch() > second_epoch);
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
        assert_eq!(tokio::time::timeout(PROMPTLY, leadership.lost()).await, Ok(LossReason::NodeDeleted));
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
    assert!(second.epoch() > first.epoch());
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
    assert!(selector.requeue().unwrap(), "the selector is not waiting to be queued again");
    let second = tokio::time::timeout(PROMPTLY, led.recv()).await.expect("no second term").unwrap();
    assert!(second.is_held() && second.epoch() > first.epoch());
    selector.close().await.unwrap();
    assert!(children(&client, &path).await.is_empty());
}
