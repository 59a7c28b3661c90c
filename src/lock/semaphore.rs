//! `InterProcessSemaphoreV2`: a counting semaphore shared through ZooKeeper, in Curator's layout or kazoo's.
//!
//! In kazoo's layout (`rules/kazoo_leases.rs`'s) the path node stores the maximum, checked as
//! kazoo checks it, and the holder of the gate takes one lease: count, create when there is
//! room, and hold once a listing shows our lease within the maximum (`KazooPool`).
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use uuid::Uuid;
use zookeeper_client::{Acls, Client, CreateMode, Error as ZkError};

use crate::client::deadline::{acquire_forever, cleanup_deadline, within, within_patience, Patience};
use crate::client::retry::{is_transient, retry_transient, Retries, RetryPolicy};
use crate::client::session::Connection;
use crate::client::session_end::{check_session_ended, SessionEnd};
use crate::error::{Error, LossReason, Result};
use crate::hold::held_node::{Acquired, HeldNode};
use crate::hold::hold_trait::run_acquired;
use crate::hold::lease::Lease;
use crate::hold::session_watch::LatestSessionWatch;
use crate::hold::while_held::RunEnd;
use crate::hold::Hold;
use crate::lock::mutex::{InterProcessMutex, NodeSchema};
use crate::observe::label::{LockLabel, Recipe};
use crate::options::{AclProvider, LockOptions};

use crate::queue::listing::{children_or_none, queue_order, queue_with_data, read_nodes};
use crate::queue::node::{czxid_if_ours, list_children, LockNode, NodeCleanup, QueueSpec, Remains};
use crate::queue::queue_node::QueueNode;
use crate::queue::turn::{queues_again, take_lease};
use crate::rules::decide::Rule;
use crate::rules::kazoo_leases::{
    after_create, gate_path, has_room, lease_name, read_stored_max, stored_max_leases, Created, StoredMax,
};
use crate::rules::naming::LEASE;
use crate::rules::path::{child_path, validate_lock_path};

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

/// The lease pool of a kazoo-layout semaphore: `{path}`, whose children are the leases.
#[derive(Debug)]
struct KazooPool<'a> {
    client: &'a Client,
    /// The session's retry policy (an acquire's requests honour its bound).
    retry: RetryPolicy,
    path: &'a str,
    max_leases: u32,
    /// Our lease nodes' data (kazoo writes its identifier there).
    data: &'a [u8],
    acls: &'a AclProvider,
    /// The czxid of the path node last found storing our maximum (0: none yet), kept by the
    /// semaphore object: a path node made again (another czxid) is checked again.
    checked: &'a AtomicI64,
}

impl KazooPool<'_> {
    /// Refuses a semaphore whose path stores another maximum than ours, as kazoo's
    /// `_ensure_path` does; creates the path node with ours when there is none. Done before an
    /// acquire takes the gate, so a refused acquire leaves nothing behind; by each semaphore
    /// object until it finds our maximum (kazoo checks once per instance: data that is no number
    /// yet, between kazoo's create of the node and its set, is no refusal), and again when the
    /// path node was made anew since (its czxid, seen by each take's listing).
    ///
    /// # Errors
    /// [`Error::MaxLeasesMismatch`]; a session's end; what ZooKeeper refuses.
    async fn check_max_leases(&self) -> Result<()> {
        if self.checked.load(Ordering::Relaxed) != 0 {
            return Ok(());
        }
        loop {
            match retry_transient(self.retry, || self.client.get_data(self.path)).await {
                Ok((data, stat)) => {
                    return match read_stored_max(&data, self.max_leases) {
                        StoredMax::Same => {
                            self.checked.store(stat.czxid, Ordering::Relaxed);
                            Ok(())
                        }
                        StoredMax::NoNumber => Ok(()),
                        StoredMax::Other(stored) => Err(Error::MaxLeasesMismatch {
                            path: self.path.to_owned(),
                            stored,
                            max_leases: self.max_leases,
                        }),
                    }
                }
                Err(ZkError::NoNode) => {
                    if self.create_path_node().await? {
                        return Ok(());
                    }
                }
                Err(err) => return Err(Error::zookeeper("read", self.path, err)),
            }
        }
    }

    /// Creates the path node, persistent as kazoo's (a container would go with its last lease,
    /// and a kazoo taker's create under it would fail), with our maximum as its data, and the
    /// gate's path beside it, persistent too (the gate mutex would make it a container, reaped
    /// once empty, between a kazoo taker's `ensure_path` and its create); their parents as
    /// containers. `false` when the path node was there first (read it).
    async fn create_path_node(&self) -> Result<bool> {
        let data = stored_max_leases(self.max_leases);
        let options = CreateMode::Persistent.with_acls(Acls::new(self.acls.parents()));
        loop {
            match retry_transient(self.retry, || self.client.create(self.path, &data, &options)).await {
                Ok(_) => {
                    let gate = gate_path(self.path);
                    return match retry_transient(self.retry, || self.client.create(&gate, &[], &options)).await {
                        Ok(_) | Err(ZkError::NodeExists) => Ok(true),
                        Err(err) => Err(Error::zookeeper("create", &gate, err)),
                    };
                }
                Err(ZkError::NodeExists) => return Ok(false),
                Err(ZkError::NoNode) => {
                    let parent = &self.path[..self.path.rfind('/').unwrap_or(0)];
                    let options = CreateMode::Container.with_acls(Acls::new(self.acls.parents()));
                    match retry_transient(self.retry, || self.client.mkdir(parent, &options)).await {
                        Ok(()) | Err(ZkError::NodeExists) => {}
                        Err(err) => return Err(Error::zookeeper("create parents of", self.path, err)),
                    }
                }
                Err(err) => return Err(Error::zookeeper("create", self.path, err)),
            }
        }
    }

    /// Takes one lease while the gate (kazoo's `Lock` on `{path}-__lock__`, our node there
    /// `gate_node`) is held, as kazoo's
    /// `_get_lease` does: while the path has `max_leases` children or more, waits for them to
    /// change (a children watch, as kazoo's, set only by the gate's holder); then creates
    /// `{path}/{hex32}` and holds once a listing shows it there with at most `max_leases`
    /// children. Ends with what `gate_lost` resolves to should the gate's hold go while we wait.
    ///
    /// Returns `Ok(None)` when `patience` runs out; our node is deleted before that returns (as
    /// before an error).
    ///
    /// # Errors
    /// [`Error::LockLost`] (`NodeDeleted`) when our lease or the gate's node is gone before the
    /// hold begins: the taker starts
    /// over from the gate; a session's end; what ZooKeeper refuses.
    ///
    /// # Cancel safety
    /// A cleanup armed before the create deletes our lease, or finds it by its name first, when
    /// the future is dropped.
    async fn take(
        &self,
        patience: Patience,
        gate_node: &str,
        gate_lost: impl Future<Output = Error>,
    ) -> Result<Option<LockNode>> {
        let deadline = patience.deadline();
        let mut gate_lost = std::pin::pin!(gate_lost);
        // The gate's stat rides beside the listing, so it is retried here, paced and bounded by
        // the session's policy as every other request is.
        let mut gate_retries = Retries::new(self.retry);
        loop {
            // Our gate node read behind the listing, in its round trip: one transaction may have
            // deleted a lease and our gate node together (an operator's `deleteall`), and the
            // change of the leases may reach us first. A read sent after that change sees the
            // deletion, so a taker whose gate went never creates a lease beside the next one's.
            let gate_and_leases = async {
                let gate = self.client.check_stat(gate_node);
                let listed = retry_transient(self.retry, || self.client.get_children(self.path)).await;
                (gate.await, listed.map_err(Error::on("list", self.path)))
            };
            let Some((gate, listed)) = within_patience(patience, self.client, gate_and_leases).await else {
                return Ok(None);
            };
            match gate {
                Ok(Some(_)) => {}
                Ok(None) => return Err(Error::LockLost(LossReason::NodeDeleted)),
                Err(err) if is_transient(&err) && gate_retries.pause().await => continue,
                Err(err) => return Err(Error::zookeeper("read", gate_node, err)),
            }
            let children = match listed {
                Err(Error::ZooKeeper { source: ZkError::NoNode, .. }) => {
                    // Deleted since the check (an operator): made again with our maximum.
                    self.create_path_node().await?;
                    continue;
                }
                Ok((children, path_node)) if path_node.czxid != self.checked.load(Ordering::Relaxed) => {
                    // Made anew since our check, maybe by a participant with another maximum.
                    self.checked.store(0, Ordering::Relaxed);
                    self.check_max_leases().await?;
                    children
                }
                other => other?.0,
            };
            if !has_room(children.len(), self.max_leases) {
                if patience == Patience::NoWait {
                    return Ok(None);
                }
                match within(deadline, self.room_changes(gate_lost.as_mut())).await {
                    Some(changed) => changed?,
                    None => return Ok(None),
                }
                continue;
            }
            let name = lease_name(&Uuid::new_v4());
            let mut cleanup = NodeCleanup::new(self.client, self.retry, self.path, &name);
            let outcome = match within_patience(patience, self.client, self.create_lease(&name, &mut cleanup)).await {
                Some(Ok((Created::TooMany, _))) => {
                    cleanup.settle(Ok(None::<()>), cleanup_deadline(patience)).await?;
                    continue;
                }
                Some(Ok((Created::Hold, czxid))) => Ok(Some(LockNode::new(self.path, &name, czxid, None, self.retry))),
                Some(Ok((Created::Missing, _))) => Err(Error::LockLost(LossReason::NodeDeleted)),
                Some(Err(err)) => Err(err),
                None => Ok(None),
            };
            return cleanup.settle(outcome, cleanup_deadline(patience)).await;
        }
    }

    /// Waits for a change among the leases, the path full when last listed (or returns at once
    /// when the watch's own listing shows room, or the path gone); ends with what `gate_lost`
    /// resolves to, should the gate go first.
    async fn room_changes<G: Future<Output = Error>>(&self, gate_lost: Pin<&mut G>) -> Result<()> {
        let (listed, watcher) =
            match retry_transient(self.retry, || self.client.list_and_watch_children(self.path)).await {
                Ok(listing) => listing,
                Err(ZkError::NoNode) => return Ok(()),
                Err(err) => return Err(Error::zookeeper("watch", self.path, err)),
            };
        if has_room(listed.len(), self.max_leases) {
            return Ok(());
        }
        let event = tokio::select! {
            event = watcher.changed() => event,
            err = gate_lost => return Err(err),
        };
        match SessionEnd::of_state(event.session_state) {
            Some(end) => Err(end.error()),
            None => Ok(()),
        }
    }

    /// Creates our lease `{path}/{name}` (ephemeral, no sequence, as kazoo's) and lists the
    /// path: what the listing says of it, and its czxid (the lease's fencing token). After a
    /// lost reply the create is sent again: `NodeExists` on a node our session owns is ours.
    async fn create_lease(&self, name: &str, cleanup: &mut NodeCleanup<'_>) -> Result<(Created, i64)> {
        let path = child_path(self.path, name);
        let options = CreateMode::Ephemeral.with_acls(Acls::new(self.acls.lock_nodes()));
        let mut retries = Retries::new(self.retry);
        let czxid = loop {
            cleanup.remains = Remains::MaybeCreated;
            match self.client.create(&path, self.data, &options).await {
                Ok((stat, _)) => break stat.czxid,
                // The policy's bound spent: the cleanup looks for a lease a lost reply made.
                Err(err) if is_transient(&err) => {
                    if !retries.pause().await {
                        return Err(Error::zookeeper("create", &path, err));
                    }
                }
                Err(ZkError::NodeExists) => match czxid_if_ours(self.client, self.retry, &path).await? {
                    Some(czxid) => break czxid,
                    None => {
                        cleanup.remains = Remains::Nothing;
                        return Err(Error::zookeeper("create", &path, ZkError::NodeExists));
                    }
                },
                Err(ZkError::NoNode) => {
                    cleanup.remains = Remains::Nothing;
                    self.create_path_node().await?;
                }
                Err(err) => {
                    cleanup.remains = Remains::Nothing;
                    return Err(Error::zookeeper("create", &path, err));
                }
            }
        };
        cleanup.remains = Remains::Created(path);
        let children = children_or_none(self.client, self.retry, self.path).await?;
        Ok((after_create(&children, name, self.max_leases), czxid))
    }
}

/// The leases of a kazoo-layout semaphore at `path`: every child, by name (a taker creates its
/// lease only when there is room, so each is a lease held).
async fn lease_paths(client: &Client, retry: RetryPolicy, path: &str) -> Result<Vec<String>> {
    let mut children = children_or_none(client, retry, path).await?;
    children.sort_unstable();
    Ok(children.into_iter().map(|child| format!("{path}/{child}")).collect())
}
