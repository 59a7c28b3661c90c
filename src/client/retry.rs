//! Retrying what is transient while the session lives.
//!
//! Two kinds of failure are worth another try:
//! - Connection loss. zookeeper-client re-sends watches after a reconnect but fails requests that
//!   were in flight with the error that broke the connection: `ConnectionLoss` for a closed
//!   connection, a custom error for an I/O failure or a read timeout ("no response from
//!   connection in ..."). Either way the request's outcome is unknown.
//! - `Throttled` (ZooKeeper 3.6+ with request throttling on): the server refused the request
//!   without running it, so its outcome is known: nothing happened.
//!
//! A request made while disconnected waits in the client until it reconnects, or fails with
//! `SessionExpired` once the client gives the session up, so retrying cannot spin and cannot
//! outlive the session. How long each retry waits, and when a request gives up, is the
//! session's [`RetryPolicy`] (`retry_policy.rs`).

use std::future::Future;

use zookeeper_client::Error as ZkError;

use super::retry_policy::{Retries, RetryPolicy};

/// Calls `operation` again after each transient failure (see [`is_transient`]), pausing as
/// `policy` says; returns any other outcome, or the last transient failure once the policy's
/// bound is spent (pass [`RetryPolicy::without_bound`] for what must never give up).
pub(crate) async fn retry_transient<T, F, Fut>(policy: RetryPolicy, mut operation: F) -> Result<T, ZkError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, ZkError>>,
{
    let mut retries = Retries::new(policy);
    loop {
        match operation().await {
            Err(err) if is_transient(&err) && retries.pause().await => {}
            outcome => return outcome,
        }
    }
}

/// Whether a request failed in a way that another try may cure: its connection broke, or the
/// server refused it unrun (`Throttled`).
pub(crate) fn is_transient(err: &ZkError) -> bool {
    is_connection_loss(err) || *err == ZkError::Throttled
}

/// Whether a request failed because its connection broke, so that its outcome is unknown (it
/// may have run), rather than by the server's answer.
pub(crate) fn is_connection_loss(err: &ZkError) -> bool {
    matches!(err, ZkError::ConnectionLoss | ZkError::Custom(_))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn throttled_and_lost_requests_are_transient_and_only_lost_ones_may_have_run() {
        assert!(is_transient(&ZkError::Throttled) && !is_connection_loss(&ZkError::Throttled));
        assert!(is_transient(&ZkError::ConnectionLoss) && is_connection_loss(&ZkError::ConnectionLoss));
        for answer in [ZkError::NoNode, ZkError::NoAuth, ZkError::SessionExpired, ZkError::NodeExists] {
            assert!(!is_transient(&answer), "{answer:?}");
        }
    }
}
