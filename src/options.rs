//! `LockOptions`, the options every builder takes, and what a lock object is built with.
//!
//! [`LockOptions`]: ACLs, loss policy, node data, maximum hold time, said once for every recipe's
//! builder.

use std::time::Duration;

use zookeeper_client::{Acl, Acls, AuthId, Permission};

use crate::error::{Error, Result};

/// Which ACLs zklock gives the nodes it creates, in the spirit of Curator's `ACLProvider`: one
/// list for the lock nodes (each participant's queue node, a semaphore's lease nodes), one for the
/// parents zklock creates (the lock path and any missing ancestor, a semaphore's `locks` and
/// `leases`, all container nodes).
///
/// Who may do what to a lock is decided mostly by the **parents'** ACL: ZooKeeper checks
/// `CREATE` and `DELETE` on the parent, so a participant without them can neither queue (nor
/// jump the queue) nor delete a holder's node; listing the queue needs `READ` on it. The lock
/// nodes' ACL decides who may read their data and write it (a [`revoke`](crate::revoke) is a
/// write).
///
/// The ACLs apply to nodes as zklock creates them; parents that already exist keep theirs. A
/// container zklock created (every parent but a kazoo-schema lock's, which are persistent, as
/// kazoo makes them) is deleted by the server once it is empty, and then anyone who may
/// create in its parent may create it anew with an ACL of their own: create the lock path's
/// parent yourself (a persistent node with a locked-down ACL) for a lock nobody else can take.
/// See the guide, docs/acls.md.
///
/// Defaults to [`Acls::anyone_all`] for both, as Curator's default provider.
///
/// # Examples
///
/// ```
/// use zklock::AclProvider;
///
/// // Only the identity that created the nodes may change them; everyone may see the queue.
/// let locked_down = AclProvider::creator_all_anyone_read();
/// // The same, given explicitly: one list for the lock nodes, one for the parents.
/// let explicit = AclProvider::new(
///     zklock::zookeeper_client::Acls::creator_all().to_vec(),
///     zklock::zookeeper_client::Acls::creator_all().to_vec(),
/// );
/// assert_ne!(locked_down, explicit);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AclProvider {
    lock_nodes: Vec<Acl>,
    parents: Vec<Acl>,
}

impl AclProvider {
    /// `lock_nodes` for the nodes in the queue, `parents` for the parents zklock creates.
    pub fn new(lock_nodes: impl Into<Vec<Acl>>, parents: impl Into<Vec<Acl>>) -> Self {
        AclProvider { lock_nodes: lock_nodes.into(), parents: parents.into() }
    }

    /// The same list for lock nodes and parents.
    pub fn uniform(acls: impl Into<Vec<Acl>>) -> Self {
        let acls = acls.into();
        AclProvider { lock_nodes: acls.clone(), parents: acls }
    }

    /// Every permission for the identities the creating session authenticated as
    /// ([`Acls::creator_all`]), and `READ` for everyone, on lock nodes and parents: other
    /// identities see the queue (`participants()`) and its data, and can change nothing.
    pub fn creator_all_anyone_read() -> Self {
        let mut acls = Acls::creator_all().to_vec();
        acls.push(Acl::new(Permission::READ, AuthId::anyone()));
        Self::uniform(acls)
    }

    /// The ACL of the lock nodes.
    pub fn lock_nodes(&self) -> &[Acl] {
        &self.lock_nodes
    }

    /// The ACL of the parents zklock creates.
    pub fn parents(&self) -> &[Acl] {
        &self.parents
    }

    pub(crate) fn validate(&self) -> Result<()> {
        if self.lock_nodes.is_empty() || self.parents.is_empty() {
            return Err(Error::InvalidOptions("the ACL list is empty"));
        }
        Ok(())
    }
}

impl Default for AclProvider {
    fn default() -> Self {
        Self::uniform(Acls::anyone_all().to_vec())
    }
}

/// How far a mutex passes its hold from task to task of this process before it lets other
/// processes have their turn: lock cohorting (Dice, Marathe and Shavit, PPoPP 2012) over
/// ZooKeeper. Set with [`MutexBuilder::local_handoff`](crate::MutexBuilder::local_handoff).
///
/// Without it, every task that acquires queues a node of its own. With it, the tasks that share
/// one mutex object (clones of one [`InterProcessMutex`](crate::InterProcessMutex)) queue behind
/// a single node of the process: one task queues in ZooKeeper while the others wait in the
/// process, and when a holder releases while a task of ours waits, the hold passes to that task
/// with no request at all. It passes up to [`holders`](Self::holders) holders per node, and only
/// while less than [`time`](Self::time) has passed since the node was first held; then the node
/// is deleted and, if tasks of ours still wait, the first of them queues a new node at the back.
///
/// # Fairness
/// Processes keep their FIFO turn: a participant of another process that queued while our
/// process held waits for at most `holders` holds of ours, the last one beginning less than
/// `time` after our node was first held (and lasting as long as its holder keeps it, as any
/// hold does); then it holds before any task of ours that still waits. Tasks of one process are
/// served in the order they asked.
///
/// # Fencing tokens
/// A holder's token is `czxid × 256 + i`, where `czxid` is the zxid that created the node and
/// `i` counts the holders before it on that node (0 for the first): strictly greater than every
/// earlier holder's, in this process and in any other that also uses local handoff, and compared
/// as plain integers as before. It is **not** comparable with the plain czxid that a mutex
/// without local handoff gives: every zklock participant of a lock whose tokens reach one
/// resource must agree on this option, as they agree on the node schema. ZooKeeper's zxids stay
/// far below the 2⁵⁵ this leaves (the epoch, the zxid's high 32 bits, would have to pass 2²³).
///
/// # Examples
///
/// ```no_run
/// use std::time::Duration;
/// use zklock::{InterProcessMutex, LocalHandoff};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let client = zklock::Client::connect("127.0.0.1:2181").await?;
/// // One mutex object for every request handler of this process.
/// let tenant = InterProcessMutex::builder(&client, "/app/locks/tenant-42")
///     .local_handoff(LocalHandoff::new(64, Duration::from_millis(20)))
///     .build()?;
/// let handlers: Vec<_> = (0..8)
///     .map(|_| {
///         let tenant = tenant.clone();
///         tokio::spawn(async move {
///             let guard = tenant.acquire().await?;
///             // ... one handler of one process at a time, across the cluster ...
///             guard.release().await
///         })
///     })
///     .collect();
/// for handler in handlers {
///     handler.await??;
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LocalHandoff {
    holders: u32,
    time: Duration,
}

impl LocalHandoff {
    /// The most holders one node may have: the `i` of their fencing tokens takes 8 bits.
    pub const MAX_HOLDERS: u32 = 256;

    /// Up to `holders` holders per queue node (2 to [`MAX_HOLDERS`](Self::MAX_HOLDERS)), passed
    /// on only while less than `time` has passed since the node was first held. Checked when
    /// the mutex is built.
    pub const fn new(holders: u32, time: Duration) -> Self {
        LocalHandoff { holders, time }
    }

    /// The most holders per queue node.
    pub fn holders(&self) -> u32 {
        self.holders
    }

    /// How long after its node was first held a hold may still be passed on.
    pub fn time(&self) -> Duration {
        self.time
    }

    pub(crate) fn validate(&self) -> Result<()> {
        if !(2..=Self::MAX_HOLDERS).contains(&self.holders) {
            return Err(Error::InvalidOptions("local handoff needs 2 to 256 holders per node"));
        }
        if self.time.is_zero() {
            return Err(Error::InvalidOptions("local handoff needs a time above zero"));
        }
        Ok(())
    }
}

impl Default for LocalHandoff {
    /// 64 holders per node, within 20 ms of its first hold.
    fn default() -> Self {
        LocalHandoff::new(64, Duration::from_millis(20))
    }
}

/// The options every recipe's builder takes, one value: what the nodes carry, who may touch
/// them, when a disconnection loses a hold, how long a hold may last, and how metrics name the
/// lock. Set them once and hand the value to each builder's `options` (a service's locks,
/// semaphores and elections usually share one); each recipe's own options (reentrancy, local
/// handoff, the node schema, a semaphore's maximum) stay on its builder.
///
/// # Examples
///
/// ```no_run
/// use std::time::Duration;
/// use zklock::{AclProvider, InterProcessMutex, InterProcessSemaphoreV2, LockOptions, LossPolicy};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let client = zklock::Client::connect("127.0.0.1:2181").await?;
/// let options = LockOptions::new()
///     .node_data("host-1")
///     .loss_policy(LossPolicy::AnyDisconnection)
///     .acl_provider(AclProvider::creator_all_anyone_read())
///     .max_hold(Duration::from_secs(600));
/// let payments = InterProcessMutex::builder(&client, "/app/locks/payments").options(options.clone()).build()?;
/// let exports = InterProcessSemaphoreV2::builder(&client, "/app/semaphores/export", 4).options(options).build()?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[must_use = "options do nothing until a builder's `options` takes them"]
pub struct LockOptions {
    pub(crate) data: Vec<u8>,
    pub(crate) acls: AclProvider,
    pub(crate) loss_policy: LossPolicy,
    /// Whether metrics carry the lock path.
    pub(crate) path_in_metrics: bool,
    /// How long a hold may last before this process gives it up; none by default.
    pub(crate) max_hold: Option<Duration>,
}

impl LockOptions {
    /// The defaults: no node data, anyone-all ACLs, [`LossPolicy::SessionTimeout`], no maximum
    /// hold time, no lock path in metrics.
    pub fn new() -> Self {
        LockOptions::default()
    }

    /// The data stored in each lock node, shown by `participants_with_data()` to anyone who
    /// may read them (for example a host name). Defaults to empty. A leader election's node data
    /// is its participant's id: an election's builder refuses other data.
    pub fn node_data(mut self, data: impl Into<Vec<u8>>) -> Self {
        self.data = data.into();
        self
    }

    /// Gives every hold up once it has lasted `bound`: the holder is told first (its
    /// `lost()` resolves with [`LossReason::MaxHoldTime`](crate::LossReason::MaxHoldTime),
    /// `is_held()` turns false, a reentrant acquire is refused with
    /// [`Error::LockLost`](crate::Error::LockLost), a release reports the loss), then its
    /// node is deleted, so another participant may hold. A holder that crashed in all but
    /// its connection (a hung job, a deadlocked thread) cannot keep the lock for ever.
    /// Defaults to none: a hold lasts until it is released or lost.
    ///
    /// The bound counts from the moment the hold began in this process (the acquire that
    /// took the node, not the time the node waited in the queue). Reentrant acquires share
    /// the owner's first hold, and its bound. With
    /// [`local_handoff`](crate::MutexBuilder::local_handoff), the bound is the node's: it
    /// counts from the node's first holder and a pass to another task does not reset it,
    /// so a process cannot keep a node past the bound by passing it on. A semaphore's bound
    /// is each lease's; a multi-lock's, each of its locks' (its `lost()` fires at the
    /// first). A hold released before the bound ends as any other: nothing fires later.
    /// Leader elections take none (their builders refuse it).
    ///
    /// What it cannot promise: the bound is kept by the holder's own process, a timer on
    /// its tokio runtime (or zklock's background thread), not by ZooKeeper. A process
    /// frozen whole (stopped, swapping, its runtime blocked) runs no timer and keeps the
    /// node until its session ends, as it would without the option; and a holder that is
    /// not watching `lost()` goes on working after the node is gone (check the fencing
    /// token). The bound is not written into the node: its data stays what
    /// [`node_data`](Self::node_data) says, which Curator and kazoo read as the
    /// participant's own (the `zklock` command writes the bound in its own node data, where
    /// `zklock list` shows it).
    ///
    /// `bound` is checked by the builder's `build`: zero, or more than a year, is
    /// [`Error::InvalidOptions`](crate::Error::InvalidOptions).
    pub fn max_hold(mut self, bound: Duration) -> Self {
        self.max_hold = Some(bound);
        self
    }

    /// When a disconnection counts as losing a held lock (or leadership). Defaults to
    /// [`LossPolicy::SessionTimeout`].
    pub fn loss_policy(mut self, policy: LossPolicy) -> Self {
        self.loss_policy = policy;
        self
    }

    /// The ACL of the lock nodes and of the parents zklock creates (the same list for both;
    /// see [`acl_provider`](Self::acl_provider) for two). Defaults to
    /// [`Acls::anyone_all`], as Curator's default ACL provider.
    pub fn acls(mut self, acls: impl Into<Vec<Acl>>) -> Self {
        self.acls = AclProvider::uniform(acls);
        self
    }

    /// One ACL for the lock nodes and one for the parents zklock creates; see
    /// [`AclProvider`]. Defaults to anyone-all for both.
    pub fn acl_provider(mut self, provider: AclProvider) -> Self {
        self.acls = provider;
        self
    }

    /// Whether metrics (feature `metrics`) carry the lock path as a `path` label. Defaults
    /// to `false`: every lock of a recipe shares its series, so that thousands of lock paths
    /// cannot blow up a metrics backend's cardinality.
    pub fn path_in_metrics(mut self, labelled: bool) -> Self {
        self.path_in_metrics = labelled;
        self
    }

    /// Refuses options no lock can work with.
    pub(crate) fn validate(&self) -> Result<()> {
        self.acls.validate()?;
        if self.max_hold.is_some_and(|bound| bound.is_zero() || bound > MAX_HOLD_LIMIT) {
            return Err(Error::InvalidOptions("the maximum hold time must be above zero and at most a year"));
        }
        Ok(())
    }

    /// Refuses what a leader election cannot take: node data (its node's data is the
    /// participant's id) and a maximum hold time.
    pub(crate) fn validate_for_election(&self) -> Result<()> {
        if !self.data.is_empty() {
            return Err(Error::InvalidOptions("a leader election's node data is its participant id"));
        }
        if self.max_hold.is_some() {
            return Err(Error::InvalidOptions("a leader election takes no maximum hold time"));
        }
        Ok(())
    }
}

/// What a lock object is built with: the options every recipe takes, and the mutexes' own
/// (reentrancy, local handoff, the deadlock look, owner chains).
#[derive(Clone, Debug, Default)]
pub(crate) struct Settings {
    pub(crate) common: LockOptions,
    pub(crate) reentrant: bool,
    /// Passes a hold between tasks of this process (mutexes and write sides only).
    pub(crate) local_handoff: Option<LocalHandoff>,
    /// Under which root a waiting acquire looks for a deadlock it is part of (mutexes and
    /// read-write locks only).
    pub(crate) deadlock_root: Option<String>,
    /// How often it looks while it waits; `None` for [`DEADLOCK_SCAN_PERIOD`].
    pub(crate) deadlock_scan_period: Option<Duration>,
    /// The id of the chain of processes its nodes say they are part of (mutexes and read-write
    /// locks only), under [`OWNER_CHAIN_LIMIT`].
    pub(crate) owner_chain: Option<u64>,
    /// Whether its nodes are a leader selector's, which the deadlock scan must tell from a
    /// mutex's (`rules/owner_tag.rs`, `NodeMark::Election`).
    pub(crate) election: bool,
}

/// The longest maximum hold time a lock takes: a year. A bound past it is a mistake (a unit
/// read wrong), and tokio's timers are not made for it.
pub(crate) const MAX_HOLD_LIMIT: Duration = Duration::from_secs(365 * 24 * 3600);

/// How often a waiting acquire built with `fail_on_deadlock` reads the lock folders under its
/// root again, after the read when it starts waiting: a deadlock that an acquire's node
/// completes is seen by that first read, one completed later (a lock changing hands) within a
/// period and a read. A fifth of a second keeps that under two ticks of a test server (tickTime
/// 200 ms), and a tenth of two ticks of ZooKeeper's default tickTime (2 s).
pub(crate) const DEADLOCK_SCAN_PERIOD: Duration = Duration::from_millis(200);

/// Every owner chain's id is under it: a node's uuid has room for 48 bits (`rules/owner_tag.rs`).
pub(crate) const OWNER_CHAIN_LIMIT: u64 = 1 << 48;

/// Where and how often a waiting acquire looks for a deadlock it is part of
/// (`MutexBuilder::fail_on_deadlock`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct DeadlockCheck {
    /// The root whose lock folders are read.
    pub(crate) root: String,
    /// How often they are read again while the acquire waits.
    pub(crate) period: Duration,
}

impl Settings {
    /// A mutex's defaults: reentrant per task, as Curator's per thread.
    pub(crate) fn mutex() -> Self {
        Settings { reentrant: true, ..Settings::default() }
    }

    /// Refuses options no lock can work with (the deadlock root's path is the builder's to
    /// check, with the lock path's rules).
    pub(crate) fn validate(&self) -> Result<()> {
        self.common.validate()?;
        if self.deadlock_scan_period.is_some_and(|period| period.is_zero()) {
            return Err(Error::InvalidOptions("the deadlock scan period must be above zero"));
        }
        if self.owner_chain.is_some_and(|chain| chain >= OWNER_CHAIN_LIMIT) {
            return Err(Error::InvalidOptions("an owner chain's id must be under 2^48"));
        }
        self.local_handoff.as_ref().map_or(Ok(()), LocalHandoff::validate)
    }

    /// What a waiting acquire checks for deadlocks, if it was asked to.
    pub(crate) fn deadlock_check(&self) -> Option<DeadlockCheck> {
        let root = self.deadlock_root.clone()?;
        Some(DeadlockCheck { root, period: self.deadlock_scan_period.unwrap_or(DEADLOCK_SCAN_PERIOD) })
    }
}

/// When a disconnection from ZooKeeper counts as losing the lock.
///
/// A held lock really ends only when the server expires the session. While disconnected, a
/// client cannot know whether that has happened yet; these policies decide when it stops
/// trusting the lock.
///
/// # Examples
///
/// ```no_run
/// use zklock::{InterProcessMutex, LockOptions, LossPolicy};
/// use zklock::hold::Hold;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let client = zklock::Client::connect("127.0.0.1:2181").await?;
/// // Stop at the first disconnection, as Curator users do on SUSPENDED.
/// let mutex = InterProcessMutex::builder(&client, "/app/locks/payments")
///     .options(LockOptions::new().loss_policy(LossPolicy::AnyDisconnection))
///     .build()?;
/// let guard = mutex.acquire().await?;
/// println!("lost: {}", guard.lost().await);
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LossPolicy {
    /// The lock is assumed lost once the client has been disconnected for a third of the
    /// negotiated session timeout. The default.
    ///
    /// Why a third: zookeeper-client notices a silent connection after at most 3/5 of the session
    /// timeout without a reply (2/5 unless a connection timeout is configured), and the server
    /// cannot expire the session before a full session timeout after the last request it
    /// received, which came before that reply. So the server expires the session at the earliest
    /// 2/5 of the session timeout after the client notices; giving up at 1/3 leaves a margin
    /// for scheduling delays. Short disconnections (a server restart, a leader election, a
    /// reconnect to another server) keep the lock.
    #[default]
    SessionTimeout,
    /// Any disconnection loses the lock at once, as Curator's `SUSPENDED` state is usually
    /// handled. Choose it when the critical section must stop the moment the holder cannot
    /// prove it still holds (at the price of losing the lock on every short network blip or
    /// server restart).
    AnyDisconnection,
}

impl LossPolicy {
    /// How long a disconnection may last before the lock is assumed lost.
    pub fn grace(self, session_timeout: Duration) -> Duration {
        match self {
            LossPolicy::SessionTimeout => session_timeout / 3,
            LossPolicy::AnyDisconnection => Duration::ZERO,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grace_is_a_third_of_the_session_or_nothing() {
        let session = Duration::from_secs(9);
        assert_eq!(LossPolicy::default().grace(session), Duration::from_secs(3));
        assert_eq!(LossPolicy::AnyDisconnection.grace(session), Duration::ZERO);
    }

    #[test]
    fn local_handoff_bounds_outside_the_token_format_are_refused() {
        for bad in [LocalHandoff::new(1, Duration::from_millis(1)), LocalHandoff::new(257, Duration::from_millis(1))] {
            assert!(matches!(bad.validate(), Err(Error::InvalidOptions(_))), "{bad:?}");
        }
        assert!(LocalHandoff::new(2, Duration::ZERO).validate().is_err());
        assert!(LocalHandoff::new(256, Duration::from_millis(1)).validate().is_ok());
        assert!(LocalHandoff::default().validate().is_ok());
    }

    #[test]
    fn a_zero_or_absurd_maximum_hold_time_is_refused() {
        let with = |bound| Settings { common: LockOptions::new().max_hold(bound), ..Settings::mutex() }.validate();
        for bad in [Duration::ZERO, MAX_HOLD_LIMIT + Duration::from_nanos(1), Duration::MAX] {
            assert!(matches!(with(bad), Err(Error::InvalidOptions(_))), "{bad:?}");
        }
        assert!(with(Duration::from_nanos(1)).is_ok());
        assert!(with(MAX_HOLD_LIMIT).is_ok());
    }

    #[test]
    fn an_election_refuses_node_data_and_a_maximum_hold_time_and_takes_the_rest() {
        let refused = [LockOptions::new().node_data("host-1"), LockOptions::new().max_hold(Duration::from_secs(1))];
        for options in refused {
            assert!(matches!(options.validate_for_election(), Err(Error::InvalidOptions(_))), "{options:?}");
        }
        let taken = LockOptions::new()
            .loss_policy(LossPolicy::AnyDisconnection)
            .acl_provider(AclProvider::creator_all_anyone_read())
            .path_in_metrics(true);
        assert!(taken.validate_for_election().is_ok());
    }
}
