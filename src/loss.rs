//! How a held lock can be lost, and when a disconnection counts as a loss.

use std::fmt;
use std::time::Duration;

/// Why a lock is no longer held (see [`LockGuard::lost`](crate::LockGuard::lost)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LossReason {
    /// The ZooKeeper session expired: the server deleted the lock node, and another participant
    /// may hold the lock now.
    SessionExpired,
    /// The ZooKeeper client was closed (or failed to authenticate).
    SessionClosed,
    /// Someone else deleted our node (an operator, a revoker, a deleted lock path): the lock
    /// node, the lease node, or the leader's node.
    NodeDeleted,
    /// The client was disconnected for `after`, long enough that the server may have expired
    /// the session (see [`LossPolicy`]). The lock may in fact survive if the client reconnects in
    /// time, but it can no longer be relied on.
    Disconnected {
        /// How long the client had been disconnected when the lock was given up.
        after: Duration,
    },
}

impl fmt::Display for LossReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LossReason::SessionExpired => f.write_str("the zookeeper session expired"),
            LossReason::SessionClosed => f.write_str("the zookeeper client was closed"),
            LossReason::NodeDeleted => f.write_str("our node was deleted by someone else"),
            LossReason::Disconnected { after } => {
                write!(f, "disconnected from zookeeper for {after:?}")
            }
        }
    }
}

/// When a disconnection from ZooKeeper counts as losing the lock.
///
/// A held lock really ends only when the server expires the session. While disconnected, a
/// client cannot know whether that has happened yet; these policies decide when it stops
/// trusting the lock.
///
/// # Examples
///
/// ```no_run
/// use zklock::{InterProcessMutex, LossPolicy};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let client = zklock::zookeeper_client::Client::connect("127.0.0.1:2181").await?;
/// // Stop at the first disconnection, as Curator users do on SUSPENDED.
/// let mutex = InterProcessMutex::builder(&client, "/app/locks/payments")
///     .loss_policy(LossPolicy::AnyDisconnection)
///     .build()?;
/// let guard = mutex.acquire().await?;
/// println!("lost: {}", guard.lost().await);
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LossPolicy {
    /// The lock is assumed lost once the client has been disconnected for a third of the
    /// negotiated session timeout. The default.
    ///
    /// Why a third: zookeeper-client notices a silent connection after at most 3/5 of the session
    /// timeout without a reply (2/5 unless a connection timeout is configured), and the server
    /// cannot expire the session before a full session timeout after the last request it
    /// received, which came before that reply. So the server expires the session at the earliest
    /// 2/5 of the session timeout after the client notices; giving up at 1/3 leaves a margin
    /// for scheduling delays. Short disconnections (a server restart, a leader election, a
    /// reconnect to another server) keep the lock.
    #[default]
    SessionTimeout,
    /// Any disconnection loses the lock at once, as Curator's `SUSPENDED` state is usually
    /// handled. Choose it when the critical section must stop the moment the holder cannot
    /// prove it still holds (at the price of losing the lock on every short network blip or
    /// server restart).
    AnyDisconnection,
}

impl LossPolicy {
    /// How long a disconnection may last before the lock is assumed lost.
    pub fn grace(self, session_timeout: Duration) -> Duration {
        match self {
            LossPolicy::SessionTimeout => session_timeout / 3,
            LossPolicy::AnyDisconnection => Duration::ZERO,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grace_is_a_third_of_the_session_or_nothing() {
        let session = Duration::from_secs(9);
        assert_eq!(LossPolicy::default().grace(session), Duration::from_secs(3));
        assert_eq!(LossPolicy::AnyDisconnection.grace(session), Duration::ZERO);
    }

    #[test]
    fn reasons_read_well() {
        assert_eq!(LossReason::NodeDeleted.to_string(), "our node was deleted by someone else");
        assert_eq!(
            LossReason::Disconnected { after: Duration::from_secs(2) }.to_string(),
            "disconnected from zookeeper for 2s"
        );
    }
}
