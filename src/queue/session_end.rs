//! How a session ends, read from the client's state, a watch event or an error: the one place
//! that maps each of them to the crate's `Error` and `LossReason`.

use zookeeper_client::{Client, Error as ZkError, SessionState};

use crate::{Error, LossReason};

/// A session that can never be used again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SessionEnd {
    /// The server expired it: its ephemeral nodes are gone.
    Expired,
    /// The client was closed, or failed to authenticate.
    Closed,
}

impl SessionEnd {
    /// The end a client state (or a watch's session event) stands for; `None` while the session
    /// may still be used (connected, or disconnected and reconnecting).
    pub(crate) fn of_state(state: SessionState) -> Option<SessionEnd> {
        match state {
            SessionState::Expired => Some(SessionEnd::Expired),
            SessionState::Closed | SessionState::AuthFailed => Some(SessionEnd::Closed),
            SessionState::Disconnected | SessionState::SyncConnected | SessionState::ConnectedReadOnly => None,
        }
    }

    /// The end a request's error stands for, if it says the session is over.
    pub(crate) fn of_error(err: &ZkError) -> Option<SessionEnd> {
        match err {
            ZkError::SessionExpired => Some(SessionEnd::Expired),
            ZkError::ClientClosed | ZkError::AuthFailed => Some(SessionEnd::Closed),
            _ => None,
        }
    }

    pub(crate) fn error(self) -> Error {
        match self {
            SessionEnd::Expired => Error::SessionExpired,
            SessionEnd::Closed => Error::SessionClosed,
        }
    }

    pub(crate) fn loss(self) -> LossReason {
        match self {
            SessionEnd::Expired => LossReason::SessionExpired,
            SessionEnd::Closed => LossReason::SessionClosed,
        }
    }
}

/// The error for a session that has ended, read from the client's state without a request.
pub(crate) fn ended_session(client: &Client) -> Option<Error> {
    SessionEnd::of_state(client.state()).map(SessionEnd::error)
}

/// Resolves with the error for the session's end once `client`'s session has ended (at once if
/// it has); pending while it lives.
pub(crate) async fn session_ended(client: &Client) -> Error {
    let mut states = client.state_watcher();
    loop {
        if let Some(end) = SessionEnd::of_state(states.state()) {
            return end.error();
        }
        states.changed().await;
    }
}

impl Error {
    /// Wraps a client error, turning the terminal session errors into their own variants.
    pub(crate) fn zookeeper(operation: &'static str, path: &str, source: zookeeper_client::Error) -> Self {
        match SessionEnd::of_error(&source) {
            Some(end) => end.error(),
            None => Error::ZooKeeper { operation, path: path.to_owned(), source },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_events_and_errors_agree_on_how_a_session_ended() {
        let ends = [
            (SessionState::Expired, ZkError::SessionExpired, SessionEnd::Expired),
            (SessionState::Closed, ZkError::ClientClosed, SessionEnd::Closed),
            (SessionState::AuthFailed, ZkError::AuthFailed, SessionEnd::Closed),
        ];
        for (state, error, end) in ends {
            assert_eq!(SessionEnd::of_state(state), Some(end));
            assert_eq!(SessionEnd::of_error(&error), Some(end));
        }
        for live in [SessionState::Disconnected, SessionState::SyncConnected, SessionState::ConnectedReadOnly] {
            assert_eq!(SessionEnd::of_state(live), None);
        }
        assert_eq!(SessionEnd::of_error(&ZkError::ConnectionLoss), None);
        assert!(matches!(SessionEnd::Expired.error(), Error::SessionExpired));
        assert_eq!(SessionEnd::Closed.loss(), LossReason::SessionClosed);
    }
}
