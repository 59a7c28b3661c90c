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
//! outlive the session; retries back off up to 100 ms apart, with full jitter, so that the
//! participants of a lock that an ensemble's outage failed all at once do not come back in step.

use std::future::Future;
use std::time::Duration;

use zookeeper_client::Error as ZkError;

/// Calls `operation` again after each transient failure (see [`is_transient`]); returns any
/// other outcome.
pub(crate) async fn retry_transient<T, F, Fut>(mut operation: F) -> Result<T, ZkError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, ZkError>>,
{
    let mut failures: u32 = 0;
    loop {
        match operation().await {
            Err(err) if is_transient(&err) => {
                failures += 1;
                back_off(failures).await;
            }
            outcome => return outcome,
        }
    }
}

/// The most a retry waits: a throttling server needs room, and the participants that one outage
/// failed together must spread out, but a request that failed for a moment must not wait long.
const BACK_OFF_CAP: Duration = Duration::from_millis(100);

/// Waits before the `failures`-th retry: a random time up to a cap that grows 5 ms a failure up
/// to [`BACK_OFF_CAP`] ("full jitter").
pub(crate) async fn back_off(failures: u32) {
    tokio::time::sleep(jittered(failures, fastrand::f64())).await;
}

/// The wait before the `failures`-th retry for a `random` draw in `[0, 1)`.
fn jittered(failures: u32, random: f64) -> Duration {
    let cap = Duration::from_millis(5 * u64::from(failures.max(1))).min(BACK_OFF_CAP);
    cap.mul_f64(random.clamp(0.0, 1.0))
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
    fn back_off_is_a_random_share_of_a_cap_that_grows_to_100_ms() {
        assert_eq!(jittered(1, 0.0), Duration::ZERO);
        assert_eq!(jittered(1, 0.5), Duration::from_micros(2500));
        assert_eq!(jittered(4, 0.5), Duration::from_millis(10));
        assert_eq!(jittered(1_000, 0.999_999), BACK_OFF_CAP.mul_f64(0.999_999));
        assert!((0..100).all(|failures| jittered(failures, 1.0) <= BACK_OFF_CAP));
    }

    #[test]
    fn throttled_and_lost_requests_are_transient_and_only_lost_ones_may_have_run() {
        assert!(is_transient(&ZkError::Throttled) && !is_connection_loss(&ZkError::Throttled));
        assert!(is_transient(&ZkError::ConnectionLoss) && is_connection_loss(&ZkError::ConnectionLoss));
        for answer in [ZkError::NoNode, ZkError::NoAuth, ZkError::SessionExpired, ZkError::NodeExists] {
            assert!(!is_transient(&answer), "{answer:?}");
        }
    }
}
