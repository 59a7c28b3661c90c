//! The recipes the soak mixes (the locks, and the two leader elections), their paths, and a hold
//! of any lock.

use std::time::{Duration, Instant};

use zklock::hold::Hold;
use zklock::session::Connection;
use zklock::{
    Error, InterProcessMultiLock, InterProcessMutex, InterProcessReadWriteLock, InterProcessSemaphoreMutex,
    InterProcessSemaphoreV2, Lease, LocalHandoff, LockGuard, LossReason, MultiLockGuard, Result,
};

use super::history::Section;

/// Leases of the soak's semaphore: more than one, so holders really share it.
pub const MAX_LEASES: usize = 2;

/// How long the handoff mutex's node may be passed among a client's acquires.
pub const HANDOFF_TIME: Duration = Duration::from_millis(200);

/// One way of taking a lock, or of being elected leader; each has its own path(s), except that
/// both sides of the read-write lock share one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Recipe {
    Mutex,
    /// A mutex with local handoff, taken by several acquires of one client at once (each round
    /// that picks it runs three of them side by side).
    HandoffMutex,
    Write,
    Read,
    /// The write lock, then the read lock while writing, then the write lock released: a
    /// downgrade. Its section is the read that follows, which writers queued meanwhile must not
    /// overlap (CURATOR-621).
    Downgrade,
    Semaphore,
    SemaphoreMutex,
    MultiLock,
    /// A `LeaderLatch` participant, which leaves after a full term and joins again.
    LeaderLatch,
    /// A `LeaderSelector` participant (auto-requeue), whose closure leads for one term.
    LeaderSelector,
}

impl Recipe {
    /// The locks, which the workers take in turns.
    pub const LOCKS: [Recipe; 8] = [
        Recipe::Mutex,
        Recipe::HandoffMutex,
        Recipe::Write,
        Recipe::Read,
        Recipe::Downgrade,
        Recipe::Semaphore,
        Recipe::SemaphoreMutex,
        Recipe::MultiLock,
    ];

    /// The elections, in which every client takes part all along.
    pub const ELECTIONS: [Recipe; 2] = [Recipe::LeaderLatch, Recipe::LeaderSelector];

    /// How many recipes there are.
    pub const COUNT: usize = Recipe::LOCKS.len() + Recipe::ELECTIONS.len();

    /// Every recipe: the locks, then the elections.
    pub fn all() -> impl Iterator<Item = Recipe> {
        Recipe::LOCKS.into_iter().chain(Recipe::ELECTIONS)
    }

    /// Whether a hold of this recipe with `token` was passed on to it by an earlier holder of
    /// its client (local handoff: the token counts the node's earlier holders in its low byte).
    pub fn passed_on(self, token: i64) -> bool {
        self == Recipe::HandoffMutex && token & 0xff != 0
    }

    pub fn name(self) -> &'static str {
        match self {
            Recipe::Mutex => "mutex",
            Recipe::HandoffMutex => "mutex-handoff",
            Recipe::Write => "rw-write",
            Recipe::Read => "rw-read",
            Recipe::Downgrade => "rw-downgrade",
            Recipe::Semaphore => "semaphore",
            Recipe::SemaphoreMutex => "semaphore-mutex",
            Recipe::MultiLock => "multi-lock",
            Recipe::LeaderLatch => "leader-latch",
            Recipe::LeaderSelector => "leader-selector",
        }
    }

    /// Its position in [`Recipe::all`], for per-recipe tables.
    pub fn index(self) -> usize {
        Recipe::all().position(|recipe| recipe == self).unwrap()
    }

    /// How a hold of it may share its resources.
    pub fn mode(self) -> Mode {
        match self {
            Recipe::Read | Recipe::Downgrade => Mode::Shared,
            Recipe::Semaphore => Mode::Lease,
            Recipe::Mutex
            | Recipe::HandoffMutex
            | Recipe::Write
            | Recipe::SemaphoreMutex
            | Recipe::MultiLock
            | Recipe::LeaderLatch
            | Recipe::LeaderSelector => Mode::Exclusive,
        }
    }
}

/// How a critical section may overlap others on the same resource.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Alone.
    Exclusive,
    /// With other `Shared` sections only (readers).
    Shared,
    /// With at most `MAX_LEASES - 1` other leases.
    Lease,
}

/// What a critical section occupies: one lock path (the multi-lock occupies two), or the
/// leadership of one election.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Resource {
    Mutex,
    HandoffMutex,
    ReadWrite,
    Semaphore,
    SemaphoreMutex,
    Multi(usize),
    Latch,
    Selector,
}

/// The lock and election paths of one run.
pub struct Paths {
    pub mutex: String,
    pub handoff_mutex: String,
    pub read_write: String,
    pub semaphore: String,
    pub semaphore_mutex: String,
    pub multi: [String; 2],
    pub latch: String,
    pub selector: String,
}

impl Paths {
    pub fn unique() -> Self {
        let path = crate::common::unique_path;
        Paths {
            mutex: path("soak-mutex"),
            handoff_mutex: path("soak-mutex-handoff"),
            read_write: path("soak-rw"),
            semaphore: path("soak-semaphore"),
            semaphore_mutex: path("soak-semaphore-mutex"),
            multi: [path("soak-multi-a"), path("soak-multi-b")],
            latch: path("soak-latch"),
            selector: path("soak-selector"),
        }
    }

    /// Every lock and election path with the resource it stands for.
    pub fn all(&self) -> Vec<(Resource, &str)> {
        vec![
            (Resource::Mutex, &self.mutex),
            (Resource::HandoffMutex, &self.handoff_mutex),
            (Resource::ReadWrite, &self.read_write),
            (Resource::Semaphore, &self.semaphore),
            (Resource::SemaphoreMutex, &self.semaphore_mutex),
            (Resource::Multi(0), &self.multi[0]),
            (Resource::Multi(1), &self.multi[1]),
            (Resource::Latch, &self.latch),
            (Resource::Selector, &self.selector),
        ]
    }
}

/// One lock object per recipe, for one session; each is used by one task, one acquire at a time.
pub struct Locks {
    mutex: InterProcessMutex,
    /// Each acquire its own owner, so that the acquires of one worker form a cohort.
    handoff_mutex: InterProcessMutex,
    read_write: InterProcessReadWriteLock,
    semaphore: InterProcessSemaphoreV2,
    semaphore_mutex: InterProcessSemaphoreMutex,
    multi: InterProcessMultiLock,
}

impl Locks {
    /// The locks on a client or a `Session`.
    pub fn new(on: impl Into<Connection>, paths: &Paths) -> Self {
        let on = on.into();
        let multi: Vec<&str> = paths.multi.iter().map(String::as_str).collect();
        Locks {
            mutex: InterProcessMutex::new(on.clone(), &paths.mutex).unwrap(),
            handoff_mutex: InterProcessMutex::builder(on.clone(), &paths.handoff_mutex)
                .local_handoff(LocalHandoff::new(3, HANDOFF_TIME))
                .reentrant(false)
                .build()
                .unwrap(),
            read_write: InterProcessReadWriteLock::new(on.clone(), &paths.read_write).unwrap(),
            semaphore: InterProcessSemaphoreV2::new(on.clone(), &paths.semaphore, MAX_LEASES as u32).unwrap(),
            semaphore_mutex: InterProcessSemaphoreMutex::new(on.clone(), &paths.semaphore_mutex).unwrap(),
            multi: InterProcessMultiLock::from_paths(on, &multi).unwrap(),
        }
    }

    /// Takes `recipe` within `timeout`: `Ok(None)` when it timed out.
    pub async fn acquire_timeout(
        &self,
        recipe: Recipe,
        timeout: Duration,
    ) -> std::result::Result<Option<Held>, Failed> {
        Ok(match recipe {
            Recipe::Mutex => self.mutex.acquire_timeout(timeout).await?.map(|g| Held::Guard(Resource::Mutex, g)),
            Recipe::HandoffMutex => {
                self.handoff_mutex.acquire_timeout(timeout).await?.map(|g| Held::Guard(Resource::HandoffMutex, g))
            }
            Recipe::Write => self
                .read_write
                .write_lock()
                .acquire_timeout(timeout)
                .await?
                .map(|g| Held::Guard(Resource::ReadWrite, g)),
            Recipe::Read => {
                self.read_write.read_lock().acquire_timeout(timeout).await?.map(|g| Held::Guard(Resource::ReadWrite, g))
            }
            Recipe::Downgrade => {
                let Some(write) = self.read_write.write_lock().acquire_timeout(timeout).await? else {
                    return Ok(None);
                };
                // The write holder's read acquire waits for no holder (its node sorts level with
                // the write node), only for ZooKeeper, which the nemesis cuts off: a try gives up
                // at the first disconnection, by design, so the read gets the attempt's timeout.
                // Cut off for all of it, the attempt did not hold; the write goes in the
                // background, as a dropped guard's.
                let Some(read) = self.read_write.read_lock().acquire_timeout(timeout).await? else {
                    drop(write);
                    return Ok(None);
                };
                let write_node = write.node_path().to_owned();
                match write.release().await {
                    // The operator deleted the write node under it: say which node went.
                    Err(err @ Error::LockLost(LossReason::NodeDeleted)) => {
                        drop(read);
                        return Err(Failed { err, nodes: vec![write_node] });
                    }
                    released => released?,
                }
                Some(Held::Guard(Resource::ReadWrite, read))
            }
            Recipe::Semaphore => {
                self.semaphore.acquire_timeout(timeout).await?.map(|l| Held::Lease(Resource::Semaphore, l))
            }
            Recipe::SemaphoreMutex => {
                self.semaphore_mutex.acquire_timeout(timeout).await?.map(|l| Held::Lease(Resource::SemaphoreMutex, l))
            }
            Recipe::MultiLock => self.multi.acquire_timeout(timeout).await?.map(Held::Multi),
            Recipe::LeaderLatch | Recipe::LeaderSelector => unreachable!("{} is not a lock", recipe.name()),
        })
    }
}

/// An acquire's error, with the nodes of ours it found deleted (a downgrade's write node): the
/// error names no node, and the check forgives it only for a node the operator deleted.
#[derive(Debug)]
pub struct Failed {
    pub err: Error,
    pub nodes: Vec<String>,
}

impl std::fmt::Display for Failed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.err.fmt(f)
    }
}

impl From<Error> for Failed {
    fn from(err: Error) -> Self {
        Failed { err, nodes: Vec::new() }
    }
}

/// A hold of any recipe.
pub enum Held {
    Guard(Resource, LockGuard),
    Lease(Resource, Lease),
    Multi(MultiLockGuard),
}

/// One resource a hold occupies: its node, its fencing token and whether the holder believes it
/// holds.
pub struct Part {
    pub resource: Resource,
    pub node: String,
    pub token: i64,
    pub believed_held: bool,
}

impl Held {
    /// The resources held, each as the holder sees it now (no request).
    pub fn parts(&self) -> Vec<Part> {
        let guard_part = |resource, guard: &LockGuard| Part {
            resource,
            node: guard.node_path().to_owned(),
            token: guard.fencing_token(),
            believed_held: guard.is_held(),
        };
        match self {
            Held::Guard(resource, guard) => vec![guard_part(*resource, guard)],
            Held::Lease(resource, lease) => {
                vec![Part {
                    resource: *resource,
                    node: lease.node_path().to_owned(),
                    token: lease.fencing_token(),
                    believed_held: lease.is_held(),
                }]
            }
            Held::Multi(multi) => multi
                .guards()
                .iter()
                .enumerate()
                .map(|(index, guard)| guard_part(Resource::Multi(index), guard))
                .collect(),
        }
    }

    /// The critical sections of this hold, one per resource, by `client` from `start` to `end`,
    /// its acquire begun at `invoked`.
    pub fn sections(
        &self,
        client: usize,
        recipe: Recipe,
        invoked: Instant,
        start: Instant,
        end: Instant,
        told_lost: bool,
    ) -> Vec<Section> {
        let section = |part: Part| Section {
            client,
            recipe,
            resource: part.resource,
            node: part.node,
            invoked: Some(invoked),
            start,
            end,
            token: part.token,
            told_lost,
        };
        self.parts().into_iter().map(section).collect()
    }

    /// Every node the hold owns.
    pub fn nodes(&self) -> Vec<String> {
        self.parts().into_iter().map(|part| part.node).collect()
    }

    /// Resolves when the holder is told that (part of) the hold is lost.
    pub async fn lost(&self) {
        match self {
            Held::Guard(_, guard) => drop(guard.lost().await),
            Held::Lease(_, lease) => drop(lease.lost().await),
            Held::Multi(multi) => drop(multi.lost().await),
        }
    }

    pub async fn release(self) -> Result<()> {
        match self {
            Held::Guard(_, guard) => guard.release().await,
            Held::Lease(_, lease) => lease.release().await,
            Held::Multi(multi) => multi.release().await,
        }
    }
}
