//! How long an acquire may wait.

use std::future::Future;
use std::time::{Duration, Instant};

/// How long an acquire is willing to wait for other holders.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Patience {
    /// Until the lock is ours (or an error).
    Forever,
    /// Until this instant; everything, the create included, must be done by then.
    Until(Instant),
    /// Not at all: take the lock if it is free once our node is in the queue, else give up.
    NoWait,
}

impl Patience {
    pub(crate) fn deadline(self) -> Option<Instant> {
        match self {
            Patience::Until(deadline) => Some(deadline),
            Patience::Forever | Patience::NoWait => None,
        }
    }
}

/// Runs `future` to completion, or until `deadline` (`None` when it passes first).
pub(crate) async fn within<F: Future>(deadline: Option<Instant>, future: F) -> Option<F::Output> {
    match deadline {
        None => Some(future.await),
        Some(deadline) => tokio::time::timeout_at(deadline.into(), future).await.ok(),
    }
}

/// How long a timed-out acquire may still spend deleting its node before it returns; past that
/// (ZooKeeper unreachable) the deletion goes on in the background.
pub(crate) const CLEANUP_AFTER_DEADLINE: Duration = Duration::from_millis(500);
