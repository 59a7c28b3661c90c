//! `LeaderLatch`: Curator's leader latch, a participant that leads while its node is first.

use std::sync::Arc;
use std::time::Duration;

use crate::client::session::Connection;
use crate::election::engine::Election;
use crate::election::handle::election_handle;
use crate::election::leadership::Leadership;
use crate::election::state::ElectionState;
use crate::error::Result;
use crate::hold::hold_trait::run_acquired;
use crate::hold::while_held::RunEnd;
use crate::lock::mutex::{InterProcessMutex, MutexBuilder};
use crate::observe::label::Recipe;
use crate::rules::naming::LATCH;

/// Elects one leader among every participant on a ZooKeeper path, in the style of Apache
/// Curator's `LeaderLatch`, and wire-compatible with it.
///
/// Each participant puts an ephemeral sequential node `_c_{uuid}-latch-{seq}` (data: its id)
/// under the path; the lowest sequence leads until it leaves, crashes or loses its session, and
/// every other participant watches only the node just before its own. Curator's `LeaderLatch`
/// processes on the same path take part in the same election.
///
/// - [`start`](Self::start) joins; a task in the background keeps the participant in the
///   election until [`close`](Self::close) (or until the latch is dropped).
/// - Leadership comes as a [`Leadership`]: its [`ended`](Leadership::ended) signal resolves when
///   the term ends: when it is lost under the latch's [`LossPolicy`](crate::LossPolicy) (by default once the client
///   has been disconnected for a third of the session timeout, before the server can expire the
///   session and let another participant lead), and also when the latch is closed or dropped,
///   with a [`TermEnd`](crate::election::TermEnd) that says which; its
///   [`fencing_token`](crate::hold::Hold::fencing_token) fences what the leader writes.
/// - After a loss while the session lives (a long disconnection, the node deleted by someone
///   else), the latch joins again with a new node at the back of the queue, as Curator's does.
///   When the session expires, a latch built on a [`Session`](crate::Session) joins again on the
///   session's next client, as Curator's does on its framework's new session
///   ([`Session::from_client`](crate::Session::from_client) puts a client of your own in one);
///   built on a `Client`, the latch ends (a zookeeper-client session cannot be renewed):
///   [`await_leadership`](Self::await_leadership) returns
///   [`Error::SessionExpired`](crate::Error::SessionExpired).
///
/// # Examples
///
/// ```no_run
/// use zklock::LeaderLatch;
/// use zklock::hold::Hold;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # async fn schedule_jobs(_token: i64) {}
/// let client = zklock::Client::connect("127.0.0.1:2181").await?;
/// let latch = LeaderLatch::new(&client, "/app/leader/scheduler", "host-1")?;
/// latch.start().await?;
/// let leadership = latch.await_leadership().await?;
/// tokio::select! {
///     () = schedule_jobs(leadership.fencing_token()) => {}
///     end = leadership.ended() => eprintln!("no longer the leader: {end}"),
/// }
/// latch.close().await?;
/// # Ok(())
/// # }
/// ```
pub struct LeaderLatch {
    election: Arc<Election>,
}

/// Builds a [`LeaderLatch`] with options; from [`LeaderLatch::builder`].
#[derive(Clone, Debug)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct LeaderLatchBuilder {
    mutex: MutexBuilder,
    id: String,
}

impl LeaderLatchBuilder {
    /// The options every recipe takes, as one value: see [`LockOptions`](crate::LockOptions).
    /// An election takes its ACLs, loss policy and metrics label; `build` refuses node data
    /// (the node's data is the participant's id) and a maximum hold time. Replaces any given
    /// before.
    pub fn options(self, options: crate::options::LockOptions) -> Self {
        LeaderLatchBuilder { mutex: self.mutex.options(options), ..self }
    }

    /// Builds the latch. Sends nothing to ZooKeeper.
    ///
    /// # Errors
    /// [`Error::InvalidPath`](crate::Error::InvalidPath) when the path is not a usable lock path
    /// (see [`MutexBuilder::build`]), [`Error::InvalidOptions`](crate::Error::InvalidOptions) when
    /// the ACL list is empty.
    pub fn build(self) -> Result<LeaderLatch> {
        let mutex = self.mutex.participant(&self.id)?.reentrant(false).serving(Recipe::LeaderLatch).named(LATCH);
        let election = Election::new(mutex, self.id, true)?;
        Ok(LeaderLatch { election: Arc::new(election) })
    }
}

impl LeaderLatch {
    /// Makes a latch for the participant `id` (stored in its node, shown by
    /// [`participants`](Self::participants)) on `path`, with default options. Sends nothing.
    ///
    /// # Errors
    /// [`Error::InvalidPath`](crate::Error::InvalidPath) when `path` is not a usable lock path.
    pub fn new(on: impl Into<Connection>, path: &str, id: &str) -> Result<Self> {
        Self::builder(on, path, id).build()
    }

    /// Starts building a latch with options (ACLs, loss policy: [`LockOptions`](crate::LockOptions)).
    pub fn builder(on: impl Into<Connection>, path: &str, id: &str) -> LeaderLatchBuilder {
        LeaderLatchBuilder { mutex: InterProcessMutex::builder(on, path), id: id.to_owned() }
    }

    /// Joins the election, and returns once our node is in it (so that
    /// [`participants`](Self::participants) shows us). A latch joins once.
    ///
    /// # Errors
    /// - [`Error::ElectionAlreadyStarted`](crate::Error::ElectionAlreadyStarted),
    ///   [`Error::ElectionClosed`](crate::Error::ElectionClosed): started before, or closed;
    /// - [`Error::SessionExpired`](crate::Error::SessionExpired) /
    ///   [`Error::SessionClosed`](crate::Error::SessionClosed), or
    ///   [`Error::ZooKeeper`](crate::Error::ZooKeeper) when ZooKeeper refused our node (for
    ///   example `NoAuth`); the latch has then ended.
    ///
    /// # Cancel safety
    /// Dropping the future does not stop the latch: it joins in the background.
    pub async fn start(&self) -> Result<()> {
        self.election.start(|_leadership| std::future::pending()).await
    }

    /// Waits until this participant leads, and returns the term.
    ///
    /// # Errors
    /// - [`Error::ElectionNotStarted`](crate::Error::ElectionNotStarted),
    ///   [`Error::ElectionClosed`](crate::Error::ElectionClosed);
    /// - [`Error::SessionExpired`](crate::Error::SessionExpired) /
    ///   [`Error::SessionClosed`](crate::Error::SessionClosed) once the session ended (the
    ///   latch cannot join again), or the [`Error::ZooKeeper`](crate::Error::ZooKeeper) refusal
    ///   that ended it.
    ///
    /// # Cancel safety
    /// Cancel safe: it only watches the latch.
    pub async fn await_leadership(&self) -> Result<Leadership> {
        self.election.await_leadership().await
    }

    /// Where this latch stands, told at every change: [`ElectionState::Idle`] until it starts,
    /// then [`Queued`](ElectionState::Queued), [`Leading`](ElectionState::Leading) with the term
    /// (its fencing token, its `ended()` signal) and queued again after a loss, and
    /// [`Left`](ElectionState::Left) once closed, dropped or ended by its session. Curator's
    /// `LeaderLatchListener`, as a value to watch: react to leadership without polling
    /// [`has_leadership`](Self::has_leadership). Sends no request; subscribe before
    /// [`start`](Self::start) to see every state from the first.
    ///
    /// The receiver sees the latest state, not every one (see [`ElectionState`]); its
    /// `changed()` fails once the latch is dropped and has left. As with any `watch`, a
    /// `borrow()` kept blocks the sender: clone the state out before calling the latch again.
    ///
    /// # Examples
    ///
    /// Run the scheduler in a task of its own for each term this process leads:
    ///
    /// ```no_run
    /// use zklock::LeaderLatch;
    /// use zklock::election::ElectionState;
    /// use zklock::hold::Hold;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # async fn schedule_jobs(_token: i64) {}
    /// let client = zklock::Client::connect("127.0.0.1:2181").await?;
    /// let latch = LeaderLatch::new(&client, "/app/leader/scheduler", "host-1")?;
    /// let mut states = latch.subscribe();
    /// latch.start().await?;
    /// loop {
    ///     let state = states.borrow_and_update().clone();
    ///     match state {
    ///         ElectionState::Leading(term) => {
    ///             // Runs while the term lasts: `ended()` resolves however it ends.
    ///             tokio::spawn(async move {
    ///                 tokio::select! {
    ///                     () = schedule_jobs(term.fencing_token()) => {}
    ///                     _ = term.ended() => {}
    ///                 }
    ///             });
    ///         }
    ///         ElectionState::Left => break,
    ///         _ => {}
    ///     }
    ///     states.changed().await?;
    /// }
    /// # Ok(())
    /// # }
    /// ```
    #[must_use = "a receiver does nothing unless it is read"]
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<ElectionState> {
        self.election.subscribe()
    }

    /// [`await_leadership`](Self::await_leadership), giving up after `timeout`: `Ok(None)` when
    /// we do not lead by then (the latch stays in the election).
    ///
    /// # Errors
    /// As [`await_leadership`](Self::await_leadership).
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn await_leadership_timeout(&self, timeout: Duration) -> Result<Option<Leadership>> {
        self.election.await_leadership_timeout(timeout).await
    }

    /// Waits up to `timeout` for leadership, then runs `work` for as long as the term lasts:
    /// [`RunEnd::Done`] with the work's output if it finishes first; else the work is dropped
    /// the moment the term ends, with [`RunEnd::Lost`] and the reason, or [`RunEnd::GivenUp`]
    /// when the latch was closed; [`RunEnd::TimedOut`] when we did not lead in time (the work
    /// never started, the latch stays in the election). After the work, the latch goes on
    /// leading until it is closed. `work` gets the term (for its fencing token and
    /// [fenced writes](crate::hold::Hold::commit)), an async closure as for
    /// [`InterProcessMutex::run_while_held`](crate::InterProcessMutex::run_while_held):
    /// `async |term| …`.
    ///
    /// # Errors
    /// As [`await_leadership`](Self::await_leadership).
    ///
    /// # Cancel safety
    /// Cancel safe: dropping it drops the work; the latch's term goes on.
    pub async fn run_while_leading<T, F>(&self, timeout: Duration, work: F) -> Result<RunEnd<T>>
    where
        F: AsyncFnOnce(&Leadership) -> T,
    {
        run_acquired(self.await_leadership_timeout(timeout).await, work).await
    }
}

election_handle!(LeaderLatch);

#[cfg(test)]
mod tests {
    use super::*;

    #[allow(dead_code)]
    fn bounds(latch: LeaderLatch) {
        fn send_static<T: Send + 'static>(_: &T) {}
        fn send_sync<T: Send + Sync + std::fmt::Debug>(_: &T) {}
        send_sync(&latch);
        send_sync(&latch.subscribe());
        send_static(&async move {
            latch.start().await?;
            let leadership = latch.await_leadership().await?;
            send_sync(&leadership);
            latch.close().await
        });
    }
}
