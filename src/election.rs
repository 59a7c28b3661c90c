//! What a leader latch and a leader selector share: a participant that takes one mutex over and
//! over in a background task, each hold a term of leadership, as Curator builds its
//! `LeaderSelector` on an `InterProcessMutex` (and its `LeaderLatch` is the same queue under
//! another node name).
//!
//! A term ends when leadership is lost (under the mutex's [`LossPolicy`](crate::LossPolicy)),
//! when the leader's work (`lead`) finishes or is interrupted, or when the election is closed;
//! then our node is deleted. After a loss the participant queues again with a new node while the
//! session lives (Curator's `reset`), so every term, even two of one participant, has its own
//! node and a greater epoch. A zookeeper-client session cannot be renewed: after an expiry the
//! participant connects a new client if it was given a way to (`rejoin_after_expiry`, Curator's
//! behaviour on its framework's new session), and otherwise the session's end ends it.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{watch, Notify};
use tokio::task::JoinHandle;
use zookeeper_client::Client;

use crate::internals::queue::PlaceReport;
use crate::internals::session_end::ended_session;
use crate::{ElectionParticipant, Error, InterProcessMutex, Leadership, MutexBuilder, Result};

/// Connects a new client for an election whose session expired (`rejoin_after_expiry`).
pub(crate) struct Connect(Arc<dyn Fn() -> ConnectFuture + Send + Sync>);

type ConnectFuture = Pin<Box<dyn Future<Output = std::result::Result<Client, zookeeper_client::Error>> + Send>>;

impl Connect {
    pub(crate) fn new<F, Fut>(connect: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = std::result::Result<Client, zookeeper_client::Error>> + Send + 'static,
    {
        Connect(Arc::new(move || Box::pin(connect())))
    }
}

impl std::fmt::Debug for Connect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Connect(..)")
    }
}

/// The builder option of a latch and a selector alike: `rejoin_after_expiry`, into the builder's
/// field `rejoin`.
macro_rules! rejoin_option {
    () => {
        /// After the session expires, connects a new client with `connect` and joins the election
        /// again with a new node, as Curator's participants do (Curator makes a new ZooKeeper
        /// handle itself; a zookeeper-client `Client` cannot renew its session). A failed connect
        /// is tried again, backing off up to 5 s, until it succeeds or the participant is closed.
        /// The lost term's [`Leadership::lost`](crate::Leadership::lost) says
        /// `SessionExpired`; the next term has a greater epoch.
        ///
        /// By default the expiry ends the participant: waiting for leadership and `close` return
        /// [`Error::SessionExpired`](crate::Error::SessionExpired).
        pub fn rejoin_after_expiry<F, Fut>(mut self, connect: F) -> Self
        where
            F: Fn() -> Fut + Send + Sync + 'static,
            Fut: std::future::Future<Output = std::result::Result<zookeeper_client::Client, zookeeper_client::Error>>
                + Send
                + 'static,
        {
            self.rejoin = Some(crate::election::Connect::new(connect));
            self
        }
    };
}

pub(crate) use rejoin_option;

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
    /// Whether a term that ended (other than by `close`) queues again at once, with a new node;
    /// otherwise the participant waits for [`requeue`](Self::requeue).
    auto_requeue: bool,
    state: watch::Sender<State>,
    /// Our node in the queue while we wait or lead (its prefix as soon as its create may be
    /// sent); `start` returns once it is there, `close` removes what may exist of it.
    place: PlaceReport,
    /// Set once a node of ours was in the queue: `start` returns then, even if a first term that
    /// ended at once cleared `place` before `start` looked.
    entered: watch::Sender<bool>,
    closing: watch::Sender<bool>,
    /// Counts calls to `interrupt`; a term ends when the count changes.
    interrupts: watch::Sender<u64>,
    requeues: Notify,
    task: Mutex<Option<JoinHandle<()>>>,
}

/// Where a participant stands.
#[derive(Clone, Debug)]
enum State {
    NotStarted,
    Queued,
    Leading(Leadership),
    /// A term ended and the participant waits for `requeue`.
    Idle,
    /// The session ended, or ZooKeeper refused us: the error says which.
    Ended(Error),
    Closed,
}

/// How a term ended.
#[derive(Debug)]
enum TermEnd {
    /// Lost under the loss policy (the hold's events log why).
    Lost,
    Finished,
    Interrupted,
    Closed,
}

impl Election {
    /// An election over the mutex `builder` makes, for the participant `id`.
    pub(crate) fn new(builder: MutexBuilder, id: String, auto_requeue: bool, rejoin: Option<Connect>) -> Result<Self> {
        let mutex = builder.clone().build()?;
        Ok(Election {
            path: mutex.path().to_owned(),
            mutex: Mutex::new(mutex),
            builder,
            rejoin,
            id,
            auto_requeue,
            state: watch::Sender::new(State::NotStarted),
            place: watch::Sender::new(None),
            entered: watch::Sender::new(false),
            closing: watch::Sender::new(false),
            interrupts: watch::Sender::new(0),
            requeues: Notify::new(),
            task: Mutex::new(None),
        })
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
        self.state.send_if_modified(|state| match state {
            State::NotStarted => {
                *state = State::Queued;
                true
            }
            State::Closed => {
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
        let task = tokio::spawn(take_terms(Arc::clone(self), lead));
        *self.task.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(task);
        let (mut place, mut entered) = (self.place.subscribe(), self.entered.subscribe());
        let mut state = self.state.subscribe();
        tokio::select! {
            // The senders live in `self`: these resolve only on what they wait for.
            _ = place.wait_for(|place| place.as_ref().is_some_and(|place| place.node.is_some())) => Ok(()),
            _ = entered.wait_for(|entered| *entered) => Ok(()),
            ended = state.wait_for(|state| matches!(state, State::Ended(_) | State::Closed)) => match ended.as_deref() {
                Ok(State::Ended(err)) => Err(err.clone()),
                _ => Err(Error::ElectionClosed),
            },
        }
    }

    /// Waits until we lead, and returns the term.
    pub(crate) async fn await_leadership(&self) -> Result<Leadership> {
        let mut state = self.state.subscribe();
        loop {
            match &*state.borrow_and_update() {
                State::NotStarted => return Err(Error::ElectionNotStarted),
                State::Closed => return Err(Error::ElectionClosed),
                State::Ended(err) => return Err(err.clone()),
                // A term lost a moment ago is not handed out; the task is queueing again.
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

    /// Ends the current term, if we lead.
    pub(crate) fn interrupt(&self) {
        if matches!(*self.state.borrow(), State::Leading(_)) {
            self.interrupts.send_modify(|count| *count += 1);
        }
    }

    /// Queues again after a term ended: `Ok(true)` if we were idle, `Ok(false)` if we are
    /// already queued or leading.
    pub(crate) fn requeue(&self) -> Result<bool> {
        let mut requeued = false;
        let mut outcome = Ok(false);
        self.state.send_if_modified(|state| match state {
            State::Idle => {
                *state = State::Queued;
                requeued = true;
                outcome = Ok(true);
                true
            }
            State::NotStarted => {
                outcome = Err(Error::ElectionNotStarted);
                false
            }
            State::Closed => {
                outcome = Err(Error::ElectionClosed);
                false
            }
            State::Ended(err) => {
                outcome = Err(err.clone());
                false
            }
            State::Queued | State::Leading(_) => false,
        });
        if requeued {
            // Keeps a permit if the task is not waiting yet.
            self.requeues.notify_one();
        }
        outcome
    }

    /// Leaves the election: ends the term or the wait, deletes our node and waits for ZooKeeper
    /// to confirm. Returns the error that had ended the election by itself, if one did.
    pub(crate) async fn close(&self) -> Result<()> {
        if matches!(*self.state.borrow(), State::NotStarted) {
            return Err(Error::ElectionNotStarted);
        }
        self.stop();
        let task = self.task.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).take();
        if let Some(task) = task {
            // Only a panic in the user's `lead` fails the join; it was logged by tokio.
            let _ = task.await;
        }
        // A create or a wait cut short leaves its node to a cleanup in the background; see it
        // through here, so that nobody finds us in the queue once `close` returns. (A lost
        // term's node, if the server still has it, is deleted in the background or with the
        // session.)
        let removed = match self.place.send_replace(None) {
            Some(place) => place.remove(self.mutex().client(), self.path()).await,
            None => Ok(()),
        };
        let before = self.state.send_replace(State::Closed);
        removed?;
        match before {
            State::Ended(err) => Err(err),
            _ => Ok(()),
        }
    }

    /// Tells the task to leave the election (without waiting for it): a dropped latch or selector.
    pub(crate) fn stop(&self) {
        self.closing.send_replace(true);
    }

    async fn closing(&self) {
        // The sender lives in `self`, so this resolves only once closing is set.
        let _ = self.closing.subscribe().wait_for(|closing| *closing).await;
    }

    /// After `ended` ended our session: when the election rejoins after an expiry, connects a new
    /// client (retrying, backing off up to 5 s, until it connects or the election is closed) and
    /// puts the mutex on it.
    async fn reconnect(&self, ended: &Error) -> Reconnected {
        let (Some(connect), Error::SessionExpired) = (&self.rejoin, ended) else {
            return Reconnected::No;
        };
        let mut pause = Duration::from_millis(100);
        loop {
            let connected = tokio::select! {
                biased;
                () = self.closing() => return Reconnected::Closed,
                connected = (connect.0)() => connected,
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
                    tracing::warn!(target: "zklock", path = %self.path, id = %self.id, error = %err, "could not connect a new session to rejoin the election")
                }
            }
            tokio::select! {
                biased;
                () = self.closing() => return Reconnected::Closed,
                () = tokio::time::sleep(pause) => pause = (pause * 2).min(Duration::from_secs(5)),
            }
        }
    }
}

/// What became of an election whose session ended.
#[derive(Debug, PartialEq, Eq)]
enum Reconnected {
    /// On a new session: it joins again.
    Yes,
    /// It does not rejoin (not asked to, or the session was closed rather than expired).
    No,
    /// Closed while connecting.
    Closed,
}

/// The participant's task: queue, lead, end the term, and again, until the election is closed
/// or the session ends.
async fn take_terms<F, Fut>(election: Arc<Election>, mut lead: F)
where
    F: FnMut(Leadership) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let ended = loop {
        let mutex = election.mutex();
        let acquired = tokio::select! {
            biased;
            () = election.closing() => break None,
            acquired = mutex.acquire_reporting(Some(&election.place)) => acquired,
        };
        let guard = match acquired {
            Ok(guard) => guard,
            Err(err) => {
                election.place.send_replace(None);
                match election.reconnect(&err).await {
                    Reconnected::Yes => continue,
                    Reconnected::No => break Some(err),
                    Reconnected::Closed => break None,
                }
            }
        };
        election.entered.send_replace(true);
        let leadership = Leadership::new(Arc::clone(guard.held_node()));
        // Subscribed before the term is published, so that no interrupt falls in between.
        let mut interrupts = election.interrupts.subscribe();
        election.state.send_replace(State::Leading(leadership.clone()));
        mutex.label().leadership_taken(&election.id, leadership.epoch());
        let end = tokio::select! {
            biased;
            () = election.closing() => TermEnd::Closed,
            _ = leadership.loss_known() => TermEnd::Lost,
            _ = interrupts.changed() => TermEnd::Interrupted,
            // Called inside `caught`, so that a closure that panics when called ends the term
            // as work that panics does.
            finished = caught(async { lead(leadership.clone()).await }) => {
                if finished.is_err() {
                    tracing::error!(target: "zklock", path = election.path(), id = %election.id, "the leader's work panicked; the term ends");
                }
                TermEnd::Finished
            }
        };
        election.place.send_replace(None);
        match guard.release().await {
            Ok(()) | Err(Error::LockLost(_)) => {}
            Err(err) => tracing::debug!(target: "zklock", path = election.path(), error = %err, "ending the term"),
        }
        mutex.label().leadership_ended(&election.id, leadership.epoch(), &end);
        if let Some(err) = ended_session(mutex.client()) {
            match election.reconnect(&err).await {
                Reconnected::Yes => {}
                Reconnected::No => break Some(err),
                Reconnected::Closed => break None,
            }
        }
        match end {
            TermEnd::Closed => break None,
            // A latch always (Curator's `reset` after a loss), a selector when asked to.
            _ if election.auto_requeue => {}
            TermEnd::Lost | TermEnd::Finished | TermEnd::Interrupted => {
                election.state.send_replace(State::Idle);
                tokio::select! {
                    biased;
                    () = election.closing() => break None,
                    () = election.requeues.notified() => {}
                }
            }
        }
        election.state.send_replace(State::Queued);
    };
    if let Some(err) = ended {
        election.mutex().label().left_election(&election.id, &err);
        election.state.send_replace(State::Ended(err));
    }
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

/// What a [`LeaderLatch`](crate::LeaderLatch) and a [`LeaderSelector`](crate::LeaderSelector)
/// say alike, written once: each is a handle on the [`Election`] in its field `election`, and
/// dropping it leaves the election in the background.
macro_rules! election_handle {
    ($handle:ident) => {
        impl $handle {
            /// Whether this participant leads now, as far as this process knows. No request.
            pub fn has_leadership(&self) -> bool {
                self.election.leadership().is_some()
            }

            /// The current term, if this participant leads. No request.
            pub fn leadership(&self) -> Option<crate::Leadership> {
                self.election.leadership()
            }

            /// Every participant (zklock's and Curator's) in queue order, the leader first: one
            /// listing, then one read of every node's data.
            ///
            /// # Errors
            /// [`Error::SessionExpired`](crate::Error::SessionExpired),
            /// [`Error::SessionClosed`](crate::Error::SessionClosed) or
            /// [`Error::ZooKeeper`](crate::Error::ZooKeeper).
            ///
            /// # Cancel safety
            /// Cancel safe: it only reads.
            pub async fn participants(&self) -> crate::Result<Vec<crate::ElectionParticipant>> {
                self.election.participants().await
            }

            /// The leader, if anyone leads; as [`participants`](Self::participants).
            ///
            /// # Errors
            /// As [`participants`](Self::participants).
            ///
            /// # Cancel safety
            /// Cancel safe: it only reads.
            pub async fn leader(&self) -> crate::Result<Option<crate::ElectionParticipant>> {
                Ok(self.participants().await?.into_iter().next())
            }

            /// Leaves the election for good: ends the current term (its
            /// [`Leadership`](crate::Leadership) is no longer held; a selector's work is
            /// dropped), deletes our node and waits for ZooKeeper to confirm. Closing again does
            /// nothing.
            ///
            /// # Errors
            /// - [`Error::ElectionNotStarted`](crate::Error::ElectionNotStarted);
            /// - the error that had ended the election by itself (for example
            ///   [`Error::SessionExpired`](crate::Error::SessionExpired));
            /// - [`Error::ZooKeeper`](crate::Error::ZooKeeper) when our node could not be deleted.
            ///
            /// # Cancel safety
            /// The participant leaves in any case; dropping the future only stops waiting for the
            /// confirmation.
            pub async fn close(&self) -> crate::Result<()> {
                self.election.close().await
            }

            /// This participant's id.
            pub fn id(&self) -> &str {
                self.election.id()
            }

            /// The election's path.
            pub fn path(&self) -> &str {
                self.election.path()
            }
        }

        impl std::fmt::Debug for $handle {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($handle))
                    .field("path", &self.path())
                    .field("id", &self.id())
                    .field("has_leadership", &self.has_leadership())
                    .finish()
            }
        }

        impl Drop for $handle {
            /// Leaves the election in the background: the term ends and our node is deleted.
            fn drop(&mut self) {
                self.election.stop();
            }
        }
    };
}

pub(crate) use election_handle;
