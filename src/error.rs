//! The crate's one error type, and what it carries: the reason a hold was lost, and the ring of
//! waits an acquire gave up to break (`rules/wait_for.rs` finds it).

use std::fmt;
use std::time::Duration;

/// A `Result` whose error is [`enum@Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What can go wrong with a zklock lock.
///
/// `Display` says what happened; the client's error behind it is the
/// [`source`](std::error::Error::source), so that a chain (`{:#}` of anyhow, eyre's reports)
/// prints each cause once. To print it without such a crate, walk `source()`.
///
/// Timing out is not an error: [`acquire_timeout`](crate::InterProcessMutex::acquire_timeout)
/// returns `Ok(None)`.
#[derive(Clone, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The lock path is not a valid ZooKeeper path for a lock; nothing was sent to ZooKeeper.
    #[error("invalid lock path {path:?}: {reason}")]
    InvalidPath {
        /// The path as given.
        path: String,
        /// What is wrong with it.
        reason: &'static str,
    },

    /// A lock option is unusable (for example an empty ACL list); nothing was sent to ZooKeeper.
    #[error("invalid lock options: {0}")]
    InvalidOptions(&'static str),

    /// The ZooKeeper session expired. Its ephemeral nodes, and so any lock it held, are gone;
    /// the client cannot be used again: connect a new one.
    #[error("zookeeper session expired")]
    SessionExpired,

    /// The ZooKeeper client was closed (or failed to authenticate), so nothing can be sent.
    #[error("zookeeper client is closed")]
    SessionClosed,

    /// Our lock node was deleted by someone else (an operator, a revoker, a deleted lock path)
    /// while we held it. (A waiting acquire whose node is deleted queues again with a new one
    /// instead; a semaphore starts over from its mutex.)
    #[error("lock node {path} was deleted by someone else")]
    LockNodeDeleted {
        /// The full path of the node.
        path: String,
    },

    /// The lock this guard (or reentrant acquire) stands for was lost; see
    /// [`LockGuard::lost`](crate::LockGuard::lost). Drop every guard of the lost hold before the
    /// owner acquires again.
    #[error("lock lost: {0}")]
    LockLost(crate::error::LossReason),

    /// The request would wait for ever on the caller itself (for example the holder of a read
    /// lock asking for the write lock of the same read-write lock).
    #[error("would deadlock: {0}")]
    WouldDeadlock(&'static str),

    /// The acquire waited in a deadlock, a ring of tasks (or whole sessions, see [`Deadlock`])
    /// each waiting on a lock the next one holds, and gave up to break it: its node was the ring's chosen victim, and it was deleted
    /// before this returned, so the others go on. Only an acquire built with
    /// [`MutexBuilder::fail_on_deadlock`](crate::MutexBuilder::fail_on_deadlock) returns it.
    #[error("deadlock: {} tasks or sessions wait on each other in a ring; this acquire gave up to break it", .0.hops.len())]
    Deadlock(Box<Deadlock>),

    /// One of the caller's operations in a fenced write
    /// ([`LockGuard::commit`](crate::LockGuard::commit)) failed while the lock was held; the
    /// transaction committed nothing.
    #[error("fenced write: operation {index} failed")]
    WriteFailed {
        /// Which of the caller's operations failed, counting from 0 (the lock check not counted).
        index: usize,
        /// Why ZooKeeper refused it.
        #[source]
        source: zookeeper_client::Error,
    },

    /// The leader election (a [`LeaderLatch`](crate::LeaderLatch) or
    /// [`LeaderSelector`](crate::LeaderSelector)) has not been started.
    #[error("the leader election was not started")]
    ElectionNotStarted,

    /// The leader election was already started; a latch or selector joins once (make a new one
    /// to join again).
    #[error("the leader election was already started")]
    ElectionAlreadyStarted,

    /// The leader election was closed: this participant has left it for good.
    #[error("the leader election was closed")]
    ElectionClosed,

    /// ZooKeeper refused an operation, or it failed in a way zklock does not retry
    /// (for example `NoAuth` when the ACL of the lock path forbids us).
    #[error("zookeeper {operation} {path} failed")]
    ZooKeeper {
        /// What zklock was doing: `create`, `list`, `watch`, `delete`, ...
        operation: &'static str,
        /// The path it was done on.
        path: String,
        /// The client's error.
        #[source]
        source: zookeeper_client::Error,
    },
}

impl Error {
    /// This error and each of its causes, `: `-separated, for one line of a log or of a
    /// command's output (what zklock's own logs print). `Display` says only what happened, so
    /// that error reporters such as anyhow print each cause once.
    pub fn with_causes(&self) -> impl std::fmt::Display + '_ {
        WithCauses(self)
    }

    /// The variant's name in snake case: the `kind` label of `zklock_acquire_errors_total`.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Error::InvalidPath { .. } => "invalid_path",
            Error::InvalidOptions(_) => "invalid_options",
            Error::SessionExpired => "session_expired",
            Error::SessionClosed => "session_closed",
            Error::LockNodeDeleted { .. } => "lock_node_deleted",
            Error::LockLost(_) => "lock_lost",
            Error::WouldDeadlock(_) => "would_deadlock",
            Error::Deadlock(_) => "deadlock",
            Error::WriteFailed { .. } => "write_failed",
            Error::ElectionNotStarted => "election_not_started",
            Error::ElectionAlreadyStarted => "election_already_started",
            Error::ElectionClosed => "election_closed",
            Error::ZooKeeper { .. } => "zookeeper",
        }
    }
}

/// An error with its causes, for a log line; see [`Error::with_causes`].
pub(crate) struct WithCauses<'a>(&'a Error);

impl std::fmt::Display for WithCauses<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)?;
        let mut cause = std::error::Error::source(self.0);
        while let Some(next) = cause {
            write!(f, ": {next}")?;
            cause = next.source();
        }
        Ok(())
    }
}

/// Why a lock is no longer held (see [`LockGuard::lost`](crate::LockGuard::lost)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LossReason {
    /// The ZooKeeper session expired: the server deleted the lock node, and another participant
    /// may hold the lock now.
    SessionExpired,
    /// The ZooKeeper client was closed (or failed to authenticate).
    SessionClosed,
    /// Someone else deleted our node (an operator, a revoker, a deleted lock path): the lock
    /// node, the lease node, or the leader's node.
    NodeDeleted,
    /// The client was disconnected for `after`, long enough that the server may have expired
    /// the session (see [`LossPolicy`](crate::LossPolicy)). The lock may in fact survive if the client reconnects in
    /// time, but it can no longer be relied on.
    Disconnected {
        /// How long the client had been disconnected when the lock was given up.
        after: Duration,
    },
}

impl fmt::Display for LossReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LossReason::SessionExpired => f.write_str("the zookeeper session expired"),
            LossReason::SessionClosed => f.write_str("the zookeeper client was closed"),
            LossReason::NodeDeleted => f.write_str("our node was deleted by someone else"),
            LossReason::Disconnected { after } => {
                write!(f, "disconnected from zookeeper for {after:?}")
            }
        }
    }
}

/// A deadlock: tasks (or whole sessions) in a ring, each waiting on a lock the next one holds,
/// so that none of them can go on until one gives up. What
/// [`find_deadlocks`](crate::find_deadlocks) returns and [`Error::Deadlock`] carries.
///
/// The tasks of one process share its session, and ZooKeeper alone cannot tell which of them
/// holds a node. A lock built with
/// [`fail_on_deadlock`](crate::MutexBuilder::fail_on_deadlock) tells: each node it creates
/// carries its task's owner tag in the uuid of its protected prefix (see
/// [`DeadlockHop::waiter_owner`]), and a session whose nodes all carry one is read as its
/// tasks. A session with a node that carries none (a lock without the opt-in, one with local
/// handoff, a Curator or kazoo participant) is read whole, as one: a task of it waiting on a
/// lock another of its tasks holds is no edge (that task lets go when its work is done), but it
/// holding a lock through a task that does not wait, while another of its tasks waits, looks
/// the same as one whose holding task waits.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Deadlock {
    /// The ring's steps: each hop's holder is the next hop's waiter, and the last hop's holder
    /// the first hop's waiter. It starts at the smallest session id (then the smallest owner
    /// tag, a session read whole first).
    pub hops: Vec<DeadlockHop>,
}

impl Deadlock {
    /// Every wait of the ring, hop by hop.
    pub fn waits(&self) -> impl Iterator<Item = &LockWait> {
        self.hops.iter().flat_map(|hop| &hop.waits)
    }
}

/// One step of a [`Deadlock`]'s ring: one task (or session) waits on another. Two tasks of one
/// session may make a hop, so `waiter_session` and `holder_session` may be equal; the owners
/// then differ.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct DeadlockHop {
    /// The waiting session (its id, a node's `ephemeralOwner`).
    pub waiter_session: i64,
    /// The session it waits on.
    pub holder_session: i64,
    /// The waiting task's owner tag, a 48-bit hash of the tokio task (or thread) that acquires,
    /// written by a lock built with [`fail_on_deadlock`](crate::MutexBuilder::fail_on_deadlock)
    /// into the uuid of each node it creates (an RFC 9562 version 8 uuid whose first 12 hex
    /// digits are the tag). It tells apart the tasks of one session,
    /// and means nothing across sessions. `None` when the session is read whole.
    pub waiter_owner: Option<u64>,
    /// The holding task's owner tag, as [`waiter_owner`](Self::waiter_owner).
    pub holder_owner: Option<u64>,
    /// Every node of the waiting task (or session) queued on a lock that the other one holds:
    /// one or more.
    pub waits: Vec<LockWait>,
}

/// A node waiting in a lock's queue while a node of another task (or session) holds that lock.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct LockWait {
    /// The lock path.
    pub lock: String,
    /// The waiting node's full path.
    pub waiter_node: String,
    /// The waiting node's czxid: the later it was created, the higher.
    pub waiter_czxid: i64,
    /// The waiting node's data (for a zklock participant, what
    /// [`MutexBuilder::node_data`](crate::MutexBuilder::node_data) set).
    pub waiter_data: Vec<u8>,
    /// The full path of the holding node it waits on.
    pub holder_node: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_auth_on_create() -> Error {
        Error::ZooKeeper { operation: "create", path: "/a".to_owned(), source: zookeeper_client::Error::NoAuth }
    }

    /// Each cause of `err` and of its sources, joined as error reporters join them.
    fn chain(err: &dyn std::error::Error) -> String {
        let mut text = err.to_string();
        let mut cause = err.source();
        while let Some(next) = cause {
            text += &format!(": {next}");
            cause = next.source();
        }
        text
    }

    #[test]
    fn our_logs_print_the_error_with_its_causes() {
        let err = no_auth_on_create();
        assert_eq!(err.with_causes().to_string(), chain(&err));
        assert_eq!(err.with_causes().to_string(), "zookeeper create /a failed: not authorized");
    }

    #[test]
    fn a_chain_prints_each_cause_once() {
        #[derive(Debug, thiserror::Error)]
        #[error("publishing the nightly report")]
        struct Job(#[source] Error);

        let zookeeper = Job(no_auth_on_create());
        assert_eq!(chain(&zookeeper), "publishing the nightly report: zookeeper create /a failed: not authorized");
        let write = Job(Error::WriteFailed { index: 1, source: zookeeper_client::Error::BadVersion });
        assert_eq!(
            chain(&write),
            format!(
                "publishing the nightly report: fenced write: operation 1 failed: {}",
                zookeeper_client::Error::BadVersion
            )
        );
        let lost = Job(Error::LockLost(LossReason::NodeDeleted));
        assert_eq!(chain(&lost), format!("publishing the nightly report: lock lost: {}", LossReason::NodeDeleted));
    }

    #[test]
    fn error_is_send_sync_static() {
        fn bounds<T: std::error::Error + Send + Sync + 'static>() {}
        bounds::<Error>();
    }

    #[test]
    fn reasons_read_well() {
        assert_eq!(LossReason::NodeDeleted.to_string(), "our node was deleted by someone else");
        assert_eq!(
            LossReason::Disconnected { after: Duration::from_secs(2) }.to_string(),
            "disconnected from zookeeper for 2s"
        );
    }
}
