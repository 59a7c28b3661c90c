//! The lock recipes for synchronous code, each wrapping its async recipe.
//!
//! Each is made with `new`, or with the async builder and
//! [`from_async`](InterProcessMutex::from_async) for every option, and blocks the calling thread in
//! `acquire`, `acquire_timeout` and `try_acquire`.

use std::time::Duration;

use crate::client::session::Connection;
use crate::error::Result;
use crate::hold::lease::Lease as AsyncLease;
use crate::lock::multi::{InterProcessMultiLock as AsyncMultiLock, MultiLockGuard as AsyncMultiLockGuard};
use crate::lock::mutex::{InterProcessMutex as AsyncMutex, LockGuard as AsyncLockGuard};
use crate::lock::rwlock::InterProcessReadWriteLock as AsyncReadWriteLock;
use crate::lock::semaphore::InterProcessSemaphoreV2 as AsyncSemaphore;
use crate::lock::semaphore_mutex::InterProcessSemaphoreMutex as AsyncSemaphoreMutex;

use super::held::Held;
use super::run::run;

/// A mutex's guard, taken through [`InterProcessMutex`].
pub type LockGuard = Held<AsyncLockGuard>;
/// A semaphore's lease, taken through [`InterProcessSemaphoreV2`] or
/// [`InterProcessSemaphoreMutex`].
pub type Lease = Held<AsyncLease>;
/// A multi-lock's guard, taken through [`InterProcessMultiLock`].
pub type MultiLockGuard = Held<AsyncMultiLockGuard>;

/// The three ways to acquire, blocking, for a recipe whose async acquires hand out `$async_held`.
macro_rules! blocking_acquires {
    ($recipe:ident, $held:ident) => {
        impl $recipe {
            /// Acquires, blocking the calling thread as long as it takes: the async `acquire`.
            ///
            /// # Errors
            /// As the async `acquire`; [`Error::CannotBlock`](crate::Error::CannotBlock) on a
            /// thread of a tokio runtime (nothing is sent then).
            pub fn acquire(&self) -> Result<$held> {
                run(self.inner.acquire())?.map(Held::new)
            }

            /// Acquires within `timeout`: `Ok(None)` when time ran out, our node deleted before
            /// this returns, as the async `acquire_timeout`.
            ///
            /// # Errors
            /// As [`acquire`](Self::acquire).
            pub fn acquire_timeout(&self, timeout: Duration) -> Result<Option<$held>> {
                Ok(run(self.inner.acquire_timeout(timeout))??.map(Held::new))
            }

            /// Acquires only if it is free now: `Ok(None)` otherwise.
            ///
            /// # Errors
            /// As [`acquire`](Self::acquire).
            pub fn try_acquire(&self) -> Result<Option<$held>> {
                Ok(run(self.inner.try_acquire())??.map(Held::new))
            }
        }
    };
}

/// [`crate::InterProcessMutex`], blocking: reentrant per thread (as Curator's), each acquire
/// its own guard, the node deleted when the thread's last guard goes.
///
/// # Examples
///
/// ```no_run
/// use std::time::Duration;
/// use zklock::hold::Hold;
///
/// let client = zklock::blocking::connect("127.0.0.1:2181")?;
/// let mutex = zklock::blocking::InterProcessMutex::new(&client, "/app/locks/nightly-report")?;
/// if let Some(guard) = mutex.acquire_timeout(Duration::from_secs(5))? {
///     let nested = mutex.acquire()?; // the same thread re-enters at once
///     nested.release()?;
///     println!("held with fencing token {}", guard.fencing_token());
///     guard.release()?;
/// }
/// # Ok::<(), zklock::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct InterProcessMutex {
    inner: AsyncMutex,
}

impl InterProcessMutex {
    /// A mutex on `path` with default options (see [`crate::InterProcessMutex::builder`] and
    /// [`from_async`](Self::from_async) for the others).
    ///
    /// # Errors
    /// As [`crate::InterProcessMutex::new`].
    pub fn new(on: impl Into<Connection>, path: &str) -> Result<Self> {
        AsyncMutex::new(on, path).map(Self::from_async)
    }

    /// The blocking face of an async mutex (built with every option its builder has). Both
    /// count holds in one table: a thread's blocking hold and its async holds outside a task
    /// are one owner's.
    pub fn from_async(inner: AsyncMutex) -> Self {
        InterProcessMutex { inner }
    }

    /// The async mutex.
    pub fn as_async(&self) -> &AsyncMutex {
        &self.inner
    }

    /// Whether the calling thread holds the mutex. Never sends a request.
    pub fn is_acquired_by_current_thread(&self) -> bool {
        self.inner.is_acquired_by_current_task()
    }
}

blocking_acquires!(InterProcessMutex, LockGuard);

/// [`crate::InterProcessReadWriteLock`], blocking: a read lock and a write lock, each a
/// blocking [`InterProcessMutex`].
#[derive(Clone, Debug)]
pub struct InterProcessReadWriteLock {
    read: InterProcessMutex,
    write: InterProcessMutex,
}

impl InterProcessReadWriteLock {
    /// A read-write lock on `path` with default options.
    ///
    /// # Errors
    /// As [`crate::InterProcessReadWriteLock::new`].
    pub fn new(on: impl Into<Connection>, path: &str) -> Result<Self> {
        AsyncReadWriteLock::new(on, path).map(|lock| Self::from_async(&lock))
    }

    /// The blocking face of an async read-write lock (built with every option).
    pub fn from_async(lock: &AsyncReadWriteLock) -> Self {
        InterProcessReadWriteLock {
            read: InterProcessMutex::from_async(lock.read_lock().clone()),
            write: InterProcessMutex::from_async(lock.write_lock().clone()),
        }
    }

    /// The read lock: shared by readers, excluded by a writer (but the write holder's own).
    pub fn read_lock(&self) -> &InterProcessMutex {
        &self.read
    }

    /// The write lock: exclusive; its holder may also take the read lock (a downgrade).
    pub fn write_lock(&self) -> &InterProcessMutex {
        &self.write
    }
}

/// [`crate::InterProcessSemaphoreV2`], blocking: at most N leases at once.
#[derive(Clone, Debug)]
pub struct InterProcessSemaphoreV2 {
    inner: AsyncSemaphore,
}

impl InterProcessSemaphoreV2 {
    /// A semaphore of `max_leases` on `path` with default options.
    ///
    /// # Errors
    /// As [`crate::InterProcessSemaphoreV2::new`].
    pub fn new(on: impl Into<Connection>, path: &str, max_leases: u32) -> Result<Self> {
        AsyncSemaphore::new(on, path, max_leases).map(Self::from_async)
    }

    /// The blocking face of an async semaphore (built with every option).
    pub fn from_async(inner: AsyncSemaphore) -> Self {
        InterProcessSemaphoreV2 { inner }
    }
}

blocking_acquires!(InterProcessSemaphoreV2, Lease);

/// [`crate::InterProcessSemaphoreMutex`], blocking: a non-reentrant mutex whose lease any
/// thread may release.
#[derive(Clone, Debug)]
pub struct InterProcessSemaphoreMutex {
    inner: AsyncSemaphoreMutex,
}

impl InterProcessSemaphoreMutex {
    /// A semaphore mutex on `path` with default options.
    ///
    /// # Errors
    /// As [`crate::InterProcessSemaphoreMutex::new`].
    pub fn new(on: impl Into<Connection>, path: &str) -> Result<Self> {
        AsyncSemaphoreMutex::new(on, path).map(Self::from_async)
    }

    /// The blocking face of an async semaphore mutex (built with every option).
    pub fn from_async(inner: AsyncSemaphoreMutex) -> Self {
        InterProcessSemaphoreMutex { inner }
    }
}

blocking_acquires!(InterProcessSemaphoreMutex, Lease);

/// [`crate::InterProcessMultiLock`], blocking: several locks, all or none.
#[derive(Clone, Debug)]
pub struct InterProcessMultiLock {
    inner: AsyncMultiLock,
}

impl InterProcessMultiLock {
    /// A multi-lock over mutexes on `paths`, with default options.
    ///
    /// # Errors
    /// As [`crate::InterProcessMultiLock::from_paths`].
    pub fn from_paths(on: impl Into<Connection>, paths: &[&str]) -> Result<Self> {
        AsyncMultiLock::from_paths(on, paths).map(Self::from_async)
    }

    /// The blocking face of an async multi-lock (built with every option).
    pub fn from_async(inner: AsyncMultiLock) -> Self {
        InterProcessMultiLock { inner }
    }
}

blocking_acquires!(InterProcessMultiLock, MultiLockGuard);
