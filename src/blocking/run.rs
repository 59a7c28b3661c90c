//! Running an async call to its end from a thread that is not a runtime's.
//!
//! It runs on zklock's own runtime, polled on the calling thread (so that reentrancy counts per
//! thread, as Curator's does), its I/O and timers driven by the runtime's thread.

use std::future::Future;

use tokio::runtime::Handle;
use zookeeper_client::Client;

use crate::client::background;
use crate::client::session::Session;
use crate::error::{Error, Result};

/// Runs `future` to its end, blocking the calling thread: how every call of
/// [`zklock::blocking`](crate::blocking) runs, and the way to make any other async call of
/// zklock or of the client (a connector with its own options, say) from synchronous code.
///
/// A client made here (by [`connect`], or by a `Client::connector()…connect(…)` passed in)
/// runs on zklock's runtime thread, so it works with nothing else running.
///
/// # Errors
/// [`Error::CannotBlock`] on a thread of a tokio runtime (a task, a `block_on`, a
/// `spawn_blocking`): blocking there would stall that runtime, or deadlock it if the call needs
/// it. Nothing is run then.
///
/// # Examples
///
/// ```no_run
/// let client = zklock::blocking::run(
///     zklock::Client::connector()
///         .with_session_timeout(std::time::Duration::from_secs(10))
///         .connect("127.0.0.1:2181"),
/// )??;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn run<F: Future>(future: F) -> Result<F::Output> {
    if Handle::try_current().is_ok() {
        return Err(Error::CannotBlock(
            "zklock::blocking was called on a thread of a tokio runtime, where blocking stalls the runtime: use zklock's async API there",
        ));
    }
    let Some(runtime) = background::own_runtime() else {
        return Err(Error::CannotBlock("zklock's runtime thread could not be started"));
    };
    // Polled here, on the caller's thread: the runtime's own thread drives its I/O and timers.
    Ok(runtime.block_on(future))
}

/// [`run`] for at most `timeout`: `Ok(None)` when `future` has not finished by then (it is
/// dropped). What every blocking `*_timeout` wait is.
pub(crate) fn run_for<F: Future>(timeout: std::time::Duration, future: F) -> Result<Option<F::Output>> {
    run(async { tokio::time::timeout(timeout, future).await.ok() })
}

/// Connects a client to `connect_string` (a comma-separated list of `host:port`), on zklock's
/// runtime thread: the blocking `Client::connect`.
///
/// # Errors
/// [`Error::ZooKeeper`] (operation `connect`) when it fails; [`Error::CannotBlock`] as [`run`].
pub fn connect(connect_string: &str) -> Result<Client> {
    run(Client::connect(connect_string))?.map_err(|err| Error::zookeeper("connect", connect_string, err))
}

/// Connects a [`Session`] (a new client after each expiry) to `connect_string`: the blocking
/// [`Session::connect_to`]. Its recipes ride over an expiry as the async ones do.
///
/// # Errors
/// As [`Session::connect_to`]; [`Error::CannotBlock`] as [`run`].
pub fn connect_session(connect_string: &str) -> Result<Session> {
    run(Session::connect_to(connect_string))?
}
