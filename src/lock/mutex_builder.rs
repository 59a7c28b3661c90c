//! How an `InterProcessMutex` is made: new, its builder, `NodeSchema`.
//!
//! Its options are what every lock queue of nodes is built with (the read-write lock's too, and,
//! from within the crate, a semaphore's gate and an election's mutex). `mutex.rs` is how it
//! acquires.

use std::sync::Arc;

use crate::client::session::Connection;
use crate::error::Result;
use crate::lock::mutex::{InterProcessMutex, LockState};
use crate::observe::label::{LockLabel, Recipe};
use crate::options::{LocalHandoff, LockOptions, Settings};
use crate::rules::entry::Role;
use crate::rules::naming::{Schema, KAZOO_MUTEX, MUTEX};
use crate::rules::path::validate_lock_path;

/// Builds an [`InterProcessMutex`] (or, with [`build_read_write`](Self::build_read_write), an
/// [`InterProcessReadWriteLock`](crate::InterProcessReadWriteLock)) with options; from
/// [`InterProcessMutex::builder`]. Every recipe's builder takes the same options: ACLs, loss
/// policy, node data.
#[derive(Clone, Debug)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct MutexBuilder {
    pub(crate) connection: Connection,
    pub(crate) path: String,
    pub(crate) settings: Settings,
    pub(crate) node_schema: NodeSchema,
    /// Set when the mutex serves another recipe (a semaphore's gate).
    serves: Option<Recipe>,
    /// The names our nodes take, when the recipe asks for other than `node_schema`'s (a leader
    /// latch's `latch-` names).
    schema: Option<Schema>,
}

/// How lock nodes are named and ordered, which decides who can share a lock with zklock.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
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
    /// A read-write lock with it uses kazoo's `ReadLock`/`WriteLock` layout
    /// (`{hex32}__rlock__{seq}`, `{hex32}__lock__{seq}`), and a semaphore kazoo's `Semaphore`
    /// layout ([`SemaphoreBuilder::node_schema`](crate::SemaphoreBuilder::node_schema)).
    Kazoo,
}

impl MutexBuilder {
    /// How lock nodes are named and ordered, to share the lock with Curator (the default) or
    /// with kazoo. See [`NodeSchema`].
    pub fn node_schema(mut self, schema: NodeSchema) -> Self {
        self.node_schema = schema;
        self
    }

    /// The options every recipe takes (node data, ACLs, loss policy, maximum hold time, the
    /// lock path in metrics), as one value: see [`LockOptions`](crate::LockOptions). Replaces
    /// any given before. Defaults to [`LockOptions::new`](crate::LockOptions::new).
    pub fn options(mut self, options: LockOptions) -> Self {
        self.settings.common = options;
        self
    }

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
        self.settings.reentrant = reentrant;
        self
    }

    /// Passes the hold from task to task of this process, behind one queue node, within
    /// `bound` (lock cohorting); see [`LocalHandoff`] for the fairness it keeps between processes
    /// and its fencing tokens. Share one mutex object (cloned) among the tasks. On a read-write
    /// lock ([`build_read_write`](Self::build_read_write)) the write side hands off; readers
    /// share anyway. Defaults to off: every acquire queues a node of its own.
    pub fn local_handoff(mut self, bound: LocalHandoff) -> Self {
        self.settings.local_handoff = Some(bound);
        self
    }

    /// Fails a waiting acquire with [`Error::Deadlock`](crate::Error::Deadlock) once it is the
    /// victim of a deadlock among the locks under `root`: a ring of tasks (of one process or
    /// several), each waiting on a lock that the next one holds, which without it would wait
    /// for ever.
    ///
    /// While an acquire **waits** (not one that holds at once: the uncontended path sends
    /// nothing more), it reads the lock folders under `root` as
    /// [`find_deadlocks`](crate::deadlock::find_deadlocks) does when it starts waiting, then once
    /// every [`deadlock_scan_period`](Self::deadlock_scan_period) (200 ms unless set), until it
    /// holds, gives up or is dropped (a dropped acquire stops looking). A deadlock that our node
    /// completes is found by the first read; one completed later (a lock changing hands) within
    /// a period and a read or two.
    ///
    /// Exactly one wait of a ring gives up: its victim, which every process computes the same
    /// way, the newest waiting node (highest czxid) among the ring's hops of one wait. The
    /// victim's acquire deletes its node and returns the error; the others wait on, and go on
    /// once the victim's session lets go of what it holds (the victim's caller is expected to
    /// release its other locks and try again later). So every participant that may close a
    /// ring should be built with this option on the same root: a ring whose victim did not opt
    /// in (or is Curator, kazoo, or another root's) stays, and `zklock deadlocks` shows it.
    ///
    /// Covers this mutex and, built with [`build_read_write`](Self::build_read_write), both
    /// sides of the read-write lock, a kazoo-schema mutex, and a multi-lock's locks built so
    /// (an [`InterProcessMultiLock`](crate::InterProcessMultiLock) of such mutexes). Not a
    /// semaphore's waits: a semaphore waiter goes on when any lease is let go, so a ring through
    /// one is no deadlock of the graph; nor a local handoff's tasks waiting in the process behind
    /// the one that queues (that one looks).
    ///
    /// The tasks of one process share its session, and ZooKeeper alone cannot tell which of
    /// them holds a node; so each node this lock creates carries its owner's tag (a 48-bit hash
    /// of the tokio task, or of the thread outside a task, even when the lock is not reentrant:
    /// what waits is the task) in the uuid of its protected prefix, an RFC 9562 version 8 uuid
    /// where it would be a random version 4 one. Curator and kazoo use that uuid only to find
    /// their own node again, so the nodes stay theirs to read and wait for. A session whose nodes all carry tags is read as its tasks: a task holding a
    /// lock while not waiting is no part of a ring its sibling's wait seems to close, and two
    /// tasks of one process waiting on each other are a ring. What stays a whole session, one
    /// vertex as if its tasks were one: a session with any node under `root` that carries no
    /// tag (a lock without this option, one with [`local_handoff`](Self::local_handoff), whose
    /// hold passes between tasks behind one node, a Curator or kazoo participant); there a
    /// task waiting on a lock a sibling holds is no wait, but a session holding through a task
    /// that does not wait looks like one whose holding task waits (opt in on every lock of the
    /// session, or give such parts sessions of their own). And a task is one owner only as far
    /// as it waits itself: a task that holds a lock and then waits for another task that
    /// acquires (a spawned task it awaits) is two owners, so a ring through it is missed, never
    /// a false one reported. A guard moved to another task keeps the tag of the task that took
    /// it: should that task then wait in a ring the new holder is not on, the ring is reported
    /// though the new holder will let go; keep guards in the task that acquired them.
    ///
    /// Each read costs a `sync`, a listing per folder under `root` and a multi-read per lock,
    /// from every waiting acquire: choose a root that holds the locks that can deadlock, not
    /// the whole tree.
    ///
    /// `root` is checked by [`build`](Self::build) as a lock path is, but may be `/`.
    pub fn fail_on_deadlock(mut self, root: &str) -> Self {
        self.settings.deadlock_root = Some(root.to_owned());
        self
    }

    /// How often a waiting acquire built with [`fail_on_deadlock`](Self::fail_on_deadlock)
    /// reads the lock folders under its root again, after the read when it starts waiting.
    /// Defaults to 200 ms: within two ticks of a test server (tickTime 200 ms) a ring completed
    /// by a lock changing hands is found, and within a fifth of two ticks of ZooKeeper's
    /// default (tickTime 2 s). Shorter finds such a ring sooner, at a read per period per
    /// waiting acquire. Must be above zero.
    pub fn deadlock_scan_period(mut self, period: std::time::Duration) -> Self {
        self.settings.deadlock_scan_period = Some(period);
        self
    }

    /// Says that this lock's holder is one link of a chain of processes that form one owner,
    /// `chain` the chain's id (under 2^48), the same in each of them: a parent job that holds a
    /// lock until its child ends, and the child, which waits on another, as `zklock` and the
    /// `zklock` its command runs (the command passes its chain on in `ZKLOCK_CHAIN`). Defaults
    /// to none.
    ///
    /// Each node this lock creates carries the chain's id in the uuid of its protected prefix
    /// (an RFC 9562 version 8 uuid, its first 12 hex digits the id, with a marker of its own),
    /// and [`find_deadlocks`](crate::deadlock::find_deadlocks) reads every node of one chain as one
    /// member of a ring
    /// ([`DeadlockHop::waiter_chain`](crate::deadlock::DeadlockHop::waiter_chain)), whatever its
    /// session: the parent holding one lock and its child waiting on another are one owner holding
    /// and waiting, as a task is. A ring of such members (chains, or tasks of
    /// [`fail_on_deadlock`](Self::fail_on_deadlock)) is certain. Every task of the process is the
    /// chain's: set it on every lock of the process, or on none. Without it, the parent and the
    /// child are two sessions, neither holding what it waits on, and a ring through them is not
    /// seen at all.
    ///
    /// What it promises is yours to keep: a link lets go of its locks only once the links it
    /// started have ended, and it starts them one at a time. Two links that run side by side
    /// (children of one parent in parallel) are not one owner: one may let go while the other
    /// waits, so a ring through the first one's hold may be reported that dissolves; give them
    /// chains of their own. Pick the id at random when the chain starts (an id another chain
    /// has joins the two); an id is compared across sessions, unlike a task's tag. Only the
    /// node's uuid changes: Curator and kazoo still read it as a lock node, and it costs no
    /// request. It does not make an acquire look for deadlocks: that is
    /// [`fail_on_deadlock`](Self::fail_on_deadlock)'s. A leader selector's nodes carry the
    /// election's mark instead.
    ///
    /// `chain` is checked by [`build`](Self::build).
    pub fn owner_chain(mut self, chain: u64) -> Self {
        self.settings.owner_chain = Some(chain);
        self
    }

    /// Builds the mutex. Sends nothing to ZooKeeper.
    ///
    /// # Errors
    /// - [`Error::InvalidPath`](crate::Error::InvalidPath) when the path is not a usable lock path (empty, relative,
    ///   trailing `/`, `//`, `.` or `..` segments, NUL and other characters ZooKeeper refuses,
    ///   the root, or under `/zookeeper`), or the root given to
    ///   [`fail_on_deadlock`](Self::fail_on_deadlock) is not (`/` aside);
    /// - [`Error::InvalidOptions`](crate::Error::InvalidOptions) when the ACL list is empty, the local handoff's bound is
    ///   outside what [`LocalHandoff::new`] takes, the deadlock scan period is zero, the
    ///   [`owner_chain`](Self::owner_chain)'s id is 2^48 or over, or the
    ///   [`max_hold`](crate::LockOptions::max_hold) bound is zero or over a year.
    pub fn build(self) -> Result<InterProcessMutex> {
        self.validate()?;
        let schema = self.schema.unwrap_or(match self.node_schema {
            NodeSchema::Curator => MUTEX,
            NodeSchema::Kazoo => KAZOO_MUTEX,
        });
        Ok(InterProcessMutex { state: Arc::new(self.lock_state(Role::Mutex, schema)) })
    }

    /// Refuses a path or options no lock can work with (see [`build`](Self::build)).
    pub(crate) fn validate(&self) -> Result<()> {
        validate_lock_path(&self.path)?;
        if let Some(root) = self.settings.deadlock_root.as_deref().filter(|root| *root != "/") {
            validate_lock_path(root)?;
        }
        self.settings.validate()
    }

    /// The mutex serves `recipe` (a semaphore's gate): its events and metrics say so.
    pub(crate) fn serving(mut self, recipe: Recipe) -> Self {
        self.serves = Some(recipe);
        self
    }

    /// Our nodes are an election's (a leader selector's, named like a mutex's): their uuids say
    /// so, and the deadlock scan never reads their queue as a lock.
    pub(crate) fn electing(mut self) -> Self {
        self.settings.election = true;
        self
    }

    /// A leader election's participant: its options are refused where an election cannot take
    /// them, and its nodes carry its `id`, as Curator's participants' do.
    pub(crate) fn participant(mut self, id: &str) -> Result<Self> {
        self.settings.common.validate_for_election()?;
        self.settings.common.data = id.as_bytes().to_vec();
        Ok(self)
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
        let label = LockLabel::new(recipe, &self.path, self.settings.common.path_in_metrics);
        LockState::new(role, schema, label, self.connection.clone(), self.path.clone(), self.settings.clone())
    }
}

impl InterProcessMutex {
    /// Makes a mutex on `path` with default options; see [`Self::builder`] for node data and
    /// ACLs. Sends nothing to ZooKeeper; the path and its parents are created on first acquire.
    ///
    /// # Errors
    /// [`Error::InvalidPath`](crate::Error::InvalidPath) when `path` is not a usable lock path (see [`MutexBuilder::build`]).
    pub fn new(on: impl Into<Connection>, path: &str) -> Result<Self> {
        Self::builder(on, path).build()
    }

    /// Starts building a mutex on `path` with options.
    pub fn builder(on: impl Into<Connection>, path: &str) -> MutexBuilder {
        MutexBuilder {
            connection: on.into(),
            path: path.to_owned(),
            settings: Settings::mutex(),
            node_schema: NodeSchema::default(),
            serves: None,
            schema: None,
        }
    }
}
