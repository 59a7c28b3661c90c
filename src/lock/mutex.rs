//! `InterProcessMutex`: a reentrant lock shared by processes through ZooKeeper.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use zookeeper_client::Client;

use crate::hold::held_node::HeldNode;
use crate::lock::cohort::Turn;
use crate::lock::owner::Owner;
use crate::lock::state::{Admission, Claim, LockState};
use crate::observe::{LockLabel, Recipe};
use crate::options::lock_options;
use crate::options::LockOptions;
use crate::queue::deadline::{acquire_forever, acquire_patiently, within, Patience};
use crate::queue::listing::{queue_order, queue_with_data};
use crate::queue::node::{delete_in_background, PlaceReport, QueueSpec};
use crate::queue::session::Connection;
use crate::queue::session_end::ended_session;
use crate::queue::turn::take_place;
use crate::rules::entry::{self, Role};
use crate::rules::naming::{Schema, KAZOO_MUTEX, MUTEX};
use crate::rules::opening;
use crate::rules::path::validate_lock_path;
use crate::{Error, LocalHandoff, LockGuard, ParticipantNode, Result};

/// A reentrant mutex shared by every process that uses the same ZooKeeper path, in the style of
/// Apache Curator's `InterProcessMutex`, and wire-compatible with it.
///
/// Each participant puts an ephemeral sequential node `_c_{uuid}-lock-{seq}` under the lock
/// path (created as container nodes when missing); the lowest sequence holds the lock, and each
/// waiter watches only the node just before its own, so a release wakes exactly one waiter. The
/// lock is **fair** (first come, first served) and needs no timeouts to recover from crashes:
/// the node of a dead process vanishes with its session.
///
/// - **Reentrant** per owner: the tokio task that acquires (or the thread, outside a task). The
///   same task may acquire again without a round trip; each acquire returns a guard, and the
///   lock is released when the owner's last guard is dropped or released. Another task of the
///   same process waits like any other participant. The owner is the task, not the future:
///   two futures of one task (`join!`, `select!`) share one hold, so they are not excluded
///   from each other. Build with [`MutexBuilder::reentrant`]`(false)` for tokio's semantics
///   (each acquire on its own; a task that acquires twice waits for itself).
/// - **One participant per `new`**: two mutexes made with [`new`](Self::new) on one path contend
///   with each other, even on one client; clones of one mutex are the same participant.
/// - **Round trips**: an uncontended acquire costs one (the create and the first listing are
///   sent together; right after our own release, the create alone), a release one, a reentrant
///   acquire none. The next in line takes the lock on the holder's release without listing
///   again (a watch on its own node, sent with the one on the holder's, proves its node is still
///   there); a participant that held with others queued behind it queues again watching the
///   last of them instead of listing (DESIGN.md, "Round trips").
/// - **No ghost holders**: a waiter whose node someone else deletes (an operator "unsticking"
///   the lock) never holds on it: it queues again at the back with a new node, within the
///   acquire's patience, as Curator does.
/// - **Cancel safe**: dropping an acquire future at any point leaves no node behind.
///
/// # Examples
///
/// ```no_run
/// use std::time::Duration;
/// use zklock::InterProcessMutex;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let client = zookeeper_client::Client::connect("127.0.0.1:2181").await?;
/// let mutex = InterProcessMutex::new(&client, "/app/locks/nightly-report")?;
/// match mutex.acquire_timeout(Duration::from_secs(5)).await? {
///     Some(guard) => {
///         // Only one process in the cluster runs this at a time.
///         println!("holding {} with fencing token {}", guard.node_path(), guard.fencing_token());
///         guard.release().await?;
///     }
///     None => println!("someone else is running the report"),
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct InterProcessMutex {
    pub(crate) state: Arc<LockState>,
}

/// Builds an [`InterProcessMutex`] (or, with [`build_read_write`](Self::build_read_write), an
/// [`InterProcessReadWriteLock`](crate::InterProcessReadWriteLock)) with options; from
/// [`InterProcessMutex::builder`]. Every recipe's builder takes the same options: ACLs, loss
/// policy, node data.
#[derive(Clone, Debug)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct MutexBuilder {
    pub(crate) connection: Connection,
    pub(crate) path: String,
    pub(crate) options: LockOptions,
    pub(crate) node_schema: NodeSchema,
    /// Set when the mutex serves another recipe (a semaphore's gate).
    serves: Option<Recipe>,
    /// The names our nodes take, when the recipe asks for other than `node_schema`'s (a leader
    /// latch's `latch-` names).
    schema: Option<Schema>,
}

/// How lock nodes are named and ordered, which decides who can share a lock with zklock.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum NodeSchema {
    /// Apache Curator's: `_c_{uuid}-lock-{seq}`, ordered by the text after the last `lock-`.
    /// Shares a lock with Curator's `InterProcessMutex` (and zklock's read-write lock uses
    /// Curator's `__READ__`/`__WRIT__` layout). The default.
    #[default]
    Curator,
    /// kazoo's `Lock`: `{hex32}__lock__{seq}`, ordered by sequence. Shares a lock with Python
    /// services using kazoo's `Lock` with its default settings. Never mix it with Curator
    /// participants on one path: kazoo ignores Curator's nodes unless told otherwise
    /// (`extra_lock_patterns=["-lock-"]`), and neither Curator nor this schema sees the other's.
    /// Mutex only.
    Kazoo,
}

impl MutexBuilder {
    /// How lock nodes are named and ordered, to share the lock with Curator (the default) or
    /// with kazoo. See [`NodeSchema`].
    pub fn node_schema(mut self, schema: NodeSchema) -> Self {
        self.node_schema = schema;
        self
    }

    lock_options!(options);

    /// Whether the owner of a hold (the tokio task, or the thread outside a task) re-enters it
    /// without a round trip, as Curator's mutex does (per thread there). Defaults to `true`.
    ///
    /// Reentrancy is per **task**, not per future: two futures of one task (`join!`,
    /// `select!`) share a hold, and the second gets a guard at once while the first holds.
    ///
    /// With `false` every acquire is a participant of its own, as with tokio's `Mutex`: a task
    /// that holds the lock and acquires again waits for itself (use a timeout), and two futures
    /// of one task (`join!`) take turns instead of sharing a hold.
    /// [`InterProcessMutex::is_acquired_by_current_task`] is then always `false`, and a read-write
    /// lock's writer cannot downgrade (its read acquire waits for its own write lock).
    pub fn reentrant(mut self, reentrant: bool) -> Self {
        self.options.reentrant = reentrant;
        self
    }

    /// Passes the hold from task to task of this process, behind one queue node, within
    /// `bound` (lock cohorting); see [`LocalHandoff`] for the fairness it keeps between processes
    /// and its fencing tokens. Share one mutex object (cloned) among the tasks. On a read-write
    /// lock ([`build_read_write`](Self::build_read_write)) the write side hands off; readers
    /// share anyway. Defaults to off: every acquire queues a node of its own.
    pub fn local_handoff(mut self, bound: LocalHandoff) -> Self {
        self.options.local_handoff = Some(bound);
        self
    }

    /// Builds the mutex. Sends nothing to ZooKeeper.
    ///
    /// # Errors
    /// - [`Error::InvalidPath`] when the path is not a usable lock path (empty, relative,
    ///   trailing `/`, `//`, `.` or `..` segments, NUL and other characters ZooKeeper refuses,
    ///   the root, or under `/zookeeper`);
    /// - [`Error::InvalidOptions`] when the ACL list is empty, or the local handoff's bound is
    ///   outside what [`LocalHandoff::new`] takes.
    pub fn build(self) -> Result<InterProcessMutex> {
        validate_lock_path(&self.path)?;
        self.options.validate()?;
        let schema = self.schema.unwrap_or(match self.node_schema {
            NodeSchema::Curator => MUTEX,
            NodeSchema::Kazoo => KAZOO_MUTEX,
        });
        Ok(InterProcessMutex { state: Arc::new(self.lock_state(Role::Mutex, schema)) })
    }

    /// The same mutex on another client (a leader election rejoining on a new session).
    pub(crate) fn on_client(mut self, client: &Client) -> Self {
        self.connection = client.into();
        self
    }

    /// The mutex serves `recipe` (a semaphore's gate): its events and metrics say so.
    pub(crate) fn serving(mut self, recipe: Recipe) -> Self {
        self.serves = Some(recipe);
        self
    }

    /// Our nodes take `schema`'s names, whatever `node_schema` says (a leader latch queues with
    /// Curator's `latch-` names).
    pub(crate) fn named(mut self, schema: Schema) -> Self {
        self.schema = Some(schema);
        self
    }

    pub(crate) fn lock_state(&self, role: Role, schema: Schema) -> LockState {
        let recipe = self.serves.unwrap_or(match role {
            Role::Mutex => Recipe::Mutex,
            Role::Read => Recipe::ReadLock,
            Role::Write => Recipe::WriteLock,
        });
        let label = LockLabel::new(recipe, &self.path, self.options.path_in_metrics);
        LockState::new(role, schema, label, self.connection.clone(), self.path.clone(), self.options.clone())
    }
}

impl InterProcessMutex {
    /// Makes a mutex on `path` with default options; see [`Self::builder`] for node data and
    /// ACLs. Sends nothing to ZooKeeper; the path and its parents are created on first acquire.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] when `path` is not a usable lock path (see [`MutexBuilder::build`]).
    pub fn new(on: impl Into<Connection>, path: &str) -> Result<Self> {
        Self::builder(on, path).build()
    }

    /// Starts building a mutex on `path` with options.
    pub fn builder(on: impl Into<Connection>, path: &str) -> MutexBuilder {
        MutexBuilder {
            connection: on.into(),
            path: path.to_owned(),
            options: LockOptions::mutex(),
            node_schema: NodeSchema::default(),
            serves: None,
            schema: None,
        }
    }

    /// Acquires the mutex, waiting as long as it takes.
    ///
    /// Re-entering from the owner that holds it returns a new guard at once, with no round trip
    /// (but an error if the client already knows that its session has ended).
    ///
    /// # Errors
    /// - [`Error::SessionExpired`] / [`Error::SessionClosed`]: the session ended (before or while
    ///   waiting); returned promptly;
    /// - [`Error::LockLost`]: a reentrant acquire by an owner whose hold is lost (drop its guards
    ///   first);
    /// - [`Error::ZooKeeper`]: ZooKeeper refused an operation (for example `NoAuth`).
    ///
    /// Connection loss is not an error: every step is retried while the session lives.
    ///
    /// # Cancel safety
    /// Cancel safe: dropping the future at any await point leaves no node behind. If our node was
    /// created, a spawned task deletes it within a moment (it finds the node by its protected
    /// prefix when the create's reply had not arrived yet).
    pub async fn acquire(&self) -> Result<LockGuard> {
        self.acquire_reporting(None).await
    }

    /// [`acquire`](Self::acquire), telling `place` where each node it puts in the queue is.
    pub(crate) async fn acquire_reporting(&self, place: Option<&PlaceReport>) -> Result<LockGuard> {
        acquire_forever(|patience| self.acquire_with(patience, place)).await
    }

    /// Acquires within `patience` (what is left of it: a deadline passed is a try): how the
    /// recipes built on mutexes take theirs.
    pub(crate) async fn acquire_within(&self, patience: Patience) -> Result<Option<LockGuard>> {
        acquire_patiently(patience.left(), |patience| self.acquire_with(patience, None)).await
    }

    /// Acquires the mutex, giving up after `timeout`: `Ok(None)` when time ran out.
    ///
    /// The deadline covers everything, the create included; when it passes, our node is deleted
    /// before this returns. A zero timeout behaves as [`try_acquire`](Self::try_acquire).
    ///
    /// # Errors
    /// As [`acquire`](Self::acquire).
    ///
    /// # Cancel safety
    /// Cancel safe, as [`acquire`](Self::acquire).
    pub async fn acquire_timeout(&self, timeout: Duration) -> Result<Option<LockGuard>> {
        self.acquire_with(Patience::within(timeout), None).await
    }

    /// Acquires the mutex only if it is free: `Ok(None)` when another participant holds it or
    /// queues ahead of us. Never waits for another holder; it does wait for ZooKeeper to answer
    /// (one round trip, two when our node must be deleted again).
    ///
    /// # Errors
    /// As [`acquire`](Self::acquire).
    ///
    /// # Cancel safety
    /// Cancel safe, as [`acquire`](Self::acquire).
    pub async fn try_acquire(&self) -> Result<Option<LockGuard>> {
        self.acquire_with(Patience::NoWait, None).await
    }

    /// The lock path.
    pub fn path(&self) -> &str {
        &self.state.path
    }

    pub(crate) fn client(&self) -> Client {
        self.state.connection.client()
    }

    /// Names this lock in events and metrics.
    pub(crate) fn label(&self) -> &LockLabel {
        &self.state.label
    }

    /// Whether the current task (or thread, outside a task) holds this mutex. Curator's
    /// `isOwnedByCurrentThread`.
    pub fn is_acquired_by_current_task(&self) -> bool {
        self.state.is_held_by(Owner::current())
    }

    /// Whether any task or thread of this process holds this mutex (this participant and its
    /// clones). Curator's `isAcquiredInThisProcess`.
    pub fn is_acquired_in_this_process(&self) -> bool {
        self.state.is_held_by_anyone()
    }

    /// The full paths of every participant's node, in queue order: the holder first, then the
    /// waiters in the order they will get the lock. Empty when the lock path does not exist.
    ///
    /// # Errors
    /// [`Error::SessionExpired`], [`Error::SessionClosed`] or [`Error::ZooKeeper`] (for example
    /// `NoAuth`).
    ///
    /// # Cancel safety
    /// Cancel safe: it only reads.
    pub async fn participants(&self) -> Result<Vec<String>> {
        queue_order(&self.state.connection.client(), self.path(), self.state.schema).await
    }

    /// Like [`participants`](Self::participants), with each node's data (read in one request).
    ///
    /// # Errors
    /// As [`participants`](Self::participants).
    ///
    /// # Cancel safety
    /// Cancel safe: it only reads.
    pub async fn participants_with_data(&self) -> Result<Vec<ParticipantNode>> {
        queue_with_data(&self.state.connection.client(), self.path(), self.state.schema).await
    }

    async fn acquire_with(&self, patience: Patience, place: Option<&PlaceReport>) -> Result<Option<LockGuard>> {
        let started = Instant::now();
        self.state.label.acquiring(started, self.acquire_once(patience, place, started)).await
    }

    async fn acquire_once(
        &self,
        patience: Patience,
        place: Option<&PlaceReport>,
        started: Instant,
    ) -> Result<Option<LockGuard>> {
        // A hold counted here is worth nothing once the session is gone; fail before re-entering.
        // On a session, the client of the session now (once an expiry's reconnection is through).
        let Some(client) = within(patience.deadline(), self.state.connection.usable_client()).await else {
            return Ok(None);
        };
        if let Some(ended) = ended_session(&client) {
            return Err(ended);
        }
        let owner = self.state.owner_now();
        let claim = match self.admit(owner, patience).await? {
            Arrival::Queue(claim) => claim,
            Arrival::Reentered(guard) => return Ok(Some(guard)),
            Arrival::OutOfTime => return Ok(None),
        };
        let state = &self.state;
        let other_side = state.sibling_node_held_by(owner);
        let entry = entry::entry(state.role, state.schema, other_side.as_deref().map(HeldNode::path))
            .map_err(Error::WouldDeadlock)?;
        let turn = match &state.cohort {
            None => None,
            Some(cohort) => match cohort.take_turn(&client, patience).await? {
                None => return Ok(None),
                Some(Turn::Hold(handoff)) => {
                    state.label.handed_over(handoff.node.path(), handoff.fencing_token, started);
                    return Ok(Some(LockGuard::new(Arc::clone(state), owner, claim.take_handoff(handoff))));
                }
                Some(Turn::Queue(turn)) => Some(turn),
            },
        };
        let may_wait = patience != Patience::NoWait;
        let spec = QueueSpec {
            opening: opening::usable(state.take_opening(), entry.rule, may_wait),
            level_with: entry.level_with,
            place,
            ..QueueSpec::new(&client, &state.path, state.schema, entry.rule, &state.data, &state.acls)
        };
        let Some((node, next_opening)) = take_place(&spec, patience).await? else {
            return Ok(None);
        };
        let Some(fencing_token) = state.first_token(node.czxid) else {
            delete_in_background(&client, node.path.into(), node.watch);
            return Err(Error::InvalidOptions("local handoff: the lock node's czxid is past 2^55"));
        };
        let events = state.label.acquired(&node.path, fencing_token, started);
        let hold = claim.grant(&client, node, next_opening, fencing_token, events);
        if let Some(turn) = turn {
            turn.hold(&hold.node);
        }
        Ok(Some(LockGuard::new(Arc::clone(state), owner, hold)))
    }

    /// Where this lock stands in a multi-lock's canonical order: by path, and on one path the
    /// write side before the read side (a downgrade, never an upgrade).
    pub(crate) fn acquisition_order(&self) -> (&str, u8) {
        let side = match self.state.role {
            Role::Write => 0,
            Role::Mutex => 1,
            Role::Read => 2,
        };
        (self.path(), side)
    }

    /// Lets `owner` in: re-enters its hold at once, or claims its place in the queue, first
    /// waiting (within `patience`) for its own acquire under way.
    async fn admit(&self, owner: Owner, patience: Patience) -> Result<Arrival> {
        loop {
            match self.state.admit(owner) {
                Admission::Reentered(hold) => {
                    return Ok(Arrival::Reentered(LockGuard::new(self.state.clone(), owner, hold)))
                }
                Admission::Lost(reason) => return Err(Error::LockLost(reason)),
                Admission::Queue(claim) => return Ok(Arrival::Queue(claim)),
                Admission::WaitForOwnAcquire(done) => {
                    if patience == Patience::NoWait || within(patience.deadline(), done).await.is_none() {
                        return Ok(Arrival::OutOfTime);
                    }
                }
            }
        }
    }
}

/// How an owner's acquire arrived: in its own hold again, in the queue, or out of time.
enum Arrival {
    Reentered(LockGuard),
    Queue(Claim),
    /// Its patience ran out behind its own acquire under way.
    OutOfTime,
}

impl fmt::Debug for InterProcessMutex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InterProcessMutex")
            .field("path", &self.state.path)
            .field("session", &self.state.connection.client().session_id())
            .field("acquired_in_this_process", &self.is_acquired_in_this_process())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Guards and the futures users await must cross threads (tokio's `bounds()` idiom).
    #[allow(dead_code)]
    fn bounds(mutex: InterProcessMutex) {
        fn send_static<T: Send + 'static>(_: &T) {}
        fn send_sync<T: Send + Sync + Clone + fmt::Debug>(_: &T) {}
        send_sync(&mutex);
        send_static(&async move { mutex.acquire().await.map(|guard| send_static(&guard)) });
    }
}
