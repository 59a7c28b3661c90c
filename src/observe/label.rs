//! What names a lock in events and metrics: its recipe and path.

use std::sync::Arc;

use super::series::Series;

/// Which recipe a participant serves; names spans, events and metric labels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Recipe {
    Mutex,
    ReadLock,
    WriteLock,
    Semaphore,
    SemaphoreMutex,
    /// The mutex a semaphore's lease takers hold while they take leases (`{path}/locks`).
    SemaphoreGate,
    /// The queue of a `LeaderLatch` (`latch-` nodes); a hold is a term of leadership.
    LeaderLatch,
    /// The mutex of a `LeaderSelector`; a hold is a term of leadership.
    LeaderSelector,
}

impl Recipe {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Recipe::Mutex => "mutex",
            Recipe::ReadLock => "read_lock",
            Recipe::WriteLock => "write_lock",
            Recipe::Semaphore => "semaphore",
            Recipe::SemaphoreMutex => "semaphore_mutex",
            Recipe::SemaphoreGate => "semaphore_gate",
            Recipe::LeaderLatch => "leader_latch",
            Recipe::LeaderSelector => "leader_selector",
        }
    }
}

/// Which lock an event is about.
#[derive(Clone, Debug)]
pub(crate) struct LockLabel {
    pub(crate) recipe: Recipe,
    pub(crate) path: Arc<str>,
    /// Its metrics, shared by the clones (every hold has one).
    pub(crate) series: Arc<Series>,
}
