//! `InterProcessSemaphoreV2`: a counting semaphore shared through ZooKeeper.

use std::fmt;
use std::sync::atomic::AtomicI64;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::client::deadline::{acquire_forever, within_patience, Patience};
use crate::client::session::Connection;
use crate::client::session_end::check_session_ended;
use crate::error::{Error, LossReason, Result};
use crate::hold::held_node::{Acquired, HeldNode};
use crate::hold::hold_trait::run_acquired;
use crate::hold::lease::Lease;
use crate::hold::session_watch::LatestSessionWatch;
use crate::hold::while_held::RunEnd;
use crate::hold::Hold;
use crate::lock::mutex::InterProcessMutex;
use crate::lock::mutex_builder::NodeSchema;
use crate::lock::semaphore_kazoo::{lease_paths, KazooPool};
use crate::observe::label::{LockLabel, Recipe};
use crate::options::{AclProvider, LockOptions};
use crate::queue::listing::{queue_order, queue_with_data, read_nodes};
use crate::queue::node::{list_children, QueueSpec};
use crate::queue::queue_node::QueueNode;
use crate::queue::turn::{queues_again, take_lease};
use crate::rules::decide::Rule;
use crate::rules::kazoo_leases::gate_path;
use crate::rules::naming::LEASE;
use crate::rules::path::validate_lock_path;

/// A counting semaphore: at most `max_leases` leases are held at once by every process that
/// uses the same ZooKeeper path; Apache Curator's `InterProcessSemaphoreV2`, wire-compatible.
///
/// Layout, as Curator's: `{path}/locks` is an [`InterProcessMutex`] that lease takers hold while
/// they take their leases, and each lease is an ephemeral node
/// `{path}/leases/_c_{uuid}-lease-{seq}`. A taker holding the mutex creates its lease node, and
/// waits while the leases directory has more than `max_leases` children. Every participant must
/// use the same `max_leases` (as with Curator).
///
/// With [`node_schema(NodeSchema::Kazoo)`](SemaphoreBuilder::node_schema) it is kazoo's
/// `Semaphore` instead, shared with Python services: the gate is a kazoo `Lock` on the sibling
/// path `{path}-__lock__`, each lease an ephemeral `{path}/{hex32}`, and `{path}` stores
/// `max_leases`; a taker holding the gate creates its lease only while `{path}` has fewer than
/// `max_leases` children, as kazoo's does. An acquire whose maximum differs from the one stored
/// is refused with [`Error::MaxLeasesMismatch`], as kazoo refuses it.
///
/// Leases are not reentrant: each acquire takes new leases. A crashed holder's leases vanish
/// with its session. Every acquire is cancel safe: a dropped future leaves no lease node and
/// releases the mutex.
///
/// # Examples
///
/// ```no_run
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let client = zklock::Client::connect("127.0.0.1:2181").await?;
/// // At most three exports run at once, cluster-wide.
/// let exports = zklock::InterProcessSemaphoreV2::new(&client, "/app/semaphores/exports", 3)?;
/// let lease = exports.acquire().await?;
/// // ... run one export ...
/// lease.release().await?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct InterProcessSemaphoreV2 {
    inner: Arc<Inner>,
}

struct Inner {
    connection: Connection,
    path: String,
    leases_path: String,
    max_leases: u32,
    node_schema: NodeSchema,
    /// kazoo's layout: the czxid of the path node found storing our maximum (0: none yet).
    max_checked: AtomicI64,
    lock: InterProcessMutex,
    data: Vec<u8>,
    acls: AclProvider,
    /// Each lease's maximum hold time; the gate's holds are the semaphore's own, not bounded.
    max_hold: Option<std::time::Duration>,
    label: LockLabel,
    session_watch: LatestSessionWatch,
}

/// Builds an [`InterProcessSemaphoreV2`] with options; from [`InterProcessSemaphoreV2::builder`].
/// The options are every recipe's (ACLs, loss policy, node data); they apply to the lease nodes,
/// and the ACLs and loss policy also to the semaphore's mutex (`{path}/locks`, kazoo's `{path}-__lock__`).
#[derive(Clone, Debug)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct SemaphoreBuilder {
    connection: Connection,
    path: String,
    max_leases: u32,
    pub(crate) options: LockOptions,
    recipe: Recipe,
    node_schema: NodeSchema,
}

impl SemaphoreBuilder {
    /// The options every recipe takes (node data, ACLs, loss policy, maximum hold time, the
    /// lock path in metrics), as one value: see [`LockOptions`](crate::LockOptions). Replaces
    /// any given before. Defaults to [`LockOptions::new`](crate::LockOptions::new).
    pub fn options(mut self, options: LockOptions) -> Self {
        self.options = options;
        self
    }

    /// Whose layout the semaphore takes: Curator's `InterProcessSemaphoreV2` (the default:
    /// `{path}/locks` and `{path}/leases`) or, with [`NodeSchema::Kazoo`], kazoo's `Semaphore`
    /// (`{path}-__lock__` and the leases as children of `{path}`, which stores `max_leases`).
    /// The two layouts do not see each other: use one per path. In kazoo's, the path node is
    /// persistent, as kazoo makes it: it keeps the maximum after the last lease goes (delete it
    /// to change the maximum, once no participant runs). Defaults to [`NodeSchema::Curator`].
    pub fn node_schema(mut self, schema: NodeSchema) -> Self {
        self.node_schema = schema;
        self
    }

    /// As an [`InterProcessSemaphoreMutex`](crate::InterProcessSemaphoreMutex) in events and
    /// metrics.
    pub(crate) fn serving(mut self, recipe: Recipe) -> Self {
        self.recipe = recipe;
        self
    }

    /// Builds the semaphore. Sends nothing to ZooKeeper.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a bad path; [`Error::InvalidOptions`] when `max_leases` is 0,
    /// an ACL list is empty, or the maximum hold time is zero or over a year.
    pub fn build(self) -> Result<InterProcessSemaphoreV2> {
        let SemaphoreBuilder { connection, path, max_leases, options, recipe, node_schema } = self;
        validate_lock_path(&path)?;
        options.validate()?;
        if max_leases == 0 {
            return Err(Error::InvalidOptions("a semaphore needs at least one lease"));
        }
        // Not reentrant: two acquires of one task (`join!`) must take turns, or both would create
        // a lease under one hold and, with the semaphore full, wait for each other for ever
        // while holding the lock every other taker needs.
        let (gate, leases_path) = match node_schema {
            NodeSchema::Kazoo => (gate_path(&path), path.clone()),
            _ => (format!("{path}/locks"), format!("{path}/leases")),
        };
        let lock = InterProcessMutex::builder(connection.clone(), &gate)
            .node_schema(node_schema)
            .reentrant(false)
            .options(LockOptions::new().acl_provider(options.acls.clone()).loss_policy(options.loss_policy))
            .serving(Recipe::SemaphoreGate)
            .build()?;
        Ok(InterProcessSemaphoreV2 {
            inner: Arc::new(Inner {
                session_watch: LatestSessionWatch::new(&connection.client(), options.loss_policy),
                label: LockLabel::new(recipe, &path, options.path_in_metrics),
                leases_path,
                node_schema,
                max_checked: AtomicI64::new(0),
                connection,
                path,
                max_leases,
                lock,
                data: options.data,
                acls: options.acls,
                max_hold: options.max_hold,
            }),
        })
    }
}

impl InterProcessSemaphoreV2 {
    /// Makes a semaphore of `max_leases` on `path` with default options (see [`Self::builder`]).
    /// Sends nothing to ZooKeeper.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a bad path; [`Error::InvalidOptions`] when `max_leases` is 0.
    pub fn new(on: impl Into<Connection>, path: &str, max_leases: u32) -> Result<Self> {
        Self::builder(on, path, max_leases).build()
    }

    /// Starts building a semaphore of `max_leases` on `path` with options.
    pub fn builder(on: impl Into<Connection>, path: &str, max_leases: u32) -> SemaphoreBuilder {
        SemaphoreBuilder {
            connection: on.into(),
            path: path.to_owned(),
            max_leases,
            options: LockOptions::default(),
            recipe: Recipe::Semaphore,
            node_schema: NodeSchema::Curator,
        }
    }

    /// Takes one lease, waiting as long as it takes.
    ///
    /// # Errors
    /// [`Error::SessionExpired`], [`Error::SessionClosed`], [`Error::ZooKeeper`]; in kazoo's layout
    /// [`Error::MaxLeasesMismatch`] when the path stores another maximum (nothing is left behind).
    ///
    /// # Cancel safety
    /// Cancel safe: a dropped future leaves no lease node and releases the semaphore's mutex.
    pub async fn acquire(&self) -> Result<Lease> {
        acquire_forever(|patience| self.acquire_one(patience)).await
    }

    /// Takes `quantity` leases at once, all or none, waiting as long as it takes.
    ///
    /// # Errors
    /// [`Error::InvalidOptions`] when `quantity` is 0 or more than the semaphore has; otherwise as
    /// [`Self::acquire`].
    ///
    /// # Cancel safety
    /// Cancel safe, as [`Self::acquire`].
    pub async fn acquire_many(&self, quantity: u32) -> Result<Vec<Lease>> {
        acquire_forever(|patience| self.acquire_with(quantity, patience)).await
    }

    /// Takes one lease, giving up after `timeout` (`Ok(None)`, with nothing left behind).
    ///
    /// # Errors
    /// As [`Self::acquire`].
    ///
    /// # Cancel safety
    /// Cancel safe, as [`Self::acquire`].
    pub async fn acquire_timeout(&self, timeout: Duration) -> Result<Option<Lease>> {
        self.acquire_one(Patience::within(timeout)).await
    }

    /// Takes a lease within `timeout`, runs `work` while it is held, then returns the lease:
    /// as [`InterProcessMutex::run_while_held`](crate::InterProcessMutex::run_while_held).
    ///
    /// # Errors
    /// As [`acquire`](Self::acquire).
    ///
    /// # Cancel safety
    /// As [`InterProcessMutex::run_while_held`](crate::InterProcessMutex::run_while_held).
    pub async fn run_while_held<T, F>(&self, timeout: Duration, work: F) -> Result<RunEnd<T>>
    where
        F: AsyncFnOnce(&Lease) -> T,
    {
        run_acquired(self.acquire_timeout(timeout).await, work).await
    }

    /// Takes `quantity` leases, all or none, giving up after `timeout` (`Ok(None)`; leases taken
    /// so far are returned first).
    ///
    /// # Errors
    /// As [`Self::acquire_many`].
    ///
    /// # Cancel safety
    /// Cancel safe, as [`Self::acquire`].
    pub async fn acquire_many_timeout(&self, quantity: u32, timeout: Duration) -> Result<Option<Vec<Lease>>> {
        self.acquire_with(quantity, Patience::within(timeout)).await
    }

    /// Takes one lease only if one is free now; never waits for other holders.
    ///
    /// # Errors
    /// As [`Self::acquire`].
    ///
    /// # Cancel safety
    /// Cancel safe, as [`Self::acquire`].
    pub async fn try_acquire(&self) -> Result<Option<Lease>> {
        self.acquire_one(Patience::NoWait).await
    }

    /// The semaphore's path.
    pub fn path(&self) -> &str {
        &self.inner.path
    }

    /// How many leases the semaphore has.
    pub fn max_leases(&self) -> u32 {
        self.inner.max_leases
    }

    /// The full paths of the lease nodes now, oldest first: the first
    /// [`max_leases`](Self::max_leases) are the leases held; a node after them is a taker's that
    /// waits for room (at most one: takers queue on the semaphore's mutex first). A snapshot of
    /// one moment, out of date as soon as it returns.
    ///
    /// # Errors
    /// [`Error::SessionExpired`], [`Error::SessionClosed`] or [`Error::ZooKeeper`].
    ///
    /// # Cancel safety
    /// Cancel safe: it only reads.
    ///
    /// In kazoo's layout: every child of the path, by name (each is a lease held).
    pub async fn participants(&self) -> Result<Vec<String>> {
        let (client, retry, leases) =
            (self.inner.connection.client(), self.inner.connection.retry_policy(), &self.inner.leases_path);
        match self.inner.node_schema {
            NodeSchema::Kazoo => lease_paths(&client, retry, leases).await,
            NodeSchema::Curator => queue_order(&client, retry, leases, LEASE).await,
        }
    }

    /// How many leases are free now: [`max_leases`](Self::max_leases) less the lease nodes there
    /// are (one request, a listing). A snapshot of one moment, as Curator users build from
    /// `getParticipantNodes` (CURATOR-230): another process may take a free lease before you
    /// do, so use it to report or to decide whether to try, never as a promise.
    ///
    /// Every child of the leases directory counts, as it does for the acquire, so a taker that
    /// waits for room makes the answer 0 until a lease is returned.
    ///
    /// # Errors
    /// [`Error::SessionExpired`], [`Error::SessionClosed`] or [`Error::ZooKeeper`].
    ///
    /// # Cancel safety
    /// Cancel safe: it only reads.
    pub async fn available(&self) -> Result<u32> {
        let (client, retry) = (self.inner.connection.client(), self.inner.connection.retry_policy());
        let taken = match list_children(&client, retry, &self.inner.leases_path).await {
            Err(Error::ZooKeeper { source: zookeeper_client::Error::NoNode, .. }) => 0,
            listing => listing?.len(),
        };
        Ok(self.inner.max_leases.saturating_sub(u32::try_from(taken).unwrap_or(u32::MAX)))
    }

    /// Like [`participants`](Self::participants), with each lease node's data.
    ///
    /// # Errors
    /// As [`participants`](Self::participants).
    ///
    /// # Cancel safety
    /// Cancel safe: it only reads.
    pub async fn participants_with_data(&self) -> Result<Vec<QueueNode>> {
        let (client, retry, leases) =
            (self.inner.connection.client(), self.inner.connection.retry_policy(), &self.inner.leases_path);
        let NodeSchema::Kazoo = self.inner.node_schema else {
            return queue_with_data(&client, retry, leases, LEASE).await;
        };
        read_nodes(&client, retry, leases, self.participants().await?).await
    }

    async fn acquire_one(&self, patience: Patience) -> Result<Option<Lease>> {
        Ok(self.acquire_with(1, patience).await?.and_then(|mut leases| leases.pop()))
    }

    async fn acquire_with(&self, quantity: u32, patience: Patience) -> Result<Option<Vec<Lease>>> {
        let started = Instant::now();
        // Boxed, as the mutex's attempt is (`mutex.rs`): the futures handed out stay small.
        self.inner.label.acquiring(started, || Box::pin(self.take_leases(quantity, patience, started))).await
    }

    /// Takes the leases, starting over from the semaphore's mutex while an operator's deletion
    /// of one of our nodes ends an attempt (as Curator's `RETRY_DUE_TO_MISSING_NODE`), or, on a
    /// `Session`, an expiry does (within the same patience; a try has none left for it).
    async fn take_leases(&self, quantity: u32, patience: Patience, started: Instant) -> Result<Option<Vec<Lease>>> {
        if quantity == 0 || quantity > self.inner.max_leases {
            return Err(Error::InvalidOptions("the quantity of leases must be between 1 and max_leases"));
        }
        let connection = &self.inner.connection;
        loop {
            let outcome = self.take_leases_once(quantity, patience, started).await;
            if connection.rides_over(&outcome) {
                if patience == Patience::NoWait {
                    return Ok(None);
                }
            } else if !queues_again(&outcome, &connection.client()) {
                return outcome;
            }
        }
    }

    async fn take_leases_once(
        &self,
        quantity: u32,
        patience: Patience,
        started: Instant,
    ) -> Result<Option<Vec<Lease>>> {
        let inner = &self.inner;
        let kazoo = KazooPool {
            client: &inner.connection.client(),
            retry: inner.connection.retry_policy(),
            path: &inner.path,
            max_leases: inner.max_leases,
            data: &inner.data,
            acls: &inner.acls,
            checked: &inner.max_checked,
        };
        // Once per semaphore object, as kazoo checks once per instance (and again for a path
        // node made anew: the take's listing sees it).
        if inner.node_schema == NodeSchema::Kazoo {
            let Some(checked) = within_patience(patience, kazoo.client, kazoo.check_max_leases()).await else {
                return Ok(None);
            };
            checked?;
        }
        let Some(guard) = inner.lock.acquire_within(patience).await? else { return Ok(None) };
        // The session the gate is held on (a later expiry ends the gate's hold, and so the wait).
        let client = Arc::new(inner.connection.client());
        let kazoo = KazooPool { client: &client, ..kazoo };
        if let Some(ended) = check_session_ended(&client) {
            return Err(ended);
        }
        let spec = QueueSpec::new(
            &client,
            inner.connection.retry_policy(),
            &inner.leases_path,
            LEASE,
            Rule::Leases { max_leases: inner.max_leases as usize },
            &inner.data,
            &inner.acls,
        );
        let mut leases = Vec::with_capacity(quantity as usize);
        let mut outcome = Ok(true);
        while leases.len() < quantity as usize {
            let gate_lost = guard.lost_as_error();
            let taken = match inner.node_schema {
                NodeSchema::Kazoo => kazoo.take(patience, guard.node_path(), gate_lost).await,
                _ => take_lease(&spec, patience, gate_lost).await,
            };
            match taken {
                Ok(Some(node)) => {
                    let session_watch = inner.session_watch.of(&client);
                    let acquired = Acquired { label: &inner.label, fencing_token: node.czxid, started };
                    leases.push(Lease::new(HeldNode::new(&client, node, &session_watch, acquired, inner.max_hold)));
                }
                Ok(None) => outcome = Ok(false),
                Err(err) => outcome = Err(err),
            }
            if !matches!(outcome, Ok(true)) {
                break;
            }
        }
        if !matches!(outcome, Ok(true)) {
            // All or none: return what was taken before giving up.
            for lease in leases.drain(..) {
                let _ = lease.release().await;
            }
        }
        match guard.release().await {
            // The gate's node was deleted (an operator, as the outcome may already say): nothing
            // of ours is left in its queue.
            Ok(()) | Err(Error::LockLost(LossReason::NodeDeleted)) => {}
            Err(err) => {
                tracing::warn!(path = %inner.path, error = %err.with_causes(), "could not release the semaphore's mutex")
            }
        }
        outcome.map(|complete| complete.then_some(leases))
    }
}

impl fmt::Debug for InterProcessSemaphoreV2 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InterProcessSemaphoreV2")
            .field("path", &self.inner.path)
            .field("max_leases", &self.inner.max_leases)
            .finish()
    }
}
