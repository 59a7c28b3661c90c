//! `InterProcessMutex`: the lock object, its builder, how it acquires, its hold table, its guard.
//!
//! A reentrant lock shared by processes through ZooKeeper. An acquire is admitted (it re-enters
//! its owner's hold, or claims the owner's place in the hold table), plans how it enters the
//! queue, takes its place there (`queue/turn.rs`), and is granted the hold, which each guard
//! counts in the table. Its builder's options are every lock queue's: the read-write lock's two
//! sides, a semaphore's gate and an election's queue are mutexes built with it.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::{Duration, Instant};

use dashmap::mapref::entry::Entry;
use dashmap::DashMap;
use tokio::sync::futures::OwnedNotified;
use tokio::sync::Notify;
use zookeeper_client::Client;

use crate::client::deadline::{acquire_forever, acquire_patiently, within, Patience};
use crate::client::session::Connection;
use crate::error::{Error, LossReason, Result};
use crate::hold::held_node::{Acquired, HeldNode};
use crate::hold::hold_trait::run_acquired;
use crate::hold::session_watch::LatestSessionWatch;
use crate::hold::while_held::RunEnd;
use crate::hold::Hold;
use crate::lock::cohort::{fencing_token, Cohort, Handoff, Turn};
use crate::lock::owner::{Owner, OwnerHash};
use crate::observe::label::{LockLabel, Recipe};
use crate::options::{AclProvider, DeadlockCheck, LocalHandoff, LockOptions, Settings};
use crate::queue::delete::delete_in_background;
use crate::queue::listing::{queue_order, queue_with_data};
use crate::queue::node::{LockNode, PlaceReport, QueueSpec};
use crate::queue::queue_node::QueueNode;
use crate::queue::turn::take_place;
use crate::rules::decide::Rule;
use crate::rules::entry::{self, Level, Role};
use crate::rules::naming::{Schema, KAZOO_MUTEX, MUTEX};
use crate::rules::opening::{self, Opening};
use crate::rules::owner_tag::{ChainTag, NodeMark, Tag};
use crate::rules::path::validate_lock_path;

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
///   from each other. Build with [`MutexBuilder::reentrant`](crate::MutexBuilder::reentrant)`(false)` for tokio's semantics
///   (each acquire on its own; a task that acquires twice waits for itself).
/// - **One participant per `new`**: two mutexes made with [`new`](Self::new) on one path contend
///   with each other, even on one client; clones of one mutex are the same participant.
/// - **Round trips**: an uncontended acquire costs one (the create and the first listing are
///   sent together; right after our own release, the create alone), a release one, a reentrant
///   acquire none. The next in line takes the lock on the holder's release without listing
///   again (a read of its own node, sent once the holder's node is gone, proves its node is
///   still there); a participant that held with others queued behind it queues again watching the
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
/// use zklock::hold::Hold;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let client = zklock::Client::connect("127.0.0.1:2181").await?;
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

    /// Acquires the mutex, waiting as long as it takes.
    ///
    /// Re-entering from the owner that holds it returns a new guard at once, with no round trip
    /// (but an error if the client already knows that its session has ended).
    ///
    /// # Errors
    /// - [`Error::SessionExpired`] / [`Error::SessionClosed`]: the session ended (before or while
    ///   waiting); returned promptly. Built on a [`Session`](crate::Session), an expiry is no
    ///   error: the acquire queues again on the new session, within its patience;
    /// - [`Error::LockLost`]: a reentrant acquire by an owner whose hold is lost (drop its guards
    ///   first);
    /// - [`Error::Deadlock`]: built with
    ///   [`fail_on_deadlock`](crate::MutexBuilder::fail_on_deadlock), the wait was the victim of
    ///   a ring of tasks (or sessions) waiting on each other; its node is gone;
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

    /// Acquires within `timeout`, runs `work` while the lock is held, then releases it: the
    /// `select!` on [`lost`](crate::hold::Hold::lost) every holder would write, said once. The work is
    /// dropped the moment the hold is lost, and the outcome says which came first:
    /// [`RunEnd::Done`] with the work's output, [`RunEnd::Lost`] with the reason, or
    /// [`RunEnd::TimedOut`] when the lock was not acquired in time (the work never started).
    /// The guard is then dropped, which releases it in the background.
    ///
    /// `work` is an async closure, `async |guard| …`, given the guard (for its
    /// [fencing token](crate::hold::Hold::fencing_token) and [fenced writes](crate::hold::Hold::multi_writer));
    /// it may borrow the guard and the caller's locals alike. Reentrancy is as for
    /// [`acquire`](Self::acquire): the work's task may acquire the same lock again.
    ///
    /// # Errors
    /// As [`acquire`](Self::acquire); the work's own errors are its output's.
    ///
    /// # Cancel safety
    /// Cancel safe: dropped while acquiring, as [`acquire`](Self::acquire); dropped while the
    /// work runs, the work is dropped and the lock released in the background.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// use zklock::hold::{Hold, RunEnd};
    /// use zklock::InterProcessMutex;
    /// # async fn import(_token: i64) -> std::io::Result<u32> { Ok(0) }
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let client = zklock::Client::connect("127.0.0.1:2181").await?;
    /// let mutex = InterProcessMutex::new(&client, "/app/locks/import")?;
    /// let ran = mutex
    ///     .run_while_held(Duration::from_secs(5), async |guard| import(guard.fencing_token()).await)
    ///     .await?;
    /// match ran {
    ///     RunEnd::Done(imported) => println!("imported {} rows", imported?),
    ///     RunEnd::Lost(reason) => eprintln!("lost the lock ({reason}): the import stopped"),
    ///     RunEnd::TimedOut => eprintln!("another import is running"),
    ///     end => eprintln!("stopped: {end:?}"),
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub async fn run_while_held<T, F>(&self, timeout: Duration, work: F) -> Result<RunEnd<T>>
    where
        F: AsyncFnOnce(&LockGuard) -> T,
    {
        run_acquired(self.acquire_timeout(timeout).await, work).await
    }

    /// Acquires the mutex only if it is free: `Ok(None)` when another participant holds it or
    /// queues ahead of us. Never waits for another holder; it does wait for ZooKeeper to answer
    /// (one round trip, two when our node must be deleted again). Built on a
    /// [`Session`](crate::Session) whose session has expired, it does not wait for the new
    /// one: `Ok(None)` until it is connected.
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

    /// What the mutex is built on.
    pub(crate) fn connection(&self) -> &Connection {
        &self.state.connection
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
        queue_order(
            &self.state.connection.client(),
            self.state.connection.retry_policy(),
            self.path(),
            self.state.schema,
        )
        .await
    }

    /// Like [`participants`](Self::participants), with each node's data (read in one request).
    ///
    /// # Errors
    /// As [`participants`](Self::participants).
    ///
    /// # Cancel safety
    /// Cancel safe: it only reads.
    pub async fn participants_with_data(&self) -> Result<Vec<QueueNode>> {
        queue_with_data(
            &self.state.connection.client(),
            self.state.connection.retry_policy(),
            self.path(),
            self.state.schema,
        )
        .await
    }

    async fn acquire_with(&self, patience: Patience, place: Option<&PlaceReport>) -> Result<Option<LockGuard>> {
        // A re-entry needs no attempt: taken here, before one is built and boxed, unless the
        // client knows its session ended (the whole path says what becomes of that acquire).
        let owner = self.state.owner_now();
        let session_lives = || self.state.connection.session_ended().is_none();
        match self.state.reenter(owner, session_lives) {
            Some(Ok(hold)) => return Ok(Some(LockGuard::new(self.state.clone(), owner, hold))),
            Some(Err(reason)) => return Err(Error::LockLost(reason)),
            None => {}
        }
        let attempt = Attempt { owner, patience, place, started: Instant::now() };
        // Boxed: the attempt's state machine is kilobytes (tens in a debug build), and every
        // future that awaits it (the caller's, a select's, a debug build's copies of each) would
        // carry it on the stack; the CLI's main thread overflowed 8 MiB with a semaphore before.
        // Boxed inside the events' wrapper, not around it: the wrapper and its span then move a
        // pointer, where each moved the whole state on every acquire.
        self.state.label.acquiring(attempt.started, || Box::pin(self.acquire_on_live_sessions(attempt))).await
    }

    /// Acquires on the session now (on a `Session`, the next one once an expiry's reconnection
    /// is through), and on a `Session` again on the next one when an expiry lands while an
    /// attempt is under way, all within the one `patience` (a try has none left for it).
    async fn acquire_on_live_sessions(&self, attempt: Attempt<'_>) -> Result<Option<LockGuard>> {
        let connection = &self.state.connection;
        loop {
            let Some(client) = connection.usable_client(attempt.patience).await? else { return Ok(None) };
            let outcome = self.acquire_once(&client, attempt).await;
            if !connection.rides_over(&outcome) {
                return outcome;
            }
            if attempt.patience == Patience::NoWait {
                return Ok(None);
            }
        }
    }

    /// One attempt on `client`'s session: the owner is admitted (a re-entry ends it), the plan
    /// says how it enters the queue, it takes its place there and is granted the hold. With
    /// local handoff the place is taken through the process's line instead (one seam,
    /// [`acquire_in_line`](Self::acquire_in_line)).
    async fn acquire_once(&self, client: &Arc<Client>, attempt: Attempt<'_>) -> Result<Option<LockGuard>> {
        let (state, owner, patience) = (&self.state, attempt.owner, attempt.patience);
        let claim = match self.admit(owner, patience).await? {
            Arrival::Queue(claim) => claim,
            Arrival::Reentered(guard) => return Ok(Some(guard)),
            Arrival::OutOfTime => return Ok(None),
        };
        let plan = Plan::new(state, owner)?;
        let Some(cohort) = &state.cohort else {
            let spec = plan.spec(state, client, attempt.place);
            let Some((node, next_opening)) = plan.placed(take_place(&spec, patience).await)? else {
                return Ok(None);
            };
            let fencing_token = node.czxid;
            let hold = claim.grant(client, node, next_opening, fencing_token, attempt.started);
            return Ok(Some(LockGuard::new(Arc::clone(state), owner, hold)));
        };
        // Boxed: local handoff is an opt-in, and its state machine would otherwise be part of
        // every plain acquire's, allocated and moved on every acquire.
        Box::pin(self.acquire_in_line(cohort, client, claim, &plan, attempt)).await
    }

    /// An attempt of a mutex built with local handoff: the owner takes its turn in this
    /// process's line (`cohort.rs`), and is either passed the hold a task of ours lets go, or
    /// takes its place in ZooKeeper's queue as the line's one task there.
    async fn acquire_in_line(
        &self,
        cohort: &Arc<Cohort>,
        client: &Arc<Client>,
        claim: Claim,
        plan: &Plan,
        attempt: Attempt<'_>,
    ) -> Result<Option<LockGuard>> {
        let (state, owner, patience) = (&self.state, claim.owner(), attempt.patience);
        let turn = match cohort.take_turn(client, patience).await? {
            None => return Ok(None),
            Some(Turn::Hold(handoff)) => {
                state.label.handed_over(handoff.node.path(), handoff.fencing_token, attempt.started);
                return Ok(Some(LockGuard::new(Arc::clone(state), owner, claim.take_handoff(handoff))));
            }
            Some(Turn::Queue(turn)) => turn,
        };
        let spec = plan.spec(state, client, attempt.place);
        let Some((node, next_opening)) = plan.placed(take_place(&spec, patience).await)? else { return Ok(None) };
        let Some(fencing_token) = fencing_token(node.czxid, 0) else {
            delete_in_background(client, node.retry(), node.path.into());
            return Err(Error::InvalidOptions("local handoff: the lock node's czxid is past 2^55"));
        };
        let hold = claim.grant(client, node, next_opening, fencing_token, attempt.started);
        turn.hold(&hold.node);
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

/// What one acquire keeps through its attempts (one per session it rides over onto): whose it
/// is, how long it may wait, where it reports its place in the queue (an election's), and when
/// it began.
#[derive(Clone, Copy)]
struct Attempt<'a> {
    owner: Owner,
    patience: Patience,
    place: Option<&'a PlaceReport>,
    started: Instant,
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

/// How one acquire of an owner enters the queue.
#[derive(Debug)]
struct Plan {
    /// Who may hold.
    rule: Rule,
    /// A downgrade's write node: the owner's hold on the other side, which the read node
    /// stands level with (and which is lost if it is found gone).
    write_node: Option<Arc<HeldNode>>,
}

impl Plan {
    /// How `owner`'s acquire of `state`'s lock enters the queue.
    ///
    /// # Errors
    /// [`Error::WouldDeadlock`] when it would wait for ever on its own owner (a reader asking
    /// for the write lock).
    fn new(state: &LockState, owner: Owner) -> Result<Plan> {
        let other_side = state.sibling_node_held_by(owner);
        let entry = entry::entry(state.role, state.schema, other_side.as_deref().map(HeldNode::path))
            .map_err(Error::WouldDeadlock)?;
        let (rule, levels) = (entry.rule, entry.level_with.is_some());
        Ok(Plan { rule, write_node: other_side.filter(|_| levels) })
    }

    /// The queue `state`'s acquire takes its place in through `client` (`queue::turn::take_place`),
    /// taking the opening the lock's last hold left (so: once the acquire queues, not before
    /// a turn of local handoff that may pass it a hold instead).
    fn spec<'a>(&'a self, state: &'a LockState, client: &'a Client, place: Option<&'a PlaceReport>) -> QueueSpec<'a> {
        QueueSpec {
            opening: opening::usable(state.take_opening(), self.rule),
            level_with: self.write_node.as_deref().map(|write| Level::beside(state.schema, write.path())),
            place,
            deadlock: state.deadlock.as_ref(),
            mark: state.node_mark(),
            ..QueueSpec::new(
                client,
                state.connection.retry_policy(),
                &state.path,
                state.schema,
                self.rule,
                &state.data,
                &state.acls,
            )
        }
    }

    /// What the place taken came to: a downgrade whose write node was found gone marks that
    /// hold lost too.
    fn placed<T>(&self, placed: Result<T>) -> Result<T> {
        if let (Err(Error::LockLost(reason)), Some(write)) = (&placed, &self.write_node) {
            write.mark_lost(*reason);
        }
        placed
    }
}

/// Shards of a hold table (DashMap wants a power of two above one).
const HOLD_TABLE_SHARDS: usize = 2;

/// A lock object's state: its connection, path, options, and the hold table that counts owner ->
/// holds, shared by the clones of the lock object and by its guards. Never hold a map reference
/// across an `.await`.
#[derive(Debug)]
pub(crate) struct LockState {
    pub(crate) role: Role,
    /// How its nodes are named and ordered.
    pub(crate) schema: Schema,
    /// The other side of a read-write lock.
    sibling: OnceLock<Weak<LockState>>,
    /// What it runs on: a client, or a session that outlives its expiries.
    pub(crate) connection: Connection,
    pub(crate) path: String,
    pub(crate) data: Vec<u8>,
    pub(crate) acls: AclProvider,
    /// Whether, where and how often a waiting acquire looks for a deadlock it is part of.
    pub(crate) deadlock: Option<DeadlockCheck>,
    /// Names it in events and metrics.
    pub(crate) label: LockLabel,
    /// Whether its nodes are an election's (a leader selector's), marked as such.
    election: bool,
    /// The chain of processes its nodes say they are part of (`MutexBuilder::owner_chain`).
    chain: Option<ChainTag>,
    /// Whether an owner (task or thread) re-enters its hold; else every acquire queues anew.
    reentrant: bool,
    /// How long a hold of its may last (`max_hold`), counted from the node's first holder.
    max_hold: Option<std::time::Duration>,
    pub(crate) session_watch: LatestSessionWatch,
    /// This process's line of tasks behind one queue node, with local handoff.
    pub(crate) cohort: Option<Arc<Cohort>>,
    holds: DashMap<Owner, Slot, OwnerHash>,
    next_hold_id: AtomicU64,
    /// What our last released hold lets the next acquire send with its create instead of a
    /// listing (DESIGN.md, "Round trips"). Taken by the next acquire, whatever happens to it.
    next_opening: std::sync::Mutex<Opening>,
}

#[derive(Debug)]
enum Slot {
    /// The owner's first acquire is under way; its other acquires wait on this, then re-enter.
    /// Made by the first of them (`join!` of two acquires of one task): a lone acquire, the
    /// usual one, allocates nothing for it.
    Acquiring(Option<Arc<Notify>>),
    /// Held; with what the next acquire may open with once this hold's delete is confirmed
    /// (kept here, not in the `Hold` every guard clones: a reentry costs no allocation).
    Held(OwnerHold, Opening),
}

/// One owner's hold on the lock.
#[derive(Clone, Debug)]
struct OwnerHold {
    /// Tells this hold from a later one of the same owner, so a stale guard changes nothing.
    pub(crate) id: u64,
    count: usize,
    pub(crate) node: Arc<HeldNode>,
    /// The node's czxid, or with local handoff this holder's token on it.
    pub(crate) fencing_token: i64,
}

/// The last release of a hold: its node to delete, and what the next acquire may open with
/// once that delete is confirmed (see [`LockState::record_opening`]).
#[derive(Debug)]
struct LastRelease {
    pub(crate) node: Arc<HeldNode>,
    pub(crate) next_opening: Opening,
}

/// What an acquiring owner does next.
#[derive(Debug)]
enum Admission {
    /// The owner already held the lock: its count went up.
    Reentered(OwnerHold),
    /// The owner holds the lock, but it is lost: no new guard.
    Lost(LossReason),
    /// The owner's own acquire is under way: wait for it, then ask again.
    WaitForOwnAcquire(OwnedNotified),
    /// The owner must take a place in the queue.
    Queue(Claim),
}

/// The owner's hold entered once more (its count up), or why it cannot be: it is lost.
fn enter_again(hold: &mut OwnerHold) -> std::result::Result<OwnerHold, LossReason> {
    match hold.node.loss() {
        Some(reason) => Err(reason),
        None => {
            hold.count += 1;
            Ok(hold.clone())
        }
    }
}

impl LockState {
    pub(crate) fn new(
        role: Role,
        schema: Schema,
        label: LockLabel,
        connection: Connection,
        path: String,
        settings: Settings,
    ) -> Self {
        let session_watch = LatestSessionWatch::new(&connection.client(), settings.common.loss_policy);
        // A read lock's holders share it anyway; only exclusive sides hand off.
        let cohort = settings.local_handoff.filter(|_| role != Role::Read).map(Cohort::new);
        LockState {
            cohort,
            label,
            role,
            schema,
            sibling: OnceLock::new(),
            connection,
            path,
            deadlock: settings.deadlock_check(),
            data: settings.common.data,
            acls: settings.common.acls,
            reentrant: settings.reentrant,
            max_hold: settings.common.max_hold,
            election: settings.election,
            // `validate` refused an id over 48 bits.
            chain: settings.owner_chain.and_then(ChainTag::new),
            session_watch,
            // A hold table has an entry per owner holding or acquiring: a few at most. DashMap's
            // default of four shards per core (each padded to a cache line) would cost a
            // kilobyte per lock here and 32 KB on a 64-core host, for 10,000 locks 320 MB.
            holds: DashMap::with_hasher_and_shard_amount(OwnerHash::default(), HOLD_TABLE_SHARDS),
            next_hold_id: AtomicU64::new(1),
            next_opening: std::sync::Mutex::new(Opening::Unknown),
        }
    }

    /// What the uuid of the current acquire's node carries. The chain's id when the lock is a
    /// link of one: every task of the process is then the chain's, one owner with the other
    /// processes of it, so a hold passed between tasks (local handoff) stays the chain's.
    /// Else the owner tag of the current task (or thread), when this lock looks for deadlocks,
    /// so that the graph tells the tasks of our session apart. The task, even when the lock is
    /// not reentrant: what waits and holds is the task, and a task holding one lock while it
    /// waits on another is one vertex, whatever counts its holds. None with local handoff: a
    /// hold passes from task to task behind one node, which would then name a task that no
    /// longer holds it (a ring no task is on); the session is read whole instead.
    ///
    /// A leader selector's node carries the election's mark instead, whatever else is set:
    /// its queue is an election named like a mutex, and the deadlock scan must not read it as
    /// a lock (`queue/deadlock.rs`).
    fn node_mark(&self) -> Option<NodeMark> {
        if self.election {
            return Some(NodeMark::Election);
        }
        if let Some(chain) = self.chain {
            return Some(NodeMark::Owner(Tag::Chain(chain)));
        }
        let task = (self.deadlock.is_some() && self.cohort.is_none()).then(|| Owner::current().tag());
        task.map(|task| NodeMark::Owner(Tag::Task(task)))
    }

    /// Who the current acquire counts for: the current task (or thread), or, when this
    /// participant is not reentrant, the acquire alone.
    fn owner_now(&self) -> Owner {
        if self.reentrant {
            Owner::current()
        } else {
            Owner::unique()
        }
    }

    /// Re-enters `owner`'s hold as [`admit`](Self::admit) does, when it has one and `may`
    /// says so (asked only then); `None`, with nothing changed, otherwise (no hold, its first
    /// acquire under way, or `may` refused): the acquire then takes the whole path.
    fn reenter(&self, owner: Owner, may: impl FnOnce() -> bool) -> Option<std::result::Result<OwnerHold, LossReason>> {
        let mut slot = self.holds.get_mut(&owner)?;
        let Slot::Held(hold, _) = slot.value_mut() else { return None };
        may().then(|| enter_again(hold))
    }

    /// Admits `owner`: re-enters a hold, waits behind its own acquire, or claims the right to
    /// queue.
    fn admit(self: &Arc<Self>, owner: Owner) -> Admission {
        match self.holds.entry(owner) {
            Entry::Occupied(mut slot) => match slot.get_mut() {
                Slot::Held(hold, _) => match enter_again(hold) {
                    Ok(hold) => Admission::Reentered(hold),
                    Err(reason) => Admission::Lost(reason),
                },
                Slot::Acquiring(done) => {
                    let done = done.get_or_insert_with(|| Arc::new(Notify::new()));
                    Admission::WaitForOwnAcquire(Arc::clone(done).notified_owned())
                }
            },
            Entry::Vacant(slot) => {
                slot.insert(Slot::Acquiring(None));
                Admission::Queue(Claim { state: Arc::clone(self), owner, open: true })
            }
        }
    }

    /// Counts one release of `owner`'s hold `hold_id` (nothing for a stale guard). On the last,
    /// forgets the hold and returns it: [`let_go`](Self::let_go) says what becomes of its node.
    fn release_one(&self, owner: Owner, hold_id: u64) -> Option<LastRelease> {
        let Entry::Occupied(mut slot) = self.holds.entry(owner) else {
            return None;
        };
        let Slot::Held(hold, _) = slot.get_mut() else {
            return None;
        };
        if hold.id != hold_id {
            return None;
        }
        hold.count -= 1;
        if hold.count > 0 {
            return None;
        }
        match slot.remove() {
            Slot::Held(hold, next_opening) => Some(LastRelease { node: hold.node, next_opening }),
            Slot::Acquiring(_) => None,
        }
    }

    /// The node of a hold that ended: passed to a task of ours waiting in the line (local
    /// handoff, within its bound), or returned to be deleted, marked released (its deletion is
    /// no loss).
    fn let_go(&self, last: LastRelease) -> Option<LastRelease> {
        let last = match &self.cohort {
            Some(cohort) => {
                let (node, next_opening) = cohort.pass_on(last.node, last.next_opening)?;
                LastRelease { node, next_opening }
            }
            None => last,
        };
        last.node.mark_released();
        Some(last)
    }

    /// Takes what the next acquire may send with its create (see `next_opening`).
    fn take_opening(&self) -> Opening {
        std::mem::take(&mut *self.next_opening.lock().unwrap_or_else(|poisoned| poisoned.into_inner()))
    }

    /// A hold whose delete by us is confirmed left `opening` for the next acquire.
    fn record_opening(&self, opening: Opening) {
        *self.next_opening.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = opening;
    }

    /// Links the two sides of a read-write lock.
    pub(crate) fn pair(read: &Arc<LockState>, write: &Arc<LockState>) {
        let _ = read.sibling.set(Arc::downgrade(write));
        let _ = write.sibling.set(Arc::downgrade(read));
    }

    /// The node `owner` holds on the other side of this read-write lock, if any. Asked by the
    /// read side, it is a downgrade: the write node is marked so before the owner's release can
    /// pass it on (both under the hold table's lock), and a writer of ours never holds it
    /// beside the reader (see `Cohort`).
    fn sibling_node_held_by(&self, owner: Owner) -> Option<Arc<HeldNode>> {
        let sibling = self.sibling.get().and_then(Weak::upgrade)?;
        let slot = sibling.holds.get(&owner);
        let Some(Slot::Held(hold, _)) = slot.as_deref() else {
            return None;
        };
        if self.role == Role::Read {
            hold.node.mark_downgraded();
        }
        Some(Arc::clone(&hold.node))
    }

    fn is_held_by(&self, owner: Owner) -> bool {
        self.holds.get(&owner).is_some_and(|slot| matches!(*slot, Slot::Held(..)))
    }

    fn is_held_by_anyone(&self) -> bool {
        self.holds.iter().any(|slot| matches!(*slot, Slot::Held(..)))
    }
}

/// The right of one owner to queue for the lock. Dropped unused, it lets the owner's other
/// acquires go on.
#[derive(Debug)]
struct Claim {
    state: Arc<LockState>,
    owner: Owner,
    open: bool,
}

impl Claim {
    /// The owner this claim is for.
    fn owner(&self) -> Owner {
        self.owner
    }

    /// Records the owner's new hold on `node`, taken through `client` by an acquire begun at
    /// `started`, tells the operator (events and metrics), and starts watching for its loss.
    fn grant(
        self,
        client: &Arc<Client>,
        node: LockNode,
        next_opening: Opening,
        fencing_token: i64,
        started: Instant,
    ) -> OwnerHold {
        let session_watch = self.state.session_watch.of(client);
        let acquired = Acquired { label: &self.state.label, fencing_token, started };
        let node = Arc::new(HeldNode::new(client, node, &session_watch, acquired, self.state.max_hold));
        self.hold(node, next_opening, fencing_token)
    }

    /// Records the owner's new hold on a node passed on by a task of ours (local handoff).
    fn take_handoff(self, handoff: Handoff) -> OwnerHold {
        self.hold(handoff.node, handoff.next_opening, handoff.fencing_token)
    }

    fn hold(mut self, node: Arc<HeldNode>, next_opening: Opening, fencing_token: i64) -> OwnerHold {
        let id = self.state.next_hold_id.fetch_add(1, Ordering::Relaxed);
        let hold = OwnerHold { id, count: 1, node, fencing_token };
        self.close(Some(Slot::Held(hold.clone(), next_opening)));
        hold
    }

    fn close(&mut self, replacement: Option<Slot>) {
        if !std::mem::take(&mut self.open) {
            return;
        }
        let done = match replacement {
            Some(slot) => self.state.holds.insert(self.owner, slot),
            None => self.state.holds.remove(&self.owner).map(|(_, slot)| slot),
        };
        if let Some(Slot::Acquiring(Some(done))) = done {
            done.notify_waiters();
        }
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        self.close(None);
    }
}

/// Proof that the lock is held; releases it when dropped or [released](LockGuard::release).
///
/// Each acquire, reentrant ones included, returns its own guard. The lock node is deleted when
/// the owner's last guard goes, in any order. A guard is `Send + 'static` and may be moved to
/// another task; it still counts for the owner (task or thread) that acquired it.
///
/// Dropping the guard releases in the background, on any thread: the delete is sent at once and
/// seen through on the current tokio runtime, or, on a thread with none, on a runtime thread of
/// zklock's own (`zklock-background`). Use [`release`](LockGuard::release) to learn the outcome.
/// The request still travels on the client's connection, which runs on the runtime the client
/// was made on: a current-thread runtime sends it the next time it is driven. Either way the
/// node is ephemeral: it never outlives the session.
///
/// A lock held through ZooKeeper can be lost without the holder doing anything: the session
/// expires, the client stays disconnected too long (see [`LossPolicy`](crate::LossPolicy)), or
/// someone deletes the node. What every hold tells of itself, a guard tells through the
/// [`Hold`] trait: [`is_held`](Hold::is_held) and [`lost`](Hold::lost) tell;
/// [`fencing_token`](Hold::fencing_token) lets the protected resource refuse a holder that has
/// not noticed yet, and [`multi_writer`](Hold::multi_writer) fences writes to ZooKeeper itself.
///
/// # Examples
///
/// Stop the critical section the moment the lock goes, and fence what it writes:
///
/// ```no_run
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # async fn copy_batch(_token: i64) {}
/// use zklock::hold::Hold;
///
/// let client = zklock::Client::connect("127.0.0.1:2181").await?;
/// let guard = zklock::InterProcessMutex::new(&client, "/app/locks/import")?.acquire().await?;
/// tokio::select! {
///     // The storage refuses tokens lower than the highest it has seen.
///     () = copy_batch(guard.fencing_token()) => guard.release().await?,
///     reason = guard.lost() => eprintln!("lock lost ({reason}); stopped the import"),
/// }
/// # Ok(())
/// # }
/// ```
#[must_use = "the lock is released as soon as the guard is dropped"]
pub struct LockGuard {
    state: Arc<LockState>,
    owner: Owner,
    hold: OwnerHold,
    released: bool,
}

impl LockGuard {
    fn new(state: Arc<LockState>, owner: Owner, hold: OwnerHold) -> Self {
        LockGuard { state, owner, hold, released: false }
    }

    /// Releases this hold; when it was the owner's last, deletes the lock node and waits for
    /// ZooKeeper to confirm.
    ///
    /// # Errors
    /// - [`Error::LockLost`]: the lock was lost, and the reason says how: before this release
    ///   (the node, if it still exists, is deleted in the background), or as the release found
    ///   it: `NodeDeleted` when the node was already gone (deleted by someone else, so the lock
    ///   may have been held by another participant meanwhile), `SessionExpired` or
    ///   `SessionClosed` when the session ended, and with it the node. The same reason
    ///   [`lost`](Hold::lost) gives;
    /// - [`Error::ZooKeeper`]: the delete was refused.
    ///
    /// The hold is released in this process in every case. The delete is retried through
    /// connection loss while the session lives, and never waits past the session's end.
    ///
    /// # Cancel safety
    /// Cancel safe: the delete is sent on the first poll, and if this future is dropped before
    /// ZooKeeper answers, a spawned task sees it through.
    pub async fn release(mut self) -> Result<()> {
        self.released = true;
        let lost = self.hold.node.loss();
        let Some(last) = self.state.release_one(self.owner, self.hold.id).and_then(|last| self.state.let_go(last))
        else {
            return lost.map_or(Ok(()), |reason| Err(Error::LockLost(reason)));
        };
        last.node.delete(lost).await?;
        // Our delete is confirmed: the next acquire may send something cheaper than a list.
        self.state.record_opening(last.next_opening);
        Ok(())
    }

    /// Resolves when the lock is lost, with the error a wait that needs the hold (a semaphore's
    /// taker behind its gate) ends with: the session's end as itself, as for every other
    /// acquire, else the loss (a deleted node starts the taker over).
    pub(crate) async fn lost_as_error(&self) -> Error {
        match self.hold.node.lost().await {
            LossReason::SessionExpired => Error::SessionExpired,
            LossReason::SessionClosed => Error::SessionClosed,
            reason => Error::LockLost(reason),
        }
    }

    /// The node this guard stands for (a leadership is told of its loss through it).
    pub(crate) fn held_node(&self) -> &Arc<HeldNode> {
        &self.hold.node
    }
}

impl fmt::Debug for LockGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LockGuard")
            .field("node_path", &self.node_path())
            .field("fencing_token", &self.fencing_token())
            .field("owner", &self.owner)
            .finish()
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        if self.released {
            return;
        }
        if let Some(last) = self.state.release_one(self.owner, self.hold.id).and_then(|last| self.state.let_go(last)) {
            last.node.delete_in_background();
        }
    }
}

impl crate::hold::hold_trait::sealed::Sealed for LockGuard {
    fn held_node(&self) -> &HeldNode {
        &self.hold.node
    }

    fn holder_token(&self) -> i64 {
        self.hold.fencing_token
    }
}

/// Builds an [`InterProcessMutex`] with options; from [`InterProcessMutex::builder`]. Every
/// recipe's builder takes the same options ([`LockOptions`]: ACLs, loss policy, node data); a
/// read-write lock's ([`ReadWriteLockBuilder`](crate::ReadWriteLockBuilder)) takes this one's
/// own too, for both its sides.
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
    /// lock ([`ReadWriteLockBuilder::local_handoff`](crate::ReadWriteLockBuilder::local_handoff))
    /// the write side hands off; readers share anyway. Defaults to off: every acquire queues a node of its own.
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
    /// Covers this mutex and, built with
    /// [`ReadWriteLockBuilder::fail_on_deadlock`](crate::ReadWriteLockBuilder::fail_on_deadlock),
    /// both sides of a read-write lock, a kazoo-schema mutex, and a multi-lock's locks built so
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
