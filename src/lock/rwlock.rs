//! `InterProcessReadWriteLock`: many readers or one writer, shared through ZooKeeper.

use crate::client::session::Connection;

use std::sync::Arc;

use crate::error::Result;
use crate::lock::mutex::{InterProcessMutex, LockState, MutexBuilder, NodeSchema};
use crate::options::LocalHandoff;
use crate::rules::entry::Role;
use crate::rules::naming::{KAZOO_READ, KAZOO_WRITE, READ, WRITE};

/// A read-write lock shared by every process that uses the same ZooKeeper path, in the style of
/// Apache Curator's `InterProcessReadWriteLock`, and wire-compatible with it.
///
/// Readers and writers stand in one queue under the lock path (`_c_{uuid}-__READ__{seq}` and
/// `_c_{uuid}-__WRIT__{seq}`), ordered by sequence. A writer holds when it is first; a reader
/// holds when no writer is ahead of it, so readers share the lock and a waiting writer keeps
/// later readers out (writers do not starve).
///
/// Both sides are [`InterProcessMutex`]es with everything that implies: reentrant per tokio task
/// (two futures of one task, `join!`, share a hold; [`ReadWriteLockBuilder::reentrant`]`(false)`
/// gives tokio's semantics, without downgrade), timed and cancel-safe acquires, guards with
/// fencing tokens and loss signals.
///
/// - **Downgrade**: the holder of the write lock may take the read lock (at once), then release
///   the write lock and keep reading.
/// - **kazoo's layout**: built with [`ReadWriteLockBuilder::node_schema`]`(NodeSchema::Kazoo)`
///   the nodes are `{hex32}__rlock__{seq}` and `{hex32}__lock__{seq}`, and the lock is shared
///   with Python services using kazoo's `ReadLock` and `WriteLock` on the same path (and with
///   kazoo's `Lock`, which is its `WriteLock` without the readers). Same rules, guarantees and
///   options. kazoo 2.8's own `ReadLock` also waits for writers queued *behind* it (kazoo #649,
///   fixed in 2.9), so kazoo 2.8 readers can deadlock with any later writer, zklock's or
///   kazoo's, until one of them times out: docs/interop.md.
/// - **No upgrade**: the holder of the read lock asking for the write lock gets
///   [`Error::WouldDeadlock`](crate::Error::WouldDeadlock) at once (Curator's would wait for
///   ever). Release the read lock first.
///
/// # Examples
///
/// ```no_run
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let client = zklock::Client::connect("127.0.0.1:2181").await?;
/// let lock = zklock::InterProcessReadWriteLock::new(&client, "/app/locks/catalog")?;
/// let reading = lock.read_lock().acquire().await?; // shared with other readers
/// reading.release().await?;
/// let writing = lock.write_lock().acquire().await?; // alone
/// let downgraded = lock.read_lock().acquire().await?; // the writer may also read
/// writing.release().await?; // now only reading
/// downgraded.release().await?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct InterProcessReadWriteLock {
    read: InterProcessMutex,
    write: InterProcessMutex,
}

impl InterProcessReadWriteLock {
    /// Makes a read-write lock on `path` with default options (see [`Self::builder`] for node
    /// data, ACLs and the loss policy). Sends nothing to ZooKeeper.
    ///
    /// # Errors
    /// [`Error::InvalidPath`](crate::Error::InvalidPath) when `path` is not a usable lock path.
    pub fn new(on: impl Into<Connection>, path: &str) -> Result<Self> {
        Self::builder(on, path).build()
    }

    /// Starts building a read-write lock on `path` with options, the same for both sides.
    pub fn builder(on: impl Into<Connection>, path: &str) -> ReadWriteLockBuilder {
        ReadWriteLockBuilder { mutex: InterProcessMutex::builder(on, path) }
    }

    /// The read side: shared with other readers, excluded by a writer that holds or waits ahead.
    pub fn read_lock(&self) -> &InterProcessMutex {
        &self.read
    }

    /// The write side: exclusive.
    pub fn write_lock(&self) -> &InterProcessMutex {
        &self.write
    }
}

/// Builds an [`InterProcessReadWriteLock`] with options, the same for both sides; from
/// [`InterProcessReadWriteLock::builder`].
#[derive(Clone, Debug)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct ReadWriteLockBuilder {
    mutex: MutexBuilder,
}

impl ReadWriteLockBuilder {
    /// The options every recipe takes (node data, ACLs, loss policy, maximum hold time, the
    /// lock path in metrics), as one value: see [`LockOptions`](crate::LockOptions). Replaces
    /// any given before. Defaults to [`LockOptions::new`](crate::LockOptions::new).
    pub fn options(self, options: crate::options::LockOptions) -> Self {
        ReadWriteLockBuilder { mutex: self.mutex.options(options) }
    }

    /// How the nodes are named and ordered: Curator's `__READ__`/`__WRIT__` layout (the
    /// default) or kazoo's `__rlock__`/`__lock__` ([`NodeSchema::Kazoo`]), to share the lock with
    /// kazoo's `ReadLock` and `WriteLock`. Never both on one path: neither sees the other's nodes.
    pub fn node_schema(self, schema: NodeSchema) -> Self {
        ReadWriteLockBuilder { mutex: self.mutex.node_schema(schema) }
    }

    /// Whether each side is reentrant per task; see [`MutexBuilder::reentrant`]. Defaults to
    /// `true`; with `false` a writer cannot downgrade.
    pub fn reentrant(self, reentrant: bool) -> Self {
        ReadWriteLockBuilder { mutex: self.mutex.reentrant(reentrant) }
    }

    /// Fails a waiting acquire of either side with [`Error::Deadlock`](crate::Error::Deadlock)
    /// once it is the victim of a deadlock among the locks under `root`; see
    /// [`MutexBuilder::fail_on_deadlock`].
    pub fn fail_on_deadlock(self, root: &str) -> Self {
        ReadWriteLockBuilder { mutex: self.mutex.fail_on_deadlock(root) }
    }

    /// How often a waiting acquire looks for a deadlock again; see
    /// [`MutexBuilder::deadlock_scan_period`].
    pub fn deadlock_scan_period(self, period: std::time::Duration) -> Self {
        ReadWriteLockBuilder { mutex: self.mutex.deadlock_scan_period(period) }
    }

    /// Says that both sides' holder is one link of a chain of processes that form one owner;
    /// see [`MutexBuilder::owner_chain`].
    pub fn owner_chain(self, chain: u64) -> Self {
        ReadWriteLockBuilder { mutex: self.mutex.owner_chain(chain) }
    }

    /// Passes the write side's hold from task to task of this process, behind one queue node,
    /// within `bound` (lock cohorting); see [`MutexBuilder::local_handoff`]. Readers share the
    /// lock anyway: the read side never hands off. Defaults to off.
    pub fn local_handoff(self, bound: LocalHandoff) -> Self {
        ReadWriteLockBuilder { mutex: self.mutex.local_handoff(bound) }
    }

    /// Builds the read-write lock: its two sides, one mutex each, paired so that the write
    /// holder may take the read side (a downgrade). Sends nothing to ZooKeeper.
    ///
    /// # Errors
    /// As [`MutexBuilder::build`].
    pub fn build(self) -> Result<InterProcessReadWriteLock> {
        let builder = self.mutex;
        builder.validate()?;
        let (read, write) = match builder.node_schema {
            NodeSchema::Curator => (READ, WRITE),
            NodeSchema::Kazoo => (KAZOO_READ, KAZOO_WRITE),
        };
        let read = Arc::new(builder.lock_state(Role::Read, read));
        let write = Arc::new(builder.lock_state(Role::Write, write));
        LockState::pair(&read, &write);
        Ok(InterProcessReadWriteLock {
            read: InterProcessMutex { state: read },
            write: InterProcessMutex { state: write },
        })
    }
}
