//! Retrying through connection loss while the session lives.
//!
//! zookeeper-client re-sends watches after a reconnect but fails requests that were in flight
//! with the error that broke the connection: `ConnectionLoss` for a closed connection, a custom
//! error for an I/O failure or a read timeout ("no response from connection in ..."). Either way
//! the request's outcome is unknown. A request made while disconnected waits in the client until it
//! reconnects, or fails with `SessionExpired` once the client gives the session up, so retrying
//! cannot spin and cannot outlive the session.

use std::future::Future;
use std::time::Duration;

use zookeeper_client::{Client, Error as ZkError, SessionState};

use crate::Error;

/// Calls `operation` again after each connection loss (see [`is_connection_loss`]); returns any
/// other outcome.
pub(crate) async fn retry_on_connection_loss<T, F, Fut>(mut operation: F) -> Result<T, ZkError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, ZkError>>,
{
    let mut losses: u64 = 0;
    loop {
        match operation().await {
            Err(err) if is_connection_loss(&err) => {
                losses += 1;
                // Spaces out retries if the connection flaps faster than the client notices.
                tokio::time::sleep(Duration::from_millis((5 * losses).min(100))).await;
            }
            outcome => return outcome,
        }
    }
}

/// Whether a request failed because its connection broke (its outcome is unknown), rather than
/// by the server's answer.
pub(crate) fn is_connection_loss(err: &ZkError) -> bool {
    matches!(err, ZkError::ConnectionLoss | ZkError::Custom(_))
}

/// The error for a session that has ended, read from the client's state without a request.
pub(crate) fn ended_session(client: &Client) -> Option<Error> {
    match client.state() {
        SessionState::Expired => Some(Error::SessionExpired),
        SessionState::Closed | SessionState::AuthFailed => Some(Error::SessionClosed),
        SessionState::Disconnected | SessionState::SyncConnected | SessionState::ConnectedReadOnly => None,
    }
}
