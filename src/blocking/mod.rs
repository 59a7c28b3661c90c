//! zklock for synchronous code: every lock recipe and the leader latch, blocking.
//!
//! The mutex, read-write lock, semaphores, multi-lock and leader latch with blocking `acquire`,
//! `acquire_timeout` and `try_acquire`, reentrant per thread, their holds released on drop and
//! their losses told by a blocking wait.
//!
//! As tokio's and reqwest's blocking modules do, it runs the async core on a runtime of its own:
//! one thread, `zklock-background`, started on first use, drives the client's connection and
//! zklock's tasks, while each call is polled on the calling thread (so that a thread is an
//! owner, as in Curator). Connect through [`connect`] or [`connect_session`] (or [`run`] a
//! connector of your own), so that the client's connection runs there too; a client made on
//! another runtime works while that runtime runs.
//!
//! Called on a thread of a tokio runtime (a task, a `block_on`, a `spawn_blocking`), every
//! call returns [`Error::CannotBlock`](crate::Error::CannotBlock) and sends nothing: blocking
//! there would stall the runtime, or deadlock it. Use the async API there.
//!
//! Each recipe wraps its async recipe: build it with the async builder for every option and
//! wrap it with `from_async`. What an acquire hands out is the async hold in a [`Held`], whose
//! waiting methods block (`lost`, `release`, a term's `ended`) and which reaches every other
//! method of the hold (fencing token, node path, fenced writes: the
//! [`Hold`](crate::hold::Hold) trait's) through `Deref`.
//!
//! # Examples
//!
//! ```no_run
//! use std::time::Duration;
//!
//! let client = zklock::blocking::connect("127.0.0.1:2181")?;
//! let mutex = zklock::blocking::InterProcessMutex::new(&client, "/app/locks/nightly-report")?;
//! let Some(guard) = mutex.acquire_timeout(Duration::from_secs(5))? else {
//!     return Ok(()); // another process has it
//! };
//! // Pass guard.fencing_token() to what you write; guard.is_held() says whether it stands.
//! guard.release()?;
//! # Ok::<(), zklock::Error>(())
//! ```

mod held;
mod latch;
mod locks;
mod run;

pub use held::Held;
pub use latch::{LeaderLatch, Leadership};
pub use locks::{
    InterProcessMultiLock, InterProcessMutex, InterProcessReadWriteLock, InterProcessSemaphoreMutex,
    InterProcessSemaphoreV2, Lease, LockGuard, MultiLockGuard,
};
pub use run::{connect, connect_session, run};
