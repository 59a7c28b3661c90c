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
use std::sync::OnceLock;

use tokio::runtime::{Builder, Handle};

/// Runs `task` on the current tokio runtime, or on zklock's own outside one. Returns `false`
/// only when neither can be had (zklock's thread could not be started), after logging it.
pub(crate) fn spawn<F>(task: F) -> bool
where
    F: Future<Output = ()> + Send + 'static,
{
    let runtime = match Handle::try_current() {
        Ok(current) => current,
        Err(_) => match own_runtime() {
            Some(own) => own.clone(),
            None => return false,
        },
    };
    drop(runtime.spawn(task));
    true
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
