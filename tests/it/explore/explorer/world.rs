//! The world the explorer acts on: its lock paths, the actors (each a session behind a proxy,
//! with one object per lock shared by its tasks), the holds they have, and the record of what
//! the operator and the faults did, which the checks read.

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::watch;
use tokio::task::JoinHandle;
use zklock::hold::Hold as _;
use zklock::session::{Connection, ConnectionState};
use zklock::{
    InterProcessMultiLock, InterProcessMutex, InterProcessReadWriteLock, InterProcessSemaphoreMutex,
    InterProcessSemaphoreV2, Lease, LocalHandoff, LockGuard, MultiLockGuard, Result, Session,
};
use zklock_testcontainers::Proxy;
use zookeeper_client::{Client, SessionState};

use super::election::Seat;
use super::ops::Lock;
use super::slot::Slot;
use crate::common::unique_path;

/// The actors' session timeout: short, so that a server-side expiry fits in a case.
pub const SESSION_TIMEOUT: Duration = Duration::from_secs(4);

/// The semaphore's leases.
pub const MAX_LEASES: usize = 2;

/// The local handoff of the handoff mutex and the read-write lock's write side: a time bound
/// longer than a case's steps take, so that holds are passed on between settled steps.
const HANDOFF: LocalHandoff = LocalHandoff::new(3, Duration::from_secs(5));

/// The actors whose chained locks are links of one chain (`MutexBuilder::owner_chain`), as a
/// `zklock` and the `zklock` its command runs are: two sessions, one owner.
pub const CHAIN_LINKS: [usize; 2] = [0, 1];

/// The chain's id (any under 2^48: one chain per case, each case under a root of its own).
const CHAIN: u64 = 0x00c4_a1de;

/// One case's lock paths, all under one root: the root the locks built to fail on a deadlock
/// look under, and the one the deadlock property reads (`deadlocks.rs`), elections included.
pub struct Paths {
    pub root: String,
    mutex: String,
    handoff: String,
    read_write: String,
    read_write_once: String,
    semaphore: String,
    semaphore_mutex: String,
    multi: [String; 2],
    chained: [String; 2],
    latch: String,
    selector: String,
}

impl Paths {
    pub fn unique() -> Paths {
        let root = unique_path("explore");
        let at = |name: &str| format!("{root}/{name}");
        Paths {
            mutex: at("mutex"),
            handoff: at("handoff"),
            read_write: at("rw"),
            read_write_once: at("rw-once"),
            semaphore: at("semaphore"),
            semaphore_mutex: at("semaphore-mutex"),
            multi: [at("multi-a"), at("multi-b")],
            chained: [at("chained-a"), at("chained-b")],
            latch: at("latch"),
            selector: at("selector"),
            root,
        }
    }

    /// How the nodes of `dir` wait, if it is a lock's queue (`None` for an election, a
    /// semaphore's leases, or no queue of the case's): the model's own list, by what each
    /// lock is, not by its nodes' names.
    pub fn queue_kind(&self, dir: &str) -> Option<QueueKind> {
        let mutex_like =
            [&self.mutex, &self.handoff, &self.multi[0], &self.multi[1], &self.chained[0], &self.chained[1]];
        let gates = [&self.semaphore, &self.semaphore_mutex].map(|semaphore| format!("{semaphore}/locks"));
        if mutex_like.iter().any(|path| *path == dir) || gates.iter().any(|gate| gate == dir) {
            Some(QueueKind::Mutex)
        } else if dir == self.read_write || dir == self.read_write_once {
            Some(QueueKind::ReadWrite)
        } else {
            None
        }
    }

    /// A root where no lock is: the one the read-write lock that is not reentrant looks under,
    /// so that it is never a ring's victim (see `Locks`).
    pub fn elsewhere(&self) -> String {
        format!("{}-elsewhere", self.root)
    }

    /// Whether the nodes of `dir` carry their task's owner tag (the locks built to fail on a
    /// deadlock, without local handoff).
    pub fn tagged(&self, dir: &str) -> bool {
        dir == self.mutex
            || dir == self.read_write_once
            || self.multi.iter().any(|path| path == dir)
            || self.chained.iter().any(|path| path == dir)
    }

    /// Whether `actor`'s nodes in `dir` are the chain's (a chained lock's, of a link), not its
    /// task's.
    pub fn chained(&self, actor: usize, dir: &str) -> bool {
        CHAIN_LINKS.contains(&actor) && self.chained.iter().any(|path| path == dir)
    }

    /// The path of an election (`Lock::Latch` or `Lock::Selector`).
    pub fn election(&self, election: Lock) -> String {
        match election {
            Lock::Latch => self.latch.clone(),
            _ => self.selector.clone(),
        }
    }

    /// The directories holding the nodes a lock's participants queue (for the operator).
    pub fn queues(&self, lock: Lock) -> Vec<String> {
        match lock {
            Lock::Mutex => vec![self.mutex.clone()],
            Lock::HandoffMutex => vec![self.handoff.clone()],
            Lock::Write | Lock::Read => vec![self.read_write.clone()],
            Lock::NonReentrantWrite | Lock::NonReentrantRead => vec![self.read_write_once.clone()],
            Lock::Semaphore => vec![format!("{}/locks", self.semaphore)],
            Lock::SemaphoreMutex => vec![format!("{}/locks", self.semaphore_mutex)],
            Lock::Multi => self.multi.to_vec(),
            Lock::ChainedFirst => vec![self.chained[0].clone()],
            Lock::ChainedSecond => vec![self.chained[1].clone()],
            Lock::Latch | Lock::Selector => vec![self.election(lock)],
        }
    }

    /// Every directory any lock puts nodes in: what must be empty once everything is dropped.
    pub fn all_dirs(&self) -> Vec<String> {
        let mut dirs =
            vec![self.mutex.clone(), self.handoff.clone(), self.read_write.clone(), self.read_write_once.clone()];
        for semaphore in [&self.semaphore, &self.semaphore_mutex] {
            dirs.push(format!("{semaphore}/locks"));
            dirs.push(format!("{semaphore}/leases"));
        }
        dirs.extend(self.multi.iter().cloned());
        dirs.extend(self.chained.iter().cloned());
        dirs.extend([self.latch.clone(), self.selector.clone()]);
        dirs
    }
}

/// How a lock's nodes wait (`lock_kind.rs`'s rules, written again for the model): a mutex's
/// node behind every node ahead; a read-write lock's writer behind every node ahead, its
/// reader behind every writer ahead.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueKind {
    Mutex,
    ReadWrite,
}

impl QueueKind {
    /// Whether node `waiter` waits behind node `ahead` of the same queue (names, or paths).
    pub fn waits_behind(self, waiter: &str, ahead: &str) -> bool {
        let sequence =
            |node: &str| node.get(node.len().saturating_sub(10)..).and_then(|digits| digits.parse::<u64>().ok());
        let (Some(waiter_at), Some(ahead_at)) = (sequence(waiter), sequence(ahead)) else { return false };
        ahead_at < waiter_at
            && match self {
                QueueKind::Mutex => true,
                QueueKind::ReadWrite => waiter.contains("__WRIT__") || ahead.contains("__WRIT__"),
            }
    }
}

/// One object per lock, for one session; shared by the actor's tasks. The mutex and the
/// multi-lock are built to fail on a deadlock under the case's root, the read-write lock that
/// is not reentrant under a root where nothing is (`Paths::elsewhere`): the nodes of all three
/// carry owner tags, but a ring whose victim is the last one's wait stands, certain, until its
/// timeouts, for the observer's look to report. The others cannot opt in (local handoff,
/// semaphores), so an actor with a node of theirs is a session read whole. The two chained
/// mutexes are links of one chain for the actors of [`CHAIN_LINKS`] (their nodes carry the
/// chain's mark, not a task's), and task-tagged for the other; they look for deadlocks under
/// `Paths::elsewhere` too, so that a ring through the chain stands for the observer to report.
pub struct Locks {
    mutex: InterProcessMutex,
    handoff: InterProcessMutex,
    read_write: InterProcessReadWriteLock,
    read_write_once: InterProcessReadWriteLock,
    semaphore: InterProcessSemaphoreV2,
    semaphore_mutex: InterProcessSemaphoreMutex,
    multi: InterProcessMultiLock,
    chained: [InterProcessMutex; 2],
}

impl Locks {
    /// `actor`'s lock objects.
    pub fn new(on: impl Into<Connection>, paths: &Paths, actor: usize) -> Locks {
        let on = on.into();
        let tagged = |path: &str| InterProcessMutex::builder(on.clone(), path).fail_on_deadlock(&paths.root);
        let multi = paths.multi.iter().map(|path| tagged(path).build().unwrap()).collect();
        let chained = paths.chained.clone().map(|path| {
            let builder = InterProcessMutex::builder(on.clone(), &path).fail_on_deadlock(&paths.elsewhere());
            let builder = if CHAIN_LINKS.contains(&actor) { builder.owner_chain(CHAIN) } else { builder };
            builder.build().unwrap()
        });
        Locks {
            chained,
            mutex: tagged(&paths.mutex).build().unwrap(),
            handoff: InterProcessMutex::builder(on.clone(), &paths.handoff).local_handoff(HANDOFF).build().unwrap(),
            read_write: InterProcessReadWriteLock::builder(on.clone(), &paths.read_write)
                .local_handoff(HANDOFF)
                .build()
                .unwrap(),
            read_write_once: InterProcessReadWriteLock::builder(on.clone(), &paths.read_write_once)
                .fail_on_deadlock(&paths.elsewhere())
                .reentrant(false)
                .build()
                .unwrap(),
            semaphore: InterProcessSemaphoreV2::new(on.clone(), &paths.semaphore, MAX_LEASES as u32).unwrap(),
            semaphore_mutex: InterProcessSemaphoreMutex::new(on.clone(), &paths.semaphore_mutex).unwrap(),
            multi: InterProcessMultiLock::new(multi).unwrap(),
        }
    }

    /// Acquires `lock`: `None` for zero patience means a try, else at most `timeout`.
    pub async fn acquire(&self, lock: Lock, timeout: Option<Duration>) -> Result<Option<Held>> {
        macro_rules! take {
            ($recipe:expr, $wrap:expr) => {
                match timeout {
                    Some(timeout) => $recipe.acquire_timeout(timeout).await?.map($wrap),
                    None => Some($wrap($recipe.acquire().await?)),
                }
            };
        }
        Ok(match lock {
            Lock::Mutex => take!(self.mutex, Held::Guard),
            Lock::HandoffMutex => take!(self.handoff, Held::Guard),
            Lock::Write => take!(self.read_write.write_lock(), Held::Guard),
            Lock::Read => take!(self.read_write.read_lock(), Held::Guard),
            Lock::NonReentrantWrite => take!(self.read_write_once.write_lock(), Held::Guard),
            Lock::NonReentrantRead => take!(self.read_write_once.read_lock(), Held::Guard),
            Lock::Semaphore => take!(self.semaphore, Held::Lease),
            Lock::SemaphoreMutex => take!(self.semaphore_mutex, Held::Lease),
            Lock::Multi => take!(self.multi, Held::Multi),
            Lock::ChainedFirst => take!(self.chained[0], Held::Guard),
            Lock::ChainedSecond => take!(self.chained[1], Held::Guard),
            Lock::Latch | Lock::Selector => unreachable!("an election is joined, not acquired"),
        })
    }
}

/// A hold of any lock.
pub enum Held {
    Guard(LockGuard),
    Lease(Lease),
    Multi(MultiLockGuard),
}

/// One node of a hold, as its holder sees it now.
pub struct Part {
    pub node: String,
    pub token: i64,
    pub believed: bool,
}

impl Held {
    pub fn parts(&self) -> Vec<Part> {
        let guard = |guard: &LockGuard| Part {
            node: guard.node_path().to_owned(),
            token: guard.fencing_token(),
            believed: guard.is_held(),
        };
        match self {
            Held::Guard(held) => vec![guard(held)],
            Held::Lease(lease) => {
                vec![Part {
                    node: lease.node_path().to_owned(),
                    token: lease.fencing_token(),
                    believed: lease.is_held(),
                }]
            }
            Held::Multi(multi) => multi.guards().iter().map(guard).collect(),
        }
    }

    /// Releases `held` if this is its last owner (else the other owner does): `None` then.
    pub async fn release_shared(held: Arc<Held>) -> Option<Result<()>> {
        Some(Arc::try_unwrap(held).ok()?.release().await)
    }

    pub async fn release(self) -> Result<()> {
        match self {
            Held::Guard(held) => held.release().await,
            Held::Lease(lease) => lease.release().await,
            Held::Multi(multi) => multi.release().await,
        }
    }

    /// Asks for the loss once (which sets the node watch) and lets the future go.
    pub async fn watch_loss(&self) {
        let brief = Duration::from_millis(1);
        match self {
            Held::Guard(held) => drop(tokio::time::timeout(brief, held.lost()).await),
            Held::Lease(lease) => drop(tokio::time::timeout(brief, lease.lost()).await),
            Held::Multi(multi) => drop(tokio::time::timeout(brief, multi.lost()).await),
        }
    }

    /// Resolves once someone asked for the lock back (never, for a multi-lock).
    pub async fn revocation_requested(&self) {
        match self {
            Held::Guard(held) => held.revocation_requested().await,
            Held::Lease(lease) => lease.revocation_requested().await,
            Held::Multi(_) => std::future::pending().await,
        }
    }
}

/// A hold one task has.
pub struct Hold {
    pub id: u64,
    pub lock: Lock,
    /// Shared with a holder answering a revocation request, which releases it.
    pub held: Arc<Held>,
    pub began: Instant,
    /// Taken again by the task that held it (shares its node and token).
    pub reentry: bool,
    /// Since when its node is watched (its `lost()` was asked).
    pub watched: Option<Instant>,
    /// The lock objects it was taken with: a reentry goes through them (the actor's may have
    /// been made anew since, on a new session, and know nothing of it).
    pub on: Arc<Locks>,
}

/// A node a hold began on, as the task saw it then.
pub struct Started {
    pub who: (usize, usize),
    pub began: Instant,
    pub node: String,
    pub token: i64,
    pub reentry: bool,
    /// Passed on by a task of the same actor (local handoff).
    pub passed_on: bool,
    /// Proven by this acquire's own last reply from its queue (a listing, or the read of its
    /// node once its predecessor went): one lock's acquire, not a pass, not a multi-lock's part
    /// (whose other locks it waited for after).
    pub proven_now: bool,
}

/// What the operator and the faults did, by node and by actor, and the holds begun since the
/// last check.
#[derive(Default)]
pub struct Record {
    pub started: Vec<Started>,
    /// Node -> when its delete was sent, and when it was known done.
    pub deleted: HashMap<String, (Instant, Instant)>,
    /// The nodes deleted in one transaction with the node they waited behind (a waiter with its
    /// predecessor, the waiters of a whole queue): no order of the server lets one hold before
    /// that delete.
    pub deleted_behind: HashSet<String>,
    /// Node -> when someone asked for it back.
    pub revoked: HashMap<String, Instant>,
    /// Actor -> when its session was last known expired (the expiry's end).
    pub expired: HashMap<usize, Instant>,
    /// Actor -> since when its client has been connected (`None` while it is not): a holder
    /// cannot hear of its node's deletion before its client reconnects, and zookeeper-client
    /// reconnects on its own schedule (backing off up to a second and more after a long cut).
    pub connected: HashMap<usize, Option<Instant>>,
    /// Actor -> whether its proxy is cut now, and whether it was at any time since each task's
    /// acquire began (cleared by that task).
    pub cut: HashMap<usize, bool>,
    /// Actor -> its cuts and heals counted, so that a timed heal knows whether a later cut or
    /// heal of the same actor came first (another actor's must not stop it: the proxy would
    /// stay cut for good).
    pub cut_epoch: HashMap<usize, u64>,
    /// Violations found by the tasks themselves (an acquire past its patience, a wrong error).
    pub violations: Vec<String>,
    /// Node -> the task that queued or held it last: every node the tasks were told of (by
    /// their queue views while they waited, by their holds), for the deadlock property.
    pub owners: HashMap<String, (usize, usize)>,
    /// Nodes of holds let go of whose release has not answered yet: no task holds them, but
    /// they stand until their delete is done.
    pub releasing: HashSet<String>,
    /// Nodes of acquires that ended without holding (timed out, dropped, failed): their
    /// cleanup may still be deleting them.
    pub ended: HashSet<String>,
    /// The rings acquires gave up on (`Error::Deadlock`), by task, since the last check.
    pub victims: Vec<((usize, usize), zklock::deadlock::Deadlock)>,
    /// Counts for the summary.
    pub holds: u64,
    pub gave_up: u64,
    pub passes: u64,
    /// Terms of leadership begun.
    pub terms: u64,
    pub deletions: u64,
    pub expiries: u64,
    /// Server restarts, and the sessions that expired across one (not back within their timeout).
    pub restarts: u64,
    pub restart_expiries: u64,
}

pub type Shared = Arc<Mutex<Record>>;

/// What an actor runs on.
pub enum On {
    Client(Arc<Mutex<Client>>),
    /// Replaced when the operator builds it anew from an expired client.
    Session(Arc<Mutex<SessionView>>),
}

/// The actor's `Session`, and what a subscriber to its `subscribe()` channel that reads only at the checks
/// (late, missing whatever came and went between two) remembers.
pub struct SessionView {
    pub session: Session,
    pub late_reader: watch::Receiver<ConnectionState>,
    /// The ids of this `Session`'s sessions that the explorer expired.
    pub expired: HashSet<i64>,
    /// The `expiries` the late reader saw last.
    pub expiries_seen: u64,
    /// Since when its state and its client have disagreed on whether the session is lost.
    pub at_odds_since: Option<Instant>,
}

impl SessionView {
    pub fn new(session: Session, expired: HashSet<i64>) -> SessionView {
        let late_reader = session.subscribe();
        SessionView { session, late_reader, expired, expiries_seen: 0, at_odds_since: None }
    }
}

/// A session behind a proxy, its lock objects, and its tasks.
pub struct Actor {
    pub index: usize,
    pub proxy: Arc<Proxy>,
    pub on: On,
    pub locks: Arc<Mutex<Arc<Locks>>>,
    pub slots: Vec<Slot>,
    /// Its places in the latch's and the selector's elections.
    pub seats: [Seat; 2],
    /// Records in `Record::connected` when its client connects and disconnects.
    connection_follower: JoinHandle<()>,
}

impl Drop for Actor {
    fn drop(&mut self) {
        self.connection_follower.abort();
    }
}

impl Actor {
    pub async fn start(
        index: usize,
        on_session: bool,
        server: SocketAddr,
        paths: &Arc<Paths>,
        record: &Shared,
    ) -> Actor {
        let proxy = Arc::new(Proxy::start(server).unwrap());
        let through = proxy.connect_string();
        let on = if on_session {
            let session = Session::connect(move || {
                let through = through.clone();
                async move { connect_through(&through).await }
            });
            let session = session.await.expect("the session connects");
            On::Session(Arc::new(Mutex::new(SessionView::new(session, HashSet::new()))))
        } else {
            On::Client(Arc::new(Mutex::new(connect_through(&through).await.expect("the client connects"))))
        };
        let locks = Arc::new(Mutex::new(Arc::new(match &on {
            On::Client(client) => Locks::new(&*client.lock().unwrap(), paths, index),
            On::Session(view) => Locks::new(&view.lock().unwrap().session, paths, index),
        })));
        let session = match &on {
            On::Session(view) => Some(Arc::clone(view)),
            On::Client(_) => None,
        };
        let slots =
            (0..super::ops::SLOTS).map(|slot| Slot::start(index, slot, session.clone(), &locks, record)).collect();
        let seats = Lock::ELECTIONS.map(Seat::new);
        let current: Box<dyn Fn() -> Client + Send> = match &on {
            On::Client(client) => {
                let client = Arc::clone(client);
                Box::new(move || client.lock().unwrap().clone())
            }
            On::Session(view) => {
                let view = Arc::clone(view);
                Box::new(move || view.lock().unwrap().session.client())
            }
        };
        let connection_follower = tokio::spawn(follow_connection(current, index, Arc::clone(record)));
        Actor { index, proxy, on, locks, slots, seats, connection_follower }
    }

    /// The client now.
    pub fn client(&self) -> Client {
        match &self.on {
            On::Client(client) => client.lock().unwrap().clone(),
            On::Session(view) => view.lock().unwrap().session.client(),
        }
    }

    /// What its participants join elections on: the client now, or the `Session`.
    pub fn connection(&self) -> Connection {
        match &self.on {
            On::Client(client) => client.lock().unwrap().clone().into(),
            On::Session(view) => view.lock().unwrap().session.clone().into(),
        }
    }

    /// Its seat in `election`.
    pub fn seat(&self, election: Lock) -> &Seat {
        &self.seats[usize::from(election == Lock::Selector)]
    }

    /// A plain client whose session ended is replaced (with new lock objects), as a service
    /// would; a `Session` does it itself. Nothing while the proxy is cut.
    pub async fn renew_if_ended(&self, paths: &Paths) {
        let On::Client(client) = &self.on else { return };
        let current = client.lock().unwrap().clone();
        if !matches!(current.state(), zookeeper_client::SessionState::Expired | zookeeper_client::SessionState::Closed)
        {
            return;
        }
        let through = self.proxy.connect_string();
        if let Ok(Ok(fresh)) = tokio::time::timeout(Duration::from_secs(2), connect_through(&through)).await {
            *self.locks.lock().unwrap() = Arc::new(Locks::new(&fresh, paths, self.index));
            *client.lock().unwrap() = fresh;
        }
    }
}

/// Records since when the actor's client (whichever it has now: a plain client is replaced
/// after an expiry, a `Session` replaces its own) has been connected, at each change of its
/// state.
async fn follow_connection(current: Box<dyn Fn() -> Client + Send>, actor: usize, record: Shared) {
    loop {
        let client = current();
        let mut states = client.state_watcher();
        let mut state = states.state();
        loop {
            let connected = matches!(state, SessionState::SyncConnected | SessionState::ConnectedReadOnly);
            record.lock().unwrap().connected.insert(actor, connected.then(Instant::now));
            if state.is_terminated() {
                break;
            }
            state = states.changed().await;
        }
        // Its session ended: the condition polled is the client's replacement.
        while current().session_id() == client.session_id() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

pub async fn connect_through(connect_string: &str) -> std::result::Result<Client, zookeeper_client::Error> {
    Client::connector().with_session_timeout(SESSION_TIMEOUT).connect(connect_string).await
}
