//! How a session ends, and what each end means as an `Error` or a `LossReason`.
//!
//! Read from the client's state, a watch event or an error: the one place that maps each of them to
//! the crate's `Error` and `LossReason`, and so the home of `Error::zookeeper`, the one way a
//! client error becomes ours.

use std::time::Duration;

use zookeeper_client::{Client, Error as ZkError, SessionState, StateWatcher};

use crate::error::{Error, LossReason};

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

/// Whether requests sent in `state` go out now (a try waits for nothing else).
pub(crate) fn is_connected(state: SessionState) -> bool {
    matches!(state, SessionState::SyncConnected | SessionState::ConnectedReadOnly)
}

/// The error for a session that has ended, checked now from the client's state, without a
/// request; `None` while the session may still be used.
pub(crate) fn check_session_ended(client: &Client) -> Option<Error> {
    SessionEnd::of_state(client.state()).map(SessionEnd::error)
}

/// Waits until `client`'s session has ended (at once if it has), and returns its error.
pub(crate) async fn wait_session_ended(client: &Client) -> Error {
    let mut states = client.state_watcher();
    loop {
        if let SessionGone::Ended(end) = wait_session_gone(&mut states, None).await {
            return end.error();
        }
    }
}

/// Why a session watched by [`wait_session_gone`] can no longer be counted on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SessionGone {
    /// It ended.
    Ended(SessionEnd),
    /// It has been disconnected for this long, the bound it was watched with: the server may
    /// have expired it.
    Silent(Duration),
}

/// The one loop that follows a session's state: waits, from the state `states` has now, until
/// the session ends or, given `silence`, has been disconnected for `silence` (counted from the
/// disconnection, or from the call if later). Sends nothing.
pub(crate) async fn wait_session_gone(states: &mut StateWatcher, silence: Option<Duration>) -> SessionGone {
    let mut state = states.peek_state();
    loop {
        if let Some(end) = SessionEnd::of_state(state) {
            return SessionGone::Ended(end);
        }
        state = match silence {
            Some(silence) if state == SessionState::Disconnected => tokio::select! {
                next = states.changed() => next,
                () = tokio::time::sleep(silence) => return SessionGone::Silent(silence),
            },
            _ => states.changed().await,
        };
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

    /// A closure for `map_err` that wraps a client error with its context.
    pub(crate) fn on<'a>(operation: &'static str, path: &'a str) -> impl FnOnce(zookeeper_client::Error) -> Self + 'a {
        move |source| Error::zookeeper(operation, path, source)
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

    #[test]
    fn terminal_session_errors_get_their_own_variants() {
        use zookeeper_client::Error as Zk;
        assert!(matches!(Error::zookeeper("create", "/a", Zk::SessionExpired), Error::SessionExpired));
        assert!(matches!(Error::zookeeper("create", "/a", Zk::ClientClosed), Error::SessionClosed));
        let other = Error::zookeeper("create", "/a", Zk::NoAuth);
        assert_eq!(other.to_string(), "zookeeper create /a failed: not authorized");
        assert!(std::error::Error::source(&other).is_some(), "the client error is kept as the source");
    }
}
