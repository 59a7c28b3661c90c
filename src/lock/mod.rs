//! The lock recipes, one per file, each a driver of the one queue engine (`queue/`) under the
//! rules of `rules/`: [`InterProcessMutex`] (`mutex.rs`), [`InterProcessReadWriteLock`]
//! (`rwlock.rs`), [`InterProcessSemaphoreV2`] (`semaphore.rs`;
//! kazoo's layout of it in `semaphore_kazoo.rs`), [`InterProcessSemaphoreMutex`]
//! (`semaphore_mutex.rs`), [`InterProcessMultiLock`] (`multi.rs`) and [`revoke`] (`revoke.rs`);
//! with what a lock object keeps between acquires (`state.rs`: its options and its hold table,
//! counted per [`owner`](owner::Owner)), how one acquire enters the queue (`plan.rs`), and the
//! [`LockGuard`] that counts in the hold table (`guard.rs`); and
//! a mutex's opt-in [`LocalHandoff`](crate::LocalHandoff) between tasks of one process
//! (`cohort.rs`: the line of tasks, the passing of a hold, and its holders' fencing tokens).

pub(crate) mod cohort;
pub(crate) mod guard;
pub(crate) mod multi;
pub(crate) mod mutex;
pub(crate) mod mutex_builder;
pub(crate) mod owner;
pub(crate) mod plan;
pub(crate) mod revoke;
pub(crate) mod rwlock;
pub(crate) mod semaphore;
pub(crate) mod semaphore_kazoo;
pub(crate) mod semaphore_mutex;
pub(crate) mod state;
