//! The election's participant: one mutex taken term after term in a task.
//!
//! What a leader latch and a leader selector share: each hold of the mutex is a term of leadership,
//! as Curator builds its `LeaderSelector` on an `InterProcessMutex` (and its `LeaderLatch` is the
//! same queue under another node name).
//!
//! A term ends when leadership is lost (under the mutex's [`LossPolicy`](crate::LossPolicy)),
//! when the leader's work (`lead`) finishes, panics or is interrupted, or when the participant is
//! closed or dropped; the term is told how first ([`Leadership::ended`]), then our node is
//! deleted. After a loss the participant queues again with a new node while the session lives
//! (Curator's `reset`), so every term, even two of one participant, has its own node and a
//! greater fencing token. A zookeeper-client session cannot be renewed: a participant on a
//! [`Session`](crate::Session) queues again on the session's next client, as Curator's do on their framework's new session;
//! on a plain `Client` the session's end ends it. The stages and their moves are `stage.rs`.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;

use crate::client::session_end::{check_session_ended, wait_session_gone};
use crate::election::leadership::Leadership;
use crate::election::stage::{Moved, Stage};
use crate::election::state::ElectionState;
use crate::election::term_end::{EndSignal, TermEnd};
use crate::error::{Error, Result};
use crate::hold::Hold;
use crate::lock::mutex::{InterProcessMutex, MutexBuilder};
use crate::queue::node::PlaceReport;
use crate::queue::queue_node::QueueNode;

/// One participant of a leader election and the task that keeps it in.
#[derive(Debug)]
pub(crate) struct Election {
    /// On a `Session` when the participant rejoins after an expiry: its acquires ride over one.
    mutex: InterProcessMutex,
    path: String,
    id: String,
    /// Whether a term that ended (other than by leaving) queues again at once, with a new node;
    /// otherwise the participant waits for [`requeue`](Self::requeue).
    auto_requeue: bool,
    stage: watch::Sender<Stage>,
    /// `stage` as `subscribe` tells it, published with every change of it.
    public: watch::Sender<ElectionState>,
    /// Held through each `update`, so that `public` tells the changes in the order they were
    /// made without being taken while `stage`'s lock is held (a subscriber holding `public`'s
    /// read lock may read `stage`).
    updating: Mutex<()>,
    /// Our node in the queue while we wait or lead (its prefix as soon as its create may be
    /// sent); `start` returns once it is there, leaving removes what may exist of it.
    place: PlaceReport,
    /// Set once a node of ours was in the queue: `start` returns then, even if a first term that
    /// ended at once cleared `place` before `start` looked.
    entered: watch::Sender<bool>,
    /// Why the participant leaves for good (`close`, or its handle dropped), once it does.
    leaving: EndSignal,
}

impl Election {
    /// An election over the mutex `builder` makes, for the participant `id`.
    pub(crate) fn new(builder: MutexBuilder, id: String, auto_requeue: bool) -> Result<Self> {
        let mutex = builder.build()?;
        Ok(Election {
            path: mutex.path().to_owned(),
            mutex,
            id,
            auto_requeue,
            stage: watch::Sender::new(Stage::NotStarted),
            public: watch::Sender::new(ElectionState::Idle),
            updating: Mutex::new(()),
            place: watch::Sender::new(None),
            entered: watch::Sender::new(false),
            leaving: EndSignal::new(),
        })
    }

    /// Makes the move `change` and publishes the stage to subscribers if it changed, in the
    /// order of the moves (every move holds `updating`, so a move reads the stage it changes).
    fn update<T>(&self, change: impl FnOnce(&mut Stage) -> Moved<T>) -> T {
        let _updating = self.updating.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let mut stage = self.stage.borrow().clone();
        let moved = change(&mut stage);
        if moved.changed {
            let seen = stage.seen();
            self.stage.send_replace(stage);
            self.public.send_if_modified(|public| {
                let changed = *public != seen;
                if changed {
                    *public = seen;
                }
                changed
            });
        }
        moved.outcome
    }

    /// Where we stand, told at every change.
    pub(crate) fn subscribe(&self) -> watch::Receiver<ElectionState> {
        self.public.subscribe()
    }

    pub(crate) fn id(&self) -> &str {
        &self.id
    }

    pub(crate) fn path(&self) -> &str {
        &self.path
    }

    /// Joins the election: spawns the task that takes terms and runs `lead` in each, and returns
    /// once our node is in the queue (or with the error that kept it out).
    pub(crate) async fn start<F, Fut>(self: &Arc<Self>, lead: F) -> Result<()>
    where
        F: FnMut(Leadership) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.update(Stage::start)?;
        tokio::spawn(take_terms(Arc::clone(self), lead));
        let (mut place, mut entered) = (self.place.subscribe(), self.entered.subscribe());
        let mut stage = self.stage.subscribe();
        tokio::select! {
            // The senders live in `self`: these resolve only on what they wait for.
            _ = place.wait_for(|place| place.as_ref().is_some_and(|place| place.node.is_some())) => Ok(()),
            _ = entered.wait_for(|entered| *entered) => Ok(()),
            over = stage.wait_for(Stage::is_over) => match over.as_deref() {
                Ok(Stage::Ended(err)) => Err(err.clone()),
                _ => Err(Error::ElectionClosed),
            },
        }
    }

    /// Waits until we lead, and returns the term.
    pub(crate) async fn await_leadership(&self) -> Result<Leadership> {
        let mut stage = self.stage.subscribe();
        loop {
            match &*stage.borrow_and_update() {
                Stage::NotStarted => return Err(Error::ElectionNotStarted),
                Stage::Leaving | Stage::Closed(_) => return Err(Error::ElectionClosed),
                Stage::Ended(err) => return Err(err.clone()),
                // A term lost a moment ago is not handed out; the task is about to end it.
                Stage::Leading(leadership) if leadership.is_held() => return Ok(leadership.clone()),
                Stage::Queued | Stage::Leading(_) | Stage::Idle => {}
            }
            // The sender lives in `self`, so this only returns on a change.
            let _ = stage.changed().await;
        }
    }

    /// [`await_leadership`](Self::await_leadership) within `timeout`: `Ok(None)` when it passed.
    pub(crate) async fn await_leadership_timeout(&self, timeout: Duration) -> Result<Option<Leadership>> {
        match tokio::time::timeout(timeout, self.await_leadership()).await {
            Ok(leadership) => leadership.map(Some),
            Err(_elapsed) => Ok(None),
        }
    }

    /// The current term, if we lead.
    pub(crate) fn leadership(&self) -> Option<Leadership> {
        match &*self.stage.borrow() {
            Stage::Leading(leadership) if leadership.is_held() => Some(leadership.clone()),
            _ => None,
        }
    }

    /// Every participant in queue order, the leader first.
    pub(crate) async fn participants(&self) -> Result<Vec<QueueNode>> {
        self.mutex.participants_with_data().await
    }

    /// Ends the current term at once, if we lead; the task then deletes its node.
    pub(crate) fn interrupt(&self) {
        let leading = match &*self.stage.borrow() {
            Stage::Leading(leadership) => Some(leadership.clone()),
            _ => None,
        };
        if let Some(leadership) = leading {
            self.end_term(&leadership, TermEnd::Interrupted);
        }
    }

    /// Ends `term` with `end` (unless it had ended already) and moves on from it, if it is still
    /// the current one: queued again, idle until `requeue`, or leaving. Returns how it ended.
    fn end_term(&self, term: &Leadership, end: TermEnd) -> TermEnd {
        let end = term.end(end);
        self.update(|stage| stage.term_ended(term, end, self.auto_requeue));
        end
    }

    /// Queues again after a term ended: `Ok(true)` if we were idle (or our term had ended and we
    /// were about to be), `Ok(false)` if we are already queued or leading.
    pub(crate) fn requeue(&self) -> Result<bool> {
        self.update(|stage| stage.requeue(self.auto_requeue))
    }

    /// Leaves the election: ends the term or the wait, and returns once our node is gone (the
    /// task saw its delete through), or once the session can no longer be alive. Returns the
    /// error that had ended the election by itself, if one did.
    pub(crate) async fn close(&self) -> Result<()> {
        // A session that ended before `close` ended the election by itself, even if the task has
        // not seen it yet (unless the election rides over it, on a `Session`).
        let ended = check_session_ended(&self.mutex.client()).filter(|err| !self.rides_over(err));
        self.update(Stage::close)?;
        self.stop(TermEnd::Closed);
        let mut stage = self.stage.subscribe();
        let left = tokio::select! {
            // The sender lives in `self`: this resolves only once the task has left.
            left = stage.wait_for(|stage| matches!(stage, Stage::Closed(_))) => match left.as_deref() {
                Ok(Stage::Closed(outcome)) => outcome.clone(),
                _ => Ok(()),
            },
            () = self.wait_session_gone() => Ok(()),
        };
        match ended {
            Some(err) => Err(err),
            None => left,
        }
    }

    /// Leaves the election without waiting (a dropped latch or selector, or `close`, as `how`):
    /// ends the current term at once and tells the task to delete our node and stop.
    pub(crate) fn stop(&self, how: TermEnd) {
        self.leaving.set(how);
        self.update(|stage| stage.leave(how));
    }

    /// Resolves with how we leave, once we do.
    async fn leaving(&self) -> TermEnd {
        self.leaving.told().await
    }

    fn is_leaving(&self) -> bool {
        self.leaving.get().is_some()
    }

    /// Whether the election goes on after `err` ended its session: on a `Session`, an expiry
    /// is followed by the next session.
    fn rides_over(&self, err: &Error) -> bool {
        self.mutex.connection().rides_over::<()>(&Err(err.clone()))
    }

    /// Resolves once the session our node may be on can no longer be alive: it ended, or it has
    /// been disconnected for a full session timeout (the server expires a session it has not
    /// heard from for that long, and deletes its ephemeral nodes; the client last heard from
    /// the server before both, so the server's count started no later than ours). On a
    /// `Session`, the session of the client it has when this resolves is the one that counts.
    async fn wait_session_gone(&self) {
        loop {
            let client = self.mutex.client();
            wait_session_gone(&mut client.state_watcher(), Some(client.session_timeout())).await;
            if self.mutex.client().session_id() == client.session_id() {
                return;
            }
        }
    }
}

/// The participant's task: queue, lead, end the term, and again, until the participant leaves
/// or the session ends (on a `Session`, an expiry is ridden over by the next acquire); then it
/// deletes what may exist of our node and says how it left.
async fn take_terms<F, Fut>(election: Arc<Election>, mut lead: F)
where
    F: FnMut(Leadership) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let mutex = &election.mutex;
    let ended = loop {
        let acquired = tokio::select! {
            biased;
            _ = election.leaving() => break None,
            acquired = mutex.acquire_reporting(Some(&election.place)) => acquired,
        };
        let guard = match acquired {
            Ok(guard) => guard,
            Err(err) => {
                election.place.send_replace(None);
                break Some(err);
            }
        };
        election.entered.send_replace(true);
        let leadership = Leadership::new(Arc::clone(guard.held_node()));
        election.update(|stage| stage.lead(&leadership));
        mutex.label().leadership_taken(&election.id, leadership.fencing_token());
        let end = tokio::select! {
            biased;
            end = leadership.ended_unwatched() => end,
            how = election.leaving() => how,
            // Called inside `caught`, so that a closure that panics when called ends the term
            // as work that panics does.
            finished = caught(async { lead(leadership.clone()).await }) => match finished {
                Ok(()) => TermEnd::Finished,
                Err(_panic) => {
                    tracing::error!(target: "zklock", path = election.path(), id = %election.id, "the leader's work panicked; the term ends");
                    TermEnd::Panicked
                }
            },
        };
        // Told before our node goes, so before anyone else can lead.
        let end = election.end_term(&leadership, end);
        election.place.send_replace(None);
        match guard.release().await {
            Ok(()) | Err(Error::LockLost(_)) => {}
            Err(err) => {
                tracing::debug!(target: "zklock", path = election.path(), error = %err.with_causes(), "ending the term")
            }
        }
        mutex.label().leadership_ended(&election.id, leadership.fencing_token(), &end);
        if election.is_leaving() {
            break None;
        }
        if let Some(err) = check_session_ended(&mutex.client()).filter(|err| !election.rides_over(err)) {
            break Some(err);
        }
        // Idle until `requeue` (or leaving) moves us on.
        let _ = election.stage.subscribe().wait_for(|stage| !matches!(stage, Stage::Idle)).await;
    };
    // Leaving: what a create or a wait cut short may have left is seen through here, so that
    // nobody finds us in the queue once `close` returns. (A lost term's node, if the server
    // still has it, is deleted in the background or with the session.)
    let removed = match election.place.send_replace(None) {
        Some(place) => place.delete(&mutex.client(), election.path()).await,
        None => Ok(()),
    };
    if let (Some(err), false) = (&ended, election.is_leaving()) {
        mutex.label().left_election(&election.id, err);
    }
    election.update(|stage| {
        *stage = match ended {
            // Left, even if the session ended while we did: its end took our node with it.
            _ if election.is_leaving() => Stage::Closed(removed),
            Some(err) => Stage::Ended(err),
            None => Stage::Closed(removed),
        };
        Moved::to(true, ())
    });
}

/// Runs `work`, turning a panic into `Err` (as Curator catches what `takeLeadership` throws):
/// a leader's work that panics, or the closure that makes it, ends its term, not the
/// participant's task.
async fn caught<Fut: Future<Output = ()>>(work: Fut) -> std::thread::Result<()> {
    let mut work = std::pin::pin!(work);
    std::future::poll_fn(|cx| match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work.as_mut().poll(cx))) {
        Ok(std::task::Poll::Pending) => std::task::Poll::Pending,
        Ok(std::task::Poll::Ready(())) => std::task::Poll::Ready(Ok(())),
        Err(panic) => std::task::Poll::Ready(Err(panic)),
    })
    .await
}
