//! Taking a place in a queue and waiting for our turn, or for room.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use zookeeper_client::{Client, Error as ZkError, EventType};

use super::deadlock::DeadlockWatch;
use super::listing::children_or_none;
use super::node::{create_node, FirstLook, LockNode, NodeCleanup, Place, QueueSpec};
use super::position::PositionReport;
use crate::client::deadline::{cleanup_deadline, within_patience, Patience};
use crate::client::retry::{is_transient, retry_transient, RetryPolicy};
use crate::client::session_end::{check_session_ended, SessionEnd};
use crate::error::{Error, LossReason, Result};
use crate::rules::decide::{decide, Decision};
use crate::rules::opening::{after_hold, Opening, Proof, Waited};
use crate::rules::path::child_path;

/// Puts a node of ours in the queue and waits until the rule lets it hold. Returns the node, and
/// what that hold lets the participant's next acquire send with its create once the hold's
/// delete is confirmed. See [`enter`].
///
/// A plain function, not an async one: a state of its own around `enter`'s would be one more
/// level that every acquire copies whole.
pub(crate) fn take_place<'s>(
    spec: &'s QueueSpec<'s>,
    patience: Patience,
) -> impl Future<Output = Result<Option<(LockNode, Opening)>>> + 's {
    enter(spec, patience, std::future::pending())
}

/// Creates a lease node (`spec.rule` is [`Rule::Leases`](crate::rules::decide::Rule::Leases))
/// while the semaphore's mutex is held, and waits until the directory has room for it, as
/// Curator's `InterProcessSemaphoreV2` does; `gate_lost` resolves once that hold of the mutex is
/// lost, and ends the wait with what it resolves to. See [`enter`].
///
/// # Errors
/// [`Error::LockLost`] (`NodeDeleted`) when our lease node, or the mutex's node it is taken
/// under, is deleted by someone else: the taker starts over from the mutex (see [`Rule::queues_again`](crate::rules::decide::Rule::queues_again)).
pub(crate) async fn take_lease(
    spec: &QueueSpec<'_>,
    patience: Patience,
    gate_lost: impl Future<Output = Error>,
) -> Result<Option<LockNode>> {
    Ok(enter(spec, patience, gate_lost).await?.map(|(node, _)| node))
}

/// Puts a node of ours in the queue (`spec`) and waits until its rule lets it hold, or until
/// `gate_lost` resolves (a lease's gate; pending for everyone else). Returns the node and what
/// the hold lets the next acquire open with.
///
/// Returns `Ok(None)` when `patience` runs out; our node is deleted before that returns (when
/// ZooKeeper answers within `CLEANUP_AFTER_DEADLINE`), and before an error returns. If our node
/// is deleted by someone else while we wait, we queue again with a new node, as Curator does,
/// unless the rule says otherwise.
///
/// # Cancel safety
/// Dropping the future at any point leaves no node behind: a cleanup armed before the create
/// deletes it (or finds it by its protected prefix first) in a spawned task.
async fn enter(
    spec: &QueueSpec<'_>,
    patience: Patience,
    gate_lost: impl Future<Output = Error>,
) -> Result<Option<(LockNode, Opening)>> {
    let mut gate_lost = std::pin::pin!(gate_lost);
    loop {
        let random = uuid::Uuid::new_v4();
        // `{lock_path}/{prefix}`, written once: the create sends it, the cleanup and the report
        // name the prefix within it.
        let prefixed = spec.schema.protected_path(spec.lock_path, &spec.mark.map_or(random, |mark| mark.uuid(random)));
        let prefix = &prefixed[spec.lock_path.len() + 1..];
        let mut cleanup = NodeCleanup::new(spec.client, spec.retry, spec.lock_path, prefix);
        // Only an election asks: a lock's acquire allocates nothing for it.
        let report = |node: Option<&str>| {
            if let Some(place) = spec.place {
                place.send_replace(Some(Place { prefix: prefix.into(), node: node.map(Arc::from), retry: spec.retry }));
            }
        };
        report(None);
        // Pinned here and bounded by reference, at one await: a bound that took the create by
        // value would hold it twice in its state (an async fn's argument and its await), and a
        // create awaited at two points (one bound each) is kept beside every later step's state;
        // every level above copies what this state holds on every acquire.
        let outcome = 'outcome: {
            // The create's outcome taken apart within its own block: a value matched in place
            // would be kept, whole, beside every later step's state.
            let (mut node, first, proof) = {
                let create = std::pin::pin!(create_node(spec, &prefixed, &mut cleanup));
                match within_patience(patience, spec.client, create).await {
                    Some(Ok(created)) => created,
                    None => break 'outcome Ok(None),
                    Some(Err(err)) => break 'outcome Err(err),
                }
            };
            report(Some(&node.path));
            // The first look decides most acquires (a free lock): held without building the
            // wait, whose state machine is large and is boxed only when it is needed.
            let (held, first) = held_at_first_look(spec, &node, first, proof);
            if let Some(next_opening) = held {
                return cleanup.settle(Ok(Some((node, next_opening))), cleanup_deadline(patience)).await;
            }
            let turn = Box::pin(wait_turn(spec, &mut node, first, proof, patience, gate_lost.as_mut()));
            match within_patience(patience, spec.client, turn).await {
                Some(Ok(WaitOutcome::Hold(next_opening))) => Ok(Some((node, next_opening))),
                Some(Ok(WaitOutcome::GaveUp)) | None => Ok(None),
                Some(Err(err)) => Err(err),
            }
        };
        // A downgrade's `NodeDeleted` is its write node's (`stands_beside`): that hold is lost,
        // and there is nothing to queue again for.
        if !spec.rule.queues_again() || spec.level_with.is_some() || !queues_again(&outcome, spec.client) {
            return cleanup.settle(outcome, cleanup_deadline(patience)).await;
        }
    }
}

/// The hold a first look proves (our node alone, as the create proved, or first by the rule in
/// the listing sent with it), with what the next acquire may open with; else the look, the
/// listing in queue order ([`FirstLook::Queued`]), for [`wait_turn`], which decides again from
/// it without sorting it again (a waiter in a queue of hundreds would sort it twice).
fn held_at_first_look(
    spec: &QueueSpec<'_>,
    node: &LockNode,
    first: FirstLook,
    proof: Proof,
) -> (Option<Opening>, FirstLook) {
    let children = match first {
        FirstLook::Alone => {
            return (Some(after_hold(&[node.name()], &node.ours(), Waited::No, proof)), FirstLook::Nothing)
        }
        FirstLook::Listing(children) => spec.rule.queue(spec.schema, children),
        FirstLook::Queued(queue) => queue,
        other => return (None, other),
    };
    match decide(&children, node.name(), spec.rule) {
        Decision::Hold => (Some(after_hold(&children, &node.ours(), Waited::No, proof)), FirstLook::Nothing),
        _ => (None, FirstLook::Queued(children)),
    }
}

/// Whether an acquire whose outcome this is queues again with a new node: its node was deleted
/// by someone else while it waited, and the session lives (as Curator does). A semaphore asks it
/// of a whole attempt, which starts over from its mutex.
pub(crate) fn queues_again<T>(outcome: &Result<T>, client: &Client) -> bool {
    match outcome {
        Err(Error::LockLost(LossReason::NodeDeleted)) if check_session_ended(client).is_none() => {
            tracing::debug!("our queue node was deleted while waiting; queueing again");
            true
        }
        _ => false,
    }
}

#[derive(Debug)]
enum WaitOutcome {
    /// Holds; what the next acquire may open with.
    Hold(Opening),
    GaveUp,
}

/// Waits until the rule lets `node` hold, watching only the one node the decision names (and,
/// once it is gone, our own). `first` is what came back with the create.
///
/// The invariant: we hold only on a node of ours that exists when the hold begins. A listing
/// that shows our node first proves it; a succession without a listing proves it by a read of
/// our own node sent once the predecessor is gone (see [`succeeds_predecessor`]).
async fn wait_turn<G: Future<Output = Error>>(
    spec: &QueueSpec<'_>,
    node: &mut LockNode,
    first: FirstLook,
    proof: Proof,
    patience: Patience,
    mut gate_lost: Pin<&mut G>,
) -> Result<WaitOutcome> {
    let mut look = first;
    let mut waited = Waited::No;
    let mut watches =
        Watches { report: PositionReport::for_this_task(), deadlock: spec.deadlock.map(DeadlockWatch::new) };
    loop {
        // In queue order: as the first look left it, or sorted here.
        let children = match std::mem::replace(&mut look, FirstLook::Nothing) {
            FirstLook::Queued(queue) => queue,
            FirstLook::Listing(children) => spec.rule.queue(spec.schema, children),
            // (`Alone` holds at the first look, before this wait.) No lock path: it went, and
            // our node with it.
            FirstLook::Nothing | FirstLook::Alone => {
                spec.rule.queue(spec.schema, children_or_none(spec.client, spec.retry, spec.lock_path).await?)
            }
        };
        let watch = match decide(&children, node.name(), spec.rule) {
            Decision::Hold => return Ok(WaitOutcome::Hold(after_hold(&children, &node.ours(), waited, proof))),
            Decision::Missing => return Err(Error::LockLost(LossReason::NodeDeleted)),
            Decision::WaitForRoom => None,
            Decision::Watch { predecessor, holds_when_gone } => {
                Some((child_path(spec.lock_path, predecessor), holds_when_gone))
            }
        };
        // The listing is dropped before we wait: with a long queue every waiter would keep a copy
        // of it (a thousand waiters, a thousand listings of a thousand names).
        drop(children);
        if patience == Patience::NoWait {
            return Ok(WaitOutcome::GaveUp);
        }
        waited = Waited::Yes;
        let Some((predecessor, holds_when_gone)) = watch else {
            look = FirstLook::Listing(
                following(&mut watches, spec, node, room_changes(spec, node, gate_lost.as_mut())).await?,
            );
            continue;
        };
        if !holds_when_gone {
            following(&mut watches, spec, node, predecessor_goes(spec.client, spec.retry, &predecessor)).await?;
            continue;
        }
        if following(&mut watches, spec, node, succeeds_predecessor(spec.client, spec.retry, node, &predecessor))
            .await?
        {
            // Held without a listing: nothing known of who is behind.
            return Ok(WaitOutcome::Hold(Opening::Unknown));
        }
    }
}

/// What a wait looks at besides its queue's turn, each only when asked for: the queue's every
/// change for a watched acquire ([`watch_queue`](crate::queue::position::watch_queue)), and the
/// deadlocks under a root for an acquire built to fail on one. Made when the acquire starts
/// waiting and kept through its wait (the deadlock look keeps its period across the waits for
/// one predecessor after another).
struct Watches<'a> {
    report: Option<PositionReport>,
    deadlock: Option<DeadlockWatch<'a>>,
}

/// `wait`, while a watched acquire follows every change of its queue and tells where it stands,
/// and an acquire built to fail on a deadlock looks for one ([`Error::Deadlock`] when our node
/// is its victim); the wait alone when neither is asked for.
async fn following<T>(
    watches: &mut Watches<'_>,
    spec: &QueueSpec<'_>,
    node: &LockNode,
    wait: impl Future<Output = Result<T>>,
) -> Result<T> {
    if watches.report.is_none() && watches.deadlock.is_none() {
        return wait.await;
    }
    // In sequence order for every rule, leases too (their rule only counts them): the nodes
    // ahead of a lease taker are the leases standing.
    let sort = |children| spec.schema.contenders(children);
    // Boxed: each is an opt-in's, and its state machine (a deadlock look reads a whole tree,
    // twice) would otherwise be part of every wait's, moved on every acquire of every lock.
    let report = async {
        match &watches.report {
            Some(report) => {
                match Box::pin(report.follow(spec.client, spec.retry, spec.lock_path, node.name(), sort)).await {}
            }
            None => std::future::pending().await,
        }
    };
    let deadlock = async {
        match &mut watches.deadlock {
            Some(deadlock) => Box::pin(deadlock.until_victim(spec.client, spec.retry, &node.path)).await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        biased;
        done = wait => done,
        never = report => never,
        victim = deadlock => Err(victim),
    }
}

/// Waits for a change among a semaphore's leases, the directory full when last listed, and
/// returns a listing taken after it (or at once, when the watch's own listing already decides
/// otherwise). Every waiter watches the directory, as in Curator; only the holder of the
/// semaphore's mutex waits here. Ends with what `gate_lost` resolves to, should the gate go.
async fn room_changes<G: Future<Output = Error>>(
    spec: &QueueSpec<'_>,
    node: &LockNode,
    gate_lost: Pin<&mut G>,
) -> Result<Vec<String>> {
    let (listed, watcher) =
        match retry_transient(spec.retry, || spec.client.list_and_watch_children(spec.lock_path)).await {
            Ok(listing) => listing,
            Err(ZkError::NoNode) => return Err(Error::LockLost(LossReason::NodeDeleted)),
            Err(err) => return Err(Error::zookeeper("watch", spec.lock_path, err)),
        };
    if decide(&listed, node.name(), spec.rule) != Decision::WaitForRoom {
        return Ok(listed);
    }
    let event = tokio::select! {
        event = watcher.changed() => event,
        err = gate_lost => return Err(err),
    };
    if let Some(end) = SessionEnd::of_state(event.session_state) {
        return Err(end.error());
    }
    // The directory may have gone (its last nodes deleted, and it with them or by the server's
    // container reaper), and our lease with it: an empty listing, which says so.
    children_or_none(spec.client, spec.retry, spec.lock_path).await
}

/// Waits for `predecessor`, the last node ahead of ours that keeps us out, to go; `true` when
/// our node succeeds it: the predecessor is gone and our node provably still exists after its
/// deletion. `false`: list again (the predecessor changed without going, or the proof is
/// missing).
///
/// Why our node is read only once the predecessor is gone, and why that proves it: one
/// transaction (`multi`, as `zkCli deleteall` sends) may delete the predecessor and our node
/// together, and its watch events reach us one frame apart; no event seen yet for our node
/// proves nothing. The server applies a transaction, queueing every watch event it fires, before
/// it runs a request that arrives after it, and it answers a session in order: so the reply to a
/// read sent once the predecessor's deletion is known finds our node only if no transaction up
/// to that deletion, its own included, deleted it. Across a reconnection the server answering
/// may be another one, behind the one that told us of the deletion, so any change of the
/// connection's state since the predecessor was watched voids the proof: the listing decides.
/// The read sets no watch: one would fire on our own delete, an event for every hold, where a
/// hold that wants its node watched (after a second, or `lost()`) sets it then.
///
/// # Errors
/// [`Error::LockLost`] (`NodeDeleted`) when our node is gone (the queue then takes a new one); a
/// session's end; what the requests return that is not transient.
async fn succeeds_predecessor(client: &Client, retry: RetryPolicy, node: &LockNode, predecessor: &str) -> Result<bool> {
    let mut connection = client.state_watcher();
    if !predecessor_goes(client, retry, predecessor).await? {
        return Ok(false);
    }
    match client.check_stat(&node.path).await {
        Ok(Some(_)) => Ok(ready_now(connection.changed()).is_none()),
        Ok(None) => Err(Error::LockLost(LossReason::NodeDeleted)),
        Err(err) if is_transient(&err) => Ok(false),
        Err(err) => Err(Error::zookeeper("read", &node.path, err)),
    }
}

/// What `future` resolves to if it is ready at its first poll.
fn ready_now<F: Future>(future: F) -> Option<F::Output> {
    match std::pin::pin!(future).poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(output) => Some(output),
        Poll::Pending => None,
    }
}

/// Waits for a change to `predecessor`; `true` when it is gone, `false` when it changed. The
/// session's end is an error.
///
/// A getData watch, as Curator sets: on a node that is already gone it fails with `NoNode` and
/// leaves no watch behind (an exists-watch would stay, waiting for a creation).
async fn predecessor_goes(client: &Client, retry: RetryPolicy, predecessor: &str) -> Result<bool> {
    let watcher = match retry_transient(retry, || client.get_and_watch_data(predecessor)).await {
        Ok((_, _, watcher)) => watcher,
        Err(ZkError::NoNode) => return Ok(true),
        Err(err) => return Err(Error::zookeeper("watch", predecessor, err)),
    };
    let event = watcher.changed().await;
    match SessionEnd::of_state(event.session_state) {
        Some(end) => Err(end.error()),
        None => Ok(event.event_type == EventType::NodeDeleted),
    }
}
