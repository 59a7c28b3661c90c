//! The crate's one error type, the reason a hold was lost, and a deadlock's ring.
//!
//! The ring is the waits an acquire gave up to break (`rules/wait_for.rs` finds it).

use std::fmt;
use std::time::Duration;

/// A `Result` whose error is [`enum@Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What can go wrong with a zklock lock.
///
/// `Display` says what failed, on which path, and why: a variant with a ZooKeeper client error
/// behind it ends with that error's text (`zookeeper create /app/lock failed: not authorized`),
/// so that `println!("{err}")` alone tells the whole story. The client's error is kept as the
/// [`source`](std::error::Error::source) too, for code that matches on it; a reporter that
/// walks the chain (`{:#}` of anyhow) prints its short text once more.
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

    /// The hold this guard, lease, term or reentrant acquire stands for was lost, and the reason
    /// says how (the session's end, an operator's delete of our node, a connection lost too
    /// long): the one way zklock says so, whether the loss was seen before a release, by the
    /// release itself, or by [`Hold::lost`](crate::hold::Hold::lost). Drop every guard of
    /// the lost hold before the owner acquires again.
    #[error("lock lost: {0}")]
    LockLost(crate::error::LossReason),

    /// The request would wait for ever on the caller itself (for example the holder of a read
    /// lock asking for the write lock of the same read-write lock).
    #[error("would deadlock: {0}")]
    WouldDeadlock(&'static str),

    /// The acquire waited in a deadlock, a ring of tasks or chains (see [`Deadlock`]) each
    /// waiting on a lock the next one holds, and gave up to break it: its node was the ring's
    /// chosen victim, and it was deleted before this returned, so the others go on. Only an
    /// acquire built with [`MutexBuilder::fail_on_deadlock`](crate::MutexBuilder::fail_on_deadlock)
    /// returns it.
    #[error("deadlock: {} tasks or chains wait on each other in a ring; this acquire gave up to break it", .0.hops.len())]
    Deadlock(Box<Deadlock>),

    /// One of the caller's operations in a fenced write
    /// ([`Hold::commit`](crate::hold::Hold::commit)) failed while the lock was held; the
    /// transaction committed nothing.
    #[error("fenced write: operation {index} failed: {source}")]
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

    /// A [`zklock::blocking`](crate::blocking) call was made where it cannot block: on a thread
    /// of a tokio runtime (a task, a `block_on`, a `spawn_blocking`), where waiting would stall
    /// the runtime it runs on. Use the async API there, or call from a thread of your own.
    /// Also returned, with its own text, when zklock's runtime thread cannot be started.
    #[error("{0}")]
    CannotBlock(&'static str),

    /// A kazoo-layout semaphore's path stores another `max_leases` than ours (kazoo writes its
    /// maximum there and refuses a different one with `ValueError`, and so do we): every
    /// participant must use the same maximum. Nothing of the acquire was left in ZooKeeper. To
    /// change the maximum, stop every participant and delete the path node.
    #[error("semaphore {path} stores max_leases {stored}, not {max_leases}: every participant must use the same")]
    MaxLeasesMismatch {
        /// The semaphore's path.
        path: String,
        /// The maximum stored on it, as written there.
        stored: String,
        /// Ours.
        max_leases: u32,
    },

    /// ZooKeeper refused an operation, or it failed in a way zklock does not retry
    /// (for example `NoAuth` when the ACL of the lock path forbids us).
    #[error("zookeeper {operation}{} failed: {source}", on_path(path))]
    ZooKeeper {
        /// What zklock was doing: `connect`, `create`, `list`, `watch`, `delete`, ...
        operation: &'static str,
        /// The path it was done on; for `connect`, the connect string when zklock was given it
        /// (empty when a caller's closure connected).
        path: String,
        /// The client's error.
        #[source]
        source: zookeeper_client::Error,
    },
}

impl Error {
    /// This error and each of its causes, `: `-separated and each once, for one line of a log
    /// or of a command's output (what zklock's own logs print). `Display` already ends with its
    /// direct cause; this adds the causes of that cause, if any.
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
            Error::LockLost(_) => "lock_lost",
            Error::WouldDeadlock(_) => "would_deadlock",
            Error::Deadlock(_) => "deadlock",
            Error::WriteFailed { .. } => "write_failed",
            Error::ElectionNotStarted => "election_not_started",
            Error::ElectionAlreadyStarted => "election_already_started",
            Error::ElectionClosed => "election_closed",
            Error::CannotBlock(_) => "cannot_block",
            Error::MaxLeasesMismatch { .. } => "max_leases_mismatch",
            Error::ZooKeeper { .. } => "zookeeper",
        }
    }
}

/// An error with its causes, for a log line; see [`Error::with_causes`].
pub(crate) struct WithCauses<'a>(&'a Error);

impl std::fmt::Display for WithCauses<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)?;
        // The direct source is the end of our own Display.
        let mut cause = std::error::Error::source(self.0).and_then(std::error::Error::source);
        while let Some(next) = cause {
            write!(f, ": {next}")?;
            cause = next.source();
        }
        Ok(())
    }
}

/// ` {path}` after the operation's name, or nothing when there is no path to name.
fn on_path(path: &str) -> String {
    if path.is_empty() {
        String::new()
    } else {
        format!(" {path}")
    }
}

/// Why a lock is no longer held (see [`Hold::lost`](crate::hold::Hold::lost)).
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
    /// The hold lasted its maximum hold time (see
    /// [`LockOptions::max_hold`](crate::LockOptions::max_hold)), so this process gave it up:
    /// the holder was told, then the node was deleted, and another participant may hold now.
    MaxHoldTime {
        /// The bound the lock was built with.
        bound: Duration,
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
            LossReason::MaxHoldTime { bound } => write!(f, "held for its maximum hold time of {bound:?}"),
        }
    }
}

/// A deadlock: tasks, chains (or whole sessions) in a ring, each waiting on a lock the next one
/// holds (or queued behind a node of the next one that must hold and go first), so that none of
/// them can go on until one gives up. What [`find_deadlocks`](crate::deadlock::find_deadlocks)
/// returns and [`Error::Deadlock`] carries.
///
/// The tasks of one process share its session, and ZooKeeper alone cannot tell which of them
/// holds a node. A lock built with
/// [`fail_on_deadlock`](crate::MutexBuilder::fail_on_deadlock) tells: each node it creates
/// carries its task's owner tag in the uuid of its protected prefix (see
/// [`DeadlockHop::waiter_owner`]), and a session whose nodes all carry one is read as its
/// tasks. A session with a node that carries none (a lock without the opt-in, one with local
/// handoff, a semaphore's gate, a Curator or kazoo participant, Curator's `LeaderSelector`) is
/// read whole, as one: a task of it waiting on a lock another of its tasks holds is no edge
/// (that task lets go when its work is done), but it holding a lock through a task that does
/// not wait, while another of its tasks waits, looks the same as one whose holding task waits.
///
/// The other way round, processes of sessions of their own may form one owner: a `zklock` that
/// holds its lock until its command ends, and the `zklock` its command runs, which waits. A lock
/// built with [`owner_chain`](crate::MutexBuilder::owner_chain) writes the chain's id instead
/// of a task's tag (see [`DeadlockHop::waiter_chain`]), and every node of one chain is one
/// member of a ring, whatever its session.
///
/// Hence two kinds of ring ([`is_certain`](Self::is_certain)): a **certain** one, every member
/// on it a task or a chain told by its tag, where each waits in fact on the next; and a
/// **possible** one, through a session read whole, which is a deadlock only if the tasks of that
/// session that hold are the ones that wait. A possible ring may dissolve by itself (a task of
/// the session that holds and waits on nothing lets go), so an acquire built with
/// `fail_on_deadlock` fails only on a certain ring: a false alarm would fail a healthy acquire.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Deadlock {
    /// The ring's steps: each hop's holder is the next hop's waiter, and the last hop's holder
    /// the first hop's waiter. It starts at its smallest member: a session read whole (the
    /// smallest id) if there is one, else a task (by session, then owner tag), else a chain (by
    /// id).
    pub hops: Vec<DeadlockHop>,
}

impl Deadlock {
    /// Every wait of the ring, hop by hop.
    pub fn waits(&self) -> impl Iterator<Item = &LockWait> {
        self.hops.iter().flat_map(|hop| &hop.waits)
    }

    /// Whether the ring is certain: every member on it is a task told by its owner tag or a
    /// chain told by its id, none a session read whole (see [`Deadlock`]). A ring that is not
    /// is only possible.
    pub fn is_certain(&self) -> bool {
        self.hops.iter().all(|hop| hop.waiter_owner.is_some() || hop.waiter_chain.is_some())
    }
}

/// One step of a [`Deadlock`]'s ring: one task, chain or session waits on another. Two tasks of
/// one session may make a hop, so `waiter_session` and `holder_session` may be equal; the owners
/// then differ.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct DeadlockHop {
    /// The waiting session (its id, a node's `ephemeralOwner`). For a chain, whose processes
    /// have sessions of their own, the session of the hop's first wait
    /// ([`LockWait::waiter_session`] says each wait's).
    pub waiter_session: i64,
    /// The session it waits on; for a chain, that of the hop's first wait's holding node
    /// ([`LockWait::holder_session`]).
    pub holder_session: i64,
    /// The waiting task's owner tag, a 48-bit hash of the tokio task (or thread) that acquires,
    /// written by a lock built with [`fail_on_deadlock`](crate::MutexBuilder::fail_on_deadlock)
    /// into the uuid of each node it creates (an RFC 9562 version 8 uuid whose first 12 hex
    /// digits are the tag). It tells apart the tasks of one session,
    /// and means nothing across sessions. `None` when the session is read whole, or the waiter
    /// is a chain.
    pub waiter_owner: Option<u64>,
    /// The holding task's owner tag, as [`waiter_owner`](Self::waiter_owner).
    pub holder_owner: Option<u64>,
    /// The waiting chain's id (under 2^48), written by a lock built with
    /// [`owner_chain`](crate::MutexBuilder::owner_chain) into the uuid of each node it creates
    /// (the uuid's first 12 hex digits, as a task's tag, with a marker of its own): processes
    /// that form one owner, whatever their sessions. `None` for a task or a session.
    pub waiter_chain: Option<u64>,
    /// The holding chain's id, as [`waiter_chain`](Self::waiter_chain).
    pub holder_chain: Option<u64>,
    /// Every node of the waiting task, chain (or session) queued on a lock behind a node of the
    /// other one (holding, or waiting ahead of it): one or more.
    pub waits: Vec<LockWait>,
}

/// A node waiting in a lock's queue behind a node of another task, chain (or session) that
/// holds that lock, or that waits ahead of it and must hold and go first (a writer ahead of a
/// reader, any node ahead of a mutex's or a writer's).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct LockWait {
    /// The lock path.
    pub lock: String,
    /// The waiting node's full path.
    pub waiter_node_path: String,
    /// The waiting node's czxid: the later it was created, the higher.
    pub waiter_czxid: i64,
    /// The waiting node's data (for a zklock participant, what
    /// [`LockOptions::node_data`](crate::LockOptions::node_data) set).
    pub waiter_data: Vec<u8>,
    /// The waiting node's session (its `ephemeralOwner`).
    pub waiter_session: i64,
    /// The full path of the node it waits on, holding or waiting ahead of it.
    pub holder_node_path: String,
    /// That node's session.
    pub holder_session: i64,
    /// Whether [`holder_node_path`](Self::holder_node_path) waits itself (it is queued ahead of the
    /// waiter), rather than holds.
    pub holder_waiting: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_auth_on_create() -> Error {
        Error::ZooKeeper { operation: "create", path: "/a".to_owned(), source: zookeeper_client::Error::NoAuth }
    }

    #[test]
    fn display_says_what_failed_where_and_why() {
        assert_eq!(no_auth_on_create().to_string(), "zookeeper create /a failed: not authorized");
        let connect =
            Error::ZooKeeper { operation: "connect", path: String::new(), source: zookeeper_client::Error::Timeout };
        assert_eq!(connect.to_string(), format!("zookeeper connect failed: {}", zookeeper_client::Error::Timeout));
        let write = Error::WriteFailed { index: 1, source: zookeeper_client::Error::BadVersion };
        assert_eq!(
            write.to_string(),
            format!("fenced write: operation 1 failed: {}", zookeeper_client::Error::BadVersion)
        );
    }

    #[test]
    fn the_client_error_stays_the_source() {
        let err = no_auth_on_create();
        let source = std::error::Error::source(&err).expect("a source");
        assert!(matches!(source.downcast_ref::<zookeeper_client::Error>(), Some(zookeeper_client::Error::NoAuth)));
    }

    #[test]
    fn our_logs_print_each_cause_once() {
        assert_eq!(no_auth_on_create().with_causes().to_string(), "zookeeper create /a failed: not authorized");
        let lost = Error::LockLost(LossReason::NodeDeleted);
        assert_eq!(lost.with_causes().to_string(), format!("lock lost: {}", LossReason::NodeDeleted));
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
