//! The lock recipes, each a driver of the one queue engine under its rule.
//!
//! The engine is `queue/`, the rules `rules/`: [`InterProcessMutex`],
//! [`InterProcessReadWriteLock`], [`InterProcessSemaphoreV2`] (in Curator's layout or kazoo's),
//! [`InterProcessSemaphoreMutex`], [`InterProcessMultiLock`] and [`revoke`]; with what a lock
//! object keeps between acquires, its options and its hold table (counted per
//! [`owner`](owner::Owner)), the [`LockGuard`] that counts in it, and a mutex's opt-in
//! [`LocalHandoff`](crate::LocalHandoff) between tasks of one process. Each file's first line says
//! what it holds.

pub(crate) mod cohort;
pub(crate) mod multi;
pub(crate) mod mutex;
pub(crate) mod owner;
pub(crate) mod revoke;
pub(crate) mod rwlock;
pub(crate) mod semaphore;
pub(crate) mod semaphore_mutex;
