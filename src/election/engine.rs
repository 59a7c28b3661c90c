//! What a leader latch and a leader selector share: a participant that takes one mutex over and
//! over in a background task, each hold a term of leadership, as Curator builds its
//! `LeaderSelector` on an `InterProcessMutex` (and its `LeaderLatch` is the same queue under
//! another node name).
//!
//! A term ends when leadership is lost (under the mutex's [`LossPolicy`](crate::LossPolicy)),
//! when the leader's work (`lead`) finishes, panics or is interrupted, or when the participant is
//! closed or dropped; the term is told how first ([`Leadership::lost`]), then our node is
//! deleted. After a loss the participant queues again with a new node while the session lives
//! (Curator's `reset`), so every term, even two of one participant, has its own node and a
//! greater epoch. A zookeeper-client session cannot be renewed: after an expiry the
//! participant connects a new client if it was given a way to (`rejoin_after_expiry`, Curator's
//! behaviour on its framework's new session), and otherwise the session's end ends it.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;
use zookeeper_client::{Client, SessionState};

use crate::election::term_end::EndSignal;
use crate::queue::node::PlaceReport;
use crate::queue::session::{Connect, Session};
use crate::queue::session_end::{ended_session, SessionEnd};
use crate::{ElectionParticipant, ElectionState, Error, InterProcessMutex, Leadership, MutexBuilder, Result, TermEnd};

/// One participant of a leader election and the task that keeps it in.
#[derive(Debug)]
pub(crate) struct Election {
    /// The mutex on the current session; replaced when the election rejoins on a new one.
    mutex: Mutex<InterProcessMutex>,
    /// Makes the mutex again on a new client.
    builder: MutexBuilder,
    /// How to connect a new client once the session expired; `None`: the expiry ends us.
    rejoin: Option<Connect>,
    path: String,
    id: String,
    /// Whether a term that ended (other than by leaving) queues again at once, with a new node;
    /// otherwise the participant waits for [`requeue`](Self::requeue).
    auto_requeue: bool,
    state: watch::Sender<State>,
    /// `state` as `subscribe` tells it, published with every change of it.
    public: watch::Sender<ElectionState>,
    /// Held through each `update`, so that `public` tells the changes in the order they were
    /// made without being taken while `state`'s lock is held (a subscriber holding `public`'s
    /// read lock may read `state`).
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

/// Where a participant stands. Every change of a term's state ends the term first, so that
/// whoever reads the state sees no term held that has ended, and no end of a term untold.
#[derive(Clone, Debug)]
enum State {
    NotStarted,
    Queued,
    Leading(Leadership),
    /// A term ended and the participant waits for `requeue`.
    Idle,
    /// Closed or dropped: the task ends the term, deletes what may exist of our node and stops.
    Leaving,
    /// The session ended, or ZooKeeper refused us, before the participant was closed: the
    /// error says which.
    Ended(Error),
    /// Left after `close` or a drop: `Err` says why our node could not be deleted.
    Closed(Result<()>),
}

impl State {
    /// The state as subscribers see it.
    fn seen(&self) -> ElectionState {
        match self {
            State::NotStarted | State::Idle => ElectionState::Idle,
            State::Queued => ElectionState::Queued,
            State::Leading(leadership) => ElectionState::Leading(leadership.clone()),
            State::Leaving | State::Ended(_) | State::Closed(_) => ElectionState::Left,
        }
    }
}

impl Election {
    /// An election over the mutex `builder` makes, for the participant `id`.
    pub(crate) fn new(builder: MutexBuilder, id: String, auto_requeue: bool, rejoin: Option<Connect>) -> Result<Self> {
        let mutex = builder.clone().build()?;
        // Built on a `Session`, a participant rejoins on the session's next client by default.
        let rejoin = rejoin.or_else(|| builder.connection.session().map(Session::connector));
        Ok(Election {
            path: mutex.path().to_owned(),
            mutex: Mutex::new(mutex),
            builder,
            rejoin,
            id,
            auto_requeue,
            state: watch::Sender::new(State::NotStarted),
            public: watch::Sender::new(ElectionState::Idle),
            updating: Mutex::new(()),
            place: watch::Sender::new(None),
            entered: watch::Sender::new(false),
            leaving: EndSignal::new(),
        })
    }

    /// Changes the state with `change` (which says whether it did), and publishes the change to
    /// subscribers, in the order of the changes.
    fn update(&self, change: impl FnOnce(&mut State) -> bool) {
        let _updating = self.updating.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let mut seen = None;
        self.state.send_if_modified(|state| {
            let changed = change(state);
            if changed {
                seen = Some(state.seen());
            }
            changed
        });
        let Some(seen) = seen else { return };
        self.public.send_if_modified(|public| {
            let changed = !public.is(&seen);
            if changed {
                *public = seen;
            }
            changed
        });
    }

    /// Where we stand, told at every change.
    pub(crate) fn subscribe(&self) -> watch::Receiver<ElectionState> {
        self.public.subscribe()
    }

    /// The mutex on the current session.
    fn mutex(&self) -> InterProcessMutex {
        self.mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).clone()
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
        let mut refused = None;
        self.update(|state| match state {
            State::NotStarted => {
                *state = State::Queued;
                true
            }
            State::Leaving | State::Closed(_) => {
                refused = Some(Error::ElectionClosed);
                false
            }
            _ => {
                refused = Some(Error::ElectionAlreadyStarted);
                false
            }
        });
        if let Some(err) = refused {
            return Err(err);
        }
        tokio::spawn(take_terms(Arc::clone(self), lead));
        let (mut place, mut entered) = (self.place.subscribe(), self.entered.subscribe());
        let mut state = self.state.subscribe();
        tokio::select! {
            // The senders live in `self`: these resolve only on what they wait for.
            _ = place.wait_for(|place| place.as_ref().is_some_and(|place| place.node.is_some())) => Ok(()),
            _ = entered.wait_for(|entered| *entered) => Ok(()),
            ended = state.wait_for(|state| matches!(state, State::Ended(_) | State::Leaving | State::Closed(_))) => {
                match ended.as_deref() {
                    Ok(State::Ended(err)) => Err(err.clone()),
                    _ => Err(Error::ElectionClosed),
                }
            }
        }
    }

    /// Waits until we lead, and returns the term.
    pub(crate) async fn await_leadership(&self) -> Result<Leadership> {
        let mut state = self.state.subscribe();
        loop {
            match &*state.borrow_and_update() {
                State::NotStarted => return Err(Error::ElectionNotStarted),
                State::Leaving | State::Closed(_) => return Err(Error::ElectionClosed),
                State::Ended(err) => return Err(err.clone()),
                // A term lost a moment ago is not handed out; the task is about to end it.
                State::Leading(leadership) if leadership.is_held() => return Ok(leadership.clone()),
                State::Queued | State::Leading(_) | State::Idle => {}
            }
            // The sender lives in `self`, so this only returns on a change.
            let _ = state.changed().await;
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
        match &*self.state.borrow() {
            State::Leading(leadership) if leadership.is_held() => Some(leadership.clone()),
            _ => None,
        }
    }

    /// Every participant in queue order, the leader first.
    pub(crate) async fn participants(&self) -> Result<Vec<ElectionParticipant>> {
        Ok(ElectionParticipant::from_queue(self.mutex().participants_with_data().await?))
    }

    /// Ends the current term at once, if we lead; the task then deletes its node.
    pub(crate) fn interrupt(&self) {
        let leading = match &*self.state.borrow() {
            State::Leading(leadership) => Some(leadership.clone()),
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
        self.update(|state| match state {
            State::Leading(current) if current.is(term) => {
                *state = self.after_term(end);
                true
            }
            _ => false,
        });
        end
    }

    /// Where a participant stands once a term ended with `end`.
    fn after_term(&self, end: TermEnd) -> State {
        match end {
            TermEnd::Closed | TermEnd::Dropped => State::Leaving,
            // A latch always (Curator's `reset` after a loss), a selector when asked to.
            _ if self.auto_requeue => State::Queued,
            _ => State::Idle,
        }
    }

    /// Queues again after a term ended: `Ok(true)` if we were idle (or our term had ended and we
    /// were about to be), `Ok(false)` if we are already queued or leading.
    pub(crate) fn requeue(&self) -> Result<bool> {
        let mut outcome = Ok(false);
        self.update(|state| {
            // A term that has ended is behind us, even if the task has not moved on from it yet.
            let mut moved_on = false;
            if let State::Leading(term) = state {
                if let Some(end) = term.end_reason() {
                    *state = self.after_term(end);
                    moved_on = true;
                }
            }
            match state {
                State::Idle => {
                    *state = State::Queued;
                    outcome = Ok(true);
                    true
                }
                State::NotStarted => {
                    outcome = Err(Error::ElectionNotStarted);
                    false
                }
                State::Leaving | State::Closed(_) => {
                    outcome = Err(Error::ElectionClosed);
                    moved_on
                }
                State::Ended(err) => {
                    outcome = Err(err.clone());
                    false
                }
                State::Queued | State::Leading(_) => moved_on,
            }
        });
        outcome
    }

    /// Leaves the election: ends the term or the wait, and returns once our node is gone (the
    /// task saw its delete through), or once the session can no longer be alive. Returns the
    /// error that had ended the election by itself, if one did.
    pub(crate) async fn close(&self) -> Result<()> {
        // A session that ended before `close` ended the election by itself, even if the task has
        // not seen it yet (unless it rejoins on a new one).
        let mut ended = if self.rejoin.is_none() { ended_session(&self.mutex().client()) } else { None };
        let mut not_started = false;
        self.update(|state| match state {
            State::NotStarted => {
                not_started = true;
                false
            }
            State::Ended(err) => {
                ended = Some(err.clone());
                *state = State::Closed(Ok(()));
                true
            }
            _ => false,
        });
        if not_started {
            return Err(Error::ElectionNotStarted);
        }
        self.stop(TermEnd::Closed);
        let mut state = self.state.subscribe();
        let left = tokio::select! {
            // The sender lives in `self`: this resolves only once the task has left.
            left = state.wait_for(|state| matches!(state, State::Closed(_))) => match left.as_deref() {
                Ok(State::Closed(outcome)) => outcome.clone(),
                _ => Ok(()),
            },
            () = self.session_over() => Ok(()),
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
        self.update(|state| match state {
            State::Queued | State::Idle => {
                *state = State::Leaving;
                true
            }
            State::Leading(term) => {
                term.end(how);
                *state = State::Leaving;
                true
            }
            State::NotStarted | State::Leaving | State::Ended(_) | State::Closed(_) => false,
        });
    }

    /// Resolves with how we leave, once we do.
    async fn leaving(&self) -> TermEnd {
        self.leaving.told().await
    }

    fn is_leaving(&self) -> bool {
        self.leaving.get().is_some()
    }

    /// Resolves once the session our node may be on can no longer be alive: see
    /// [`session_over`]. After a rejoin, the new session is the one that counts.
    async fn session_over(&self) {
        loop {
            let client = self.mutex().client();
            session_over(&client).await;
            if self.mutex().client().session_id() == client.session_id() {
                return;
            }
        }
    }

    /// After `ended` ended our session: when the election rejoins after an expiry, connects a new
    /// client (retrying, backing off up to 5 s, until it connects or the election is left) and
    /// puts the mutex on it.
    async fn reconnect(&self, ended: &Error) -> Reconnected {
        let (Some(connect), Error::SessionExpired) = (&self.rejoin, ended) else {
            return Reconnected::No;
        };
        let mut pause = Duration::from_millis(100);
        loop {
            let connected = tokio::select! {
                biased;
                _ = self.leaving() => return Reconnected::Left,
                connected = connect.connect() => connected,
            };
            match connected.map_err(|source| Error::zookeeper("connect", &self.path, source)) {
                Ok(client) => {
                    let Ok(mutex) = self.builder.clone().on_client(&client).build() else {
                        // The same path and options built before: unreachable, but not a panic.
                        return Reconnected::No;
                    };
                    *self.mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = mutex;
                    return Reconnected::Yes;
                }
                Err(err) => {
                    tracing::warn!(target: "zklock", path = %self.path, id = %self.id, error = %err.with_causes(), "could not connect a new session to rejoin the election")
                }
            }
            tokio::select! {
                biased;
                _ = self.leaving() => return Reconnected::Left,
                // Full jitter: the participants one outage expired do not reconnect in step.
                () = tokio::time::sleep(pause.mul_f64(fastrand::f64())) => pause = (pause * 2).min(Duration::from_secs(5)),
            }
        }
    }
}

/// Resolves once `client`'s session can no longer be alive: it ended, or the client has been
/// disconnected for a full session timeout since this was called (or since the disconnection,
/// if later). The server expires a session it has not heard from for that long, and deletes its
/// ephemeral nodes; the client last heard from the server before both, so the server's count
/// started no later than ours.
async fn session_over(client: &Client) {
    let mut states = client.state_watcher();
    let mut state = client.state();
    loop {
        if SessionEnd::of_state(state).is_some() {
            return;
        }
        state = if state == SessionState::Disconnected {
            tokio::select! {
                next = states.changed() => next,
                () = tokio::time::sleep(client.session_timeout()) => return,
            }
        } else {
            states.changed().await
        };
    }
}

/// What became of an election whose session ended.
#[derive(Debug, PartialEq, Eq)]
enum Reconnected {
    /// On a new session: it joins again.
    Yes,
    /// It does not rejoin (not asked to, or the session was closed rather than expired).
    No,
    /// Left while connecting.
    Left,
}

/// The participant's task: queue, lead, end the term, and again, until the participant leaves
/// or the session ends; then it deletes what may exist of our node and says how it left.
async fn take_terms<F, Fut>(election: Arc<Election>, mut lead: F)
where
    F: FnMut(Leadership) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let ended = loop {
        let mutex = election.mutex();
        let acquired = tokio::select! {
            biased;
            _ = election.leaving() => break None,
            acquired = mutex.acquire_reporting(Some(&election.place)) => acquired,
        };
        let guard = match acquired {
            Ok(guard) => guard,
            Err(err) => {
                election.place.send_replace(None);
                match election.reconnect(&err).await {
                    Reconnected::Yes => continue,
                    Reconnected::No => break Some(err),
                    Reconnected::Left => break None,
                }
            }
        };
        election.entered.send_replace(true);
        let leadership = Leadership::new(Arc::clone(guard.held_node()));
        election.update(|state| match state {
            State::Queued => {
                *state = State::Leading(leadership.clone());
                true
            }
            _ => false,
        });
        mutex.label().leadership_taken(&election.id, leadership.epoch());
        let end = tokio::select! {
            biased;
            end = leadership.ended() => end,
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
        mutex.label().leadership_ended(&election.id, leadership.epoch(), &end);
        if election.is_leaving() {
            break None;
        }
        if let Some(err) = ended_session(&mutex.client()) {
            match election.reconnect(&err).await {
                Reconnected::Yes => {}
                Reconnected::No => break Some(err),
                Reconnected::Left => break None,
            }
        }
        // Idle until `requeue` (or leaving) moves us on.
        let _ = election.state.subscribe().wait_for(|state| !matches!(state, State::Idle)).await;
    };
    // Leaving: what a create or a wait cut short may have left is seen through here, so that
    // nobody finds us in the queue once `close` returns. (A lost term's node, if the server
    // still has it, is deleted in the background or with the session.)
    let removed = match election.place.send_replace(None) {
        Some(place) => place.delete(&election.mutex().client(), election.path()).await,
        None => Ok(()),
    };
    if let (Some(err), false) = (&ended, election.is_leaving()) {
        election.mutex().label().left_election(&election.id, err);
    }
    election.update(|state| {
        *state = match ended {
            // Left, even if the session ended while we did: its end took our node with it.
            _ if election.is_leaving() => State::Closed(removed),
            Some(err) => State::Ended(err),
            None => State::Closed(removed),
        };
        true
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
