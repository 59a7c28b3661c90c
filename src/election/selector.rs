//! `LeaderSelector`: the leader's work run once per term.
//!
//! Curator's leader selector, on top of an `InterProcessMutex` (or, in kazoo's layout, kazoo's
//! `Election`).

use std::future::Future;
use std::sync::Arc;

use crate::client::session::Connection;
use crate::election::engine::Election;
use crate::election::handle::election_handle;
use crate::election::leadership::Leadership;
use crate::election::state::ElectionState;
use crate::error::Result;
use crate::lock::mutex::{InterProcessMutex, MutexBuilder, NodeSchema};
use crate::observe::label::Recipe;

/// Runs the leader's work in one participant at a time, in the style of Apache Curator's
/// `LeaderSelector`, and wire-compatible with it.
///
/// The selector is an [`InterProcessMutex`] on the path (nodes `_c_{uuid}-lock-{seq}`, data: the
/// participant's id), as Curator builds it, so Curator's `LeaderSelector` processes on the same
/// path take part in the same election. When the mutex is ours, the selector calls `lead` with
/// the term's [`Leadership`] and leads until the future it returned completes; then it deletes
/// its node and, with [`auto_requeue`](LeaderSelectorBuilder::auto_requeue), queues again.
///
/// Built with [`node_schema`](LeaderSelectorBuilder::node_schema)`(NodeSchema::Kazoo)` its mutex
/// is kazoo's `Lock` (`{hex32}__lock__{seq}`, data: the id), which is what kazoo's `Election` is:
/// Python services calling `Election(path, id).run(func)` on the same path take part in the
/// same election, and their `contenders()` list our id among theirs.
///
/// The future is **dropped**, cancelling the leader's work at its next await point, the moment
/// leadership is lost (under the selector's [`LossPolicy`](crate::LossPolicy)),
/// [`interrupt_leadership`](Self::interrupt_leadership) is called, or the selector is closed or
/// dropped (Curator interrupts the leader's thread). Work that must not stop halfway, or runs in
/// tasks of its own, can watch [`Leadership::ended`] itself, which resolves however the term ends
/// (its work finishing too), and fence what it writes with [`Hold::fencing_token`](crate::hold::Hold::fencing_token).
/// A panic in the leader's work, or in `lead` when it is called, ends its term (logged at
/// `error`), not the selector, as Curator catches what `takeLeadership` throws.
///
/// When the session expires, a selector built on a [`Session`](crate::Session) queues again on
/// the session's next client (under its requeue rule;
/// [`Session::from_client`](crate::Session::from_client) puts a client of your own in one); built
/// on a `Client`, the selector ends (a zookeeper-client session cannot be renewed):
/// [`close`](Self::close) returns [`Error::SessionExpired`](crate::Error::SessionExpired).
///
/// # Examples
///
/// ```no_run
/// use std::time::Duration;
/// use zklock::LeaderSelector;
/// use zklock::hold::Hold;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let client = zklock::Client::connect("127.0.0.1:2181").await?;
/// let selector = LeaderSelector::builder(&client, "/app/leader/compactor", "host-1").auto_requeue(true).build()?;
/// selector
///     .start(|leadership| async move {
///         println!("leading with fencing token {}", leadership.fencing_token());
///         // One term: compact for a minute, then give the others a turn.
///         tokio::time::sleep(Duration::from_secs(60)).await;
///     })
///     .await?;
/// tokio::signal::ctrl_c().await?;
/// selector.close().await?;
/// # Ok(())
/// # }
/// ```
pub struct LeaderSelector {
    election: Arc<Election>,
}

/// Builds a [`LeaderSelector`] with options; from [`LeaderSelector::builder`].
#[derive(Clone, Debug)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct LeaderSelectorBuilder {
    mutex: MutexBuilder,
    id: String,
    auto_requeue: bool,
}

impl LeaderSelectorBuilder {
    /// Whether the selector queues again by itself, with a new node, once a term ends (the work
    /// finished, was interrupted, or leadership was lost). Defaults to `false`, as Curator's:
    /// then the selector waits for [`requeue`](LeaderSelector::requeue) after each term. The
    /// session's end ends the selector either way.
    pub fn auto_requeue(mut self, auto_requeue: bool) -> Self {
        self.auto_requeue = auto_requeue;
        self
    }

    /// How the election's nodes are named and ordered: as Curator's `LeaderSelector` (the
    /// default) or as kazoo's `Election` ([`NodeSchema::Kazoo`]). Never both on one path:
    /// neither sees the other's nodes, and each would elect a leader of its own.
    pub fn node_schema(self, schema: NodeSchema) -> Self {
        LeaderSelectorBuilder { mutex: self.mutex.node_schema(schema), ..self }
    }

    /// The options every recipe takes, as one value: see [`LockOptions`](crate::LockOptions).
    /// An election takes its ACLs, loss policy and metrics label; `build` refuses node data
    /// (the node's data is the participant's id) and a maximum hold time. Replaces any given
    /// before.
    pub fn options(self, options: crate::options::LockOptions) -> Self {
        LeaderSelectorBuilder { mutex: self.mutex.options(options), ..self }
    }

    /// Builds the selector. Sends nothing to ZooKeeper.
    ///
    /// # Errors
    /// [`Error::InvalidPath`](crate::Error::InvalidPath) when the path is not a usable lock path
    /// (see [`MutexBuilder::build`]), [`Error::InvalidOptions`](crate::Error::InvalidOptions) when
    /// the ACL list is empty.
    pub fn build(self) -> Result<LeaderSelector> {
        let mutex = self.mutex.participant(&self.id)?.reentrant(false).serving(Recipe::LeaderSelector).electing();
        let election = Election::new(mutex, self.id, self.auto_requeue)?;
        Ok(LeaderSelector { election: Arc::new(election) })
    }
}

impl LeaderSelector {
    /// Makes a selector for the participant `id` (stored in its node) on `path`, with default
    /// options (no auto-requeue). Sends nothing.
    ///
    /// # Errors
    /// [`Error::InvalidPath`](crate::Error::InvalidPath) when `path` is not a usable lock path.
    pub fn new(on: impl Into<Connection>, path: &str, id: &str) -> Result<Self> {
        Self::builder(on, path, id).build()
    }

    /// Starts building a selector with options (auto-requeue, loss policy, ACLs).
    pub fn builder(on: impl Into<Connection>, path: &str, id: &str) -> LeaderSelectorBuilder {
        LeaderSelectorBuilder { mutex: InterProcessMutex::builder(on, path), id: id.to_owned(), auto_requeue: false }
    }

    /// Joins the election with `lead`, the leader's work: called with each term's
    /// [`Leadership`], it leads until the future completes (see the type's docs for when it is
    /// dropped). Returns once our node is in the queue. A selector starts once.
    ///
    /// # Errors
    /// As [`LeaderLatch::start`](crate::LeaderLatch::start).
    ///
    /// # Cancel safety
    /// Dropping the future does not stop the selector: it joins in the background.
    pub async fn start<F, Fut>(&self, lead: F) -> Result<()>
    where
        F: FnMut(Leadership) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.election.start(lead).await
    }

    /// Where this selector stands, told at every change: [`ElectionState::Idle`] until it
    /// starts and, without auto-requeue, between a term and [`requeue`](Self::requeue);
    /// [`Queued`](ElectionState::Queued); [`Leading`](ElectionState::Leading) with the term (its
    /// fencing token, its `ended()` signal); [`Left`](ElectionState::Left) once closed, dropped or ended
    /// by its session. Sends no request; subscribe before [`start`](Self::start) to see every
    /// state from the first.
    ///
    /// The receiver sees the latest state, not every one (see [`ElectionState`]); its
    /// `changed()` fails once the selector is dropped and has left. As with any `watch`, a
    /// `borrow()` kept blocks the sender: clone the state out before calling the selector again.
    ///
    /// # Examples
    ///
    /// Tell a load balancer which instance leads, outside the leader's work:
    ///
    /// ```no_run
    /// use zklock::LeaderSelector;
    /// use zklock::election::ElectionState;
    /// use zklock::hold::Hold;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # async fn compact(_token: i64) {}
    /// # fn announce(_leading: Option<i64>) {}
    /// let client = zklock::Client::connect("127.0.0.1:2181").await?;
    /// let selector = LeaderSelector::builder(&client, "/app/leader/compactor", "host-1").auto_requeue(true).build()?;
    /// let mut states = selector.subscribe();
    /// selector.start(|term| async move { compact(term.fencing_token()).await }).await?;
    /// while !matches!(*states.borrow_and_update(), ElectionState::Left) {
    ///     announce(states.borrow().fencing_token());
    ///     states.changed().await?;
    /// }
    /// # Ok(())
    /// # }
    /// ```
    #[must_use = "a receiver does nothing unless it is read"]
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<ElectionState> {
        self.election.subscribe()
    }

    /// Queues again after a term ended without auto-requeue: `Ok(true)` when it did, `Ok(false)`
    /// when the selector is already queued or leading, as Curator's. A term that has ended
    /// (interrupted, lost, its work finished: [`Leadership::end_reason`] is `Some`) no longer
    /// counts, even while its node is being deleted, so `requeue` right after
    /// [`interrupt_leadership`](Self::interrupt_leadership) queues again once that node is gone.
    ///
    /// # Errors
    /// [`Error::ElectionNotStarted`](crate::Error::ElectionNotStarted),
    /// [`Error::ElectionClosed`](crate::Error::ElectionClosed), or the error that ended the
    /// selector (for example [`Error::SessionExpired`](crate::Error::SessionExpired)).
    pub fn requeue(&self) -> Result<bool> {
        self.election.requeue()
    }

    /// Ends the current term at once, if this participant leads: its [`Leadership::ended`]
    /// resolves with [`TermEnd::Interrupted`](crate::election::TermEnd::Interrupted), then the
    /// leader's future is dropped and our node deleted (then, with auto-requeue, the selector
    /// queues again). Does nothing otherwise.
    pub fn interrupt_leadership(&self) {
        self.election.interrupt();
    }
}

election_handle!(LeaderSelector);
