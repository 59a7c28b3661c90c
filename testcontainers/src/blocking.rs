//! Blocking work and async callers, both ways: the harness's probes, forks and `keytool` runs are
//! blocking calls, run on tokio's blocking threads so that an async test's runtime goes on with
//! its other tasks; and a start from sync code (a `static`) runs the async start on a runtime of
//! its own.

use std::future::Future;

use crate::HarnessError;

/// Runs blocking `work` on tokio's blocking threads and waits for it without blocking the
/// caller's runtime; a panic in `work` goes on in the caller.
///
/// Dropped before `work` is done, `work` still runs to its end, and what it returns is dropped
/// there (a server process it started is killed).
pub(crate) async fn off_runtime<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> T {
    match tokio::task::spawn_blocking(work).await {
        Ok(value) => value,
        Err(error) => match error.try_into_panic() {
            Ok(panic) => std::panic::resume_unwind(panic),
            Err(error) => panic!("the harness's blocking work did not finish: {error}"),
        },
    }
}

/// Runs `future` on a current-thread runtime of its own, on a thread of its own, and blocks until
/// it is done: callable from any thread, inside a runtime or not.
pub(crate) fn block_on<T: Send>(future: impl Future<Output = Result<T, HarnessError>> + Send) -> Result<T, HarnessError> {
    std::thread::scope(|scope| {
        let thread = scope.spawn(|| {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_time()
                .build()
                .map_err(HarnessError::io("start a runtime for the blocking start"))?;
            runtime.block_on(future)
        });
        thread.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}
