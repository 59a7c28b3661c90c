//! What a command runs under: a lock guard, a semaphore lease, or a term of leadership. What each
//! tells of its node is zklock's [`Hold`]; what differs is how it is let go of (a term by leaving
//! the election).

use std::time::Duration;

use tracing::info;
use zklock::election::Leadership;
use zklock::hold::Hold;
use zklock::{LeaderLatch, Lease, LockGuard, LossReason};
use zookeeper_client::{Client, SessionState};

pub enum Held {
    Lock(LockGuard),
    Lease(Lease),
    /// The latch is kept to leave the election when the command ends.
    Leader {
        latch: LeaderLatch,
        leadership: Leadership,
    },
}

impl Held {
    /// What is lost when `lost()` resolves, for messages.
    pub fn what(&self) -> &'static str {
        match self {
            Held::Lock(_) | Held::Lease(_) => "lock",
            Held::Leader { .. } => "leadership",
        }
    }

    /// "lock lost (why)", for messages: a disconnection's length as a person reads it, on a
    /// session of `session_timeout`.
    pub fn lost(&self, reason: LossReason, session_timeout: Duration) -> String {
        lost(self.what(), reason, session_timeout)
    }

    /// The hold itself: what every kind of hold tells (its node, token, loss, revocation) is
    /// said once, by [`Hold`].
    pub fn hold(&self) -> &dyn Hold {
        match self {
            Held::Lock(guard) => guard,
            Held::Lease(lease) => lease,
            Held::Leader { leadership, .. } => leadership,
        }
    }

    /// Writes `data` back into our node after a revocation request overwrote it, so that
    /// `zklock list` shows who holds rather than the request. Best effort: the request has
    /// been heard either way.
    pub async fn restore_data(&self, client: &Client, data: &str) {
        if let Err(err) = client.set_data(self.hold().node_path(), data.as_bytes(), None).await {
            info!("could not restore the data of {}: {err}", self.hold().node_path());
        }
    }

    /// Releases (or leaves the election), saying so with -v, and complaining (without failing)
    /// if the delete failed. Out of reach of ZooKeeper, it does not wait for a server it cannot
    /// reach: the node goes when the session expires, which nothing can make sooner.
    pub async fn release(self, client: &Client) {
        if !matches!(client.state(), SessionState::SyncConnected | SessionState::ConnectedReadOnly) {
            info!("ZooKeeper is out of reach: {} goes when the session expires", self.hold().node_path());
            return;
        }
        let (node, what) = (self.hold().node_path().to_owned(), self.what());
        let released = match self {
            Held::Lock(guard) => guard.release().await,
            Held::Lease(lease) => lease.release().await,
            // Lost (already said): the latch may have joined again, and leaving would wait for a
            // server that may be out of reach. Dropped, it leaves in the background, and the end
            // of our session takes its node in any case.
            Held::Leader { leadership, .. } if !leadership.is_held() => return,
            Held::Leader { latch, .. } => latch.close().await,
        };
        match released {
            Ok(()) => info!("released {node}"),
            // Already said: the loss is the outcome.
            Err(zklock::Error::LockLost(_)) => {}
            Err(err) => crate::output::stderr::warn(&format!("releasing the {what}: {}", err.with_causes())),
        }
    }
}

/// "`what` lost (why)", for messages: a disconnection's length as a person reads it, on a
/// session of `session_timeout`. The length is counted from when the client found the
/// connection gone: at once for a closed one, but only after 2/5 of the session timeout of
/// silence for one that went quiet (zookeeper-client's connection timeout), which is said too,
/// as an operator counts from the last answer.
pub fn lost(what: &str, reason: LossReason, session_timeout: Duration) -> String {
    match reason {
        LossReason::Disconnected { after } => format!(
            "{what} lost (cut off from ZooKeeper for {} since the connection was found gone, after up to {} without an answer)",
            crate::output::duration::human(after),
            crate::output::duration::human(session_timeout * 2 / 5)
        ),
        LossReason::MaxHoldTime { bound } => {
            format!("{what} held for its maximum time ({}), given up", crate::output::duration::human(bound))
        }
        reason => format!("{what} lost ({reason})"),
    }
}
