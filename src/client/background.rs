//! Where the work a drop leaves runs: the caller's runtime, or zklock's own.
//!
//! Where zklock runs what a drop leaves to be done (a released node's delete, an abandoned
//! create's cleanup): on the caller's tokio runtime when there is one, else on a runtime of
//! zklock's own, so that a guard dropped on a plain thread releases all the same.
//!
//! zklock's own runtime is one thread, `zklock-background`, started the first time a drop
//! happens outside a runtime (or [`zklock::blocking`](crate::blocking) is used) and kept for the
//! life of the process: a current-thread runtime whose thread drives its I/O, its timers and the
//! tasks given to it, while the blocking API's calls are polled on their callers' threads. The requests those tasks send still go through the
//! client's connection, which runs on the runtime the client was made on; the work needs that
//! runtime to be running (a multi-thread runtime always is; a current-thread one only while a
//! `block_on` drives it), never the dropping thread's.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

use tokio::runtime::{Builder, Handle};
use tokio::task::AbortHandle;

/// Runs `task` on the current tokio runtime, or on zklock's own outside one. Returns `false`
/// only when neither can be had (zklock's thread could not be started), after logging it.
pub(crate) fn spawn<F>(task: F) -> bool
where
    F: Future<Output = ()> + Send + 'static,
{
    spawn_abortable(task).is_some()
}

/// As [`spawn`], with a handle that stops the task: `None` where `spawn` says `false`.
pub(crate) fn spawn_abortable<F>(task: F) -> Option<AbortHandle>
where
    F: Future<Output = ()> + Send + 'static,
{
    let runtime = match Handle::try_current() {
        Ok(current) => current,
        Err(_) => own_runtime()?.clone(),
    };
    Some(runtime.spawn(task).abort_handle())
}

/// The releases and cleanups handed to a spawned task (a dropped guard's delete, a cancelled
/// acquire's node), counted until each has ended, so that a program can wait for them before it
/// exits ([`finish_releases`], a blocking hold's drop): a process that exits first leaves its
/// node to its session's timeout, the next contender waiting that long.
static PENDING: AtomicUsize = AtomicUsize::new(0);
/// When the last pending work gives up at the latest: its session's timeout after it began
/// (past that the server expired the session, and its nodes with it).
static PENDING_UNTIL: Mutex<Option<Instant>> = Mutex::new(None);
static PENDING_ENDED: Condvar = Condvar::new();
static PENDING_ENDED_ASYNC: tokio::sync::Notify = tokio::sync::Notify::const_new();

/// One release or cleanup under way, counted in [`PENDING`] until it is dropped (done, or
/// dropped unfinished by a runtime that shuts down).
pub(crate) struct Pending(());

impl Pending {
    /// Counts one more, which ends by itself at the latest `session_timeout` from now.
    pub(crate) fn begin(session_timeout: Duration) -> Pending {
        let until = Instant::now() + session_timeout;
        let mut latest = PENDING_UNTIL.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        *latest = Some(latest.map_or(until, |latest| latest.max(until)));
        PENDING.fetch_add(1, Ordering::SeqCst);
        Pending(())
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        let _latest = PENDING_UNTIL.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        PENDING.fetch_sub(1, Ordering::SeqCst);
        PENDING_ENDED.notify_all();
        PENDING_ENDED_ASYNC.notify_waiters();
    }
}

/// Blocks until no release or cleanup is pending, or `within` passed, or the moment the last
/// of them ends by itself (its session's timeout) passed: whether none is left.
pub(crate) fn wait_for_pending(within: Duration) -> bool {
    let deadline = Instant::now() + within;
    let mut latest = PENDING_UNTIL.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    loop {
        if PENDING.load(Ordering::SeqCst) == 0 {
            return true;
        }
        let until = latest.map_or(deadline, |latest| latest.min(deadline));
        let Some(left) = until.checked_duration_since(Instant::now()).filter(|left| !left.is_zero()) else {
            return false;
        };
        latest = PENDING_ENDED.wait_timeout(latest, left).unwrap_or_else(|poisoned| poisoned.into_inner()).0;
    }
}

/// Waits until every release and cleanup that drops handed to the background has ended, for at
/// most `within`: true when none is left. Call it before a program ends, once its guards are
/// dropped: a guard dropped as an async `main` returns hands its delete to a task that the
/// runtime, shutting down, never runs, and the node stays until the session's timeout (the next
/// contender waits that long). A blocking hold ([`zklock::blocking`](crate::blocking)) waits for
/// its own release when dropped, and needs no call.
///
/// Each pending release ends by itself once it is done, or at the latest when its session's
/// timeout has passed (the server then removes the node): `within` beyond that waits no longer.
///
/// # Cancel safety
/// Cancel safe: it only waits.
///
/// # Examples
///
/// ```no_run
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> zklock::Result<()> {
/// # let client = zklock::Client::connect("127.0.0.1:2181").await.unwrap();
/// let mutex = zklock::InterProcessMutex::new(&client, "/app/locks/nightly-report")?;
/// let guard = mutex.acquire().await?;
/// // ... the work; the guard may drop anywhere, even on an error path ...
/// drop(guard);
/// zklock::session::finish_releases(std::time::Duration::from_secs(5)).await;
/// # Ok(())
/// # }
/// ```
pub async fn finish_releases(within: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        let ended = PENDING_ENDED_ASYNC.notified();
        if PENDING.load(Ordering::SeqCst) == 0 {
            return true;
        }
        let latest = *PENDING_UNTIL.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let until = latest.map_or(deadline, |latest| deadline.min(tokio::time::Instant::from_std(latest)));
        if tokio::time::timeout_at(until, ended).await.is_err() {
            return PENDING.load(Ordering::SeqCst) == 0;
        }
    }
}

/// zklock's own runtime, started once; `None` if its thread could not be started. The
/// blocking API runs its calls on it too.
pub(crate) fn own_runtime() -> Option<&'static Handle> {
    static OWN: OnceLock<Option<Handle>> = OnceLock::new();
    OWN.get_or_init(|| match start_own_runtime() {
        Ok(handle) => Some(handle),
        Err(err) => {
            tracing::error!(error = %err, "cannot start zklock's background runtime: what a drop outside a tokio runtime leaves goes when the session ends");
            None
        }
    })
    .as_ref()
}

fn start_own_runtime() -> std::io::Result<Handle> {
    let runtime = Builder::new_current_thread().enable_all().thread_name("zklock-background").build()?;
    let handle = runtime.handle().clone();
    std::thread::Builder::new()
        .name("zklock-background".into())
        .spawn(move || runtime.block_on(std::future::pending::<()>()))?;
    Ok(handle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outside_a_runtime_the_task_runs_on_zklocks_own_thread() {
        let (sent, received) = std::sync::mpsc::channel();
        assert!(spawn(async move {
            sent.send(std::thread::current().name().map(str::to_owned)).unwrap();
        }));
        let ran_on = received.recv_timeout(std::time::Duration::from_secs(10)).unwrap();
        assert_eq!(ran_on.as_deref(), Some("zklock-background"));
    }

    #[tokio::test(flavor = "current_thread")]
    async fn inside_a_runtime_the_task_runs_on_that_runtime() {
        let (sent, received) = tokio::sync::oneshot::channel();
        assert!(spawn(async move {
            sent.send(std::thread::current().name().map(str::to_owned)).unwrap();
        }));
        let ran_on = received.await.unwrap();
        assert_ne!(ran_on.as_deref(), Some("zklock-background"));
    }
}
