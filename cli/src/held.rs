//! What a command runs under: a lock guard, a semaphore lease, or a term of leadership. Each has
//! a node, a fencing token and a loss signal, and is let go of the same way.

use tracing::info;
use zklock::{LeaderLatch, Leadership, Lease, LockGuard, LossReason};
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

    pub fn node_path(&self) -> &str {
        match self {
            Held::Lock(guard) => guard.node_path(),
            Held::Lease(lease) => lease.node_path(),
            Held::Leader { leadership, .. } => leadership.node_path(),
        }
    }

    /// The lock node's czxid, or the leadership's epoch (its node's czxid).
    pub fn fencing_token(&self) -> i64 {
        match self {
            Held::Lock(guard) => guard.fencing_token(),
            Held::Lease(lease) => lease.fencing_token(),
            Held::Leader { leadership, .. } => leadership.epoch(),
        }
    }

    pub async fn lost(&self) -> LossReason {
        match self {
            Held::Lock(guard) => guard.lost().await,
            Held::Lease(lease) => lease.lost().await,
            // Only `release` gives the term up, after the command: a loss is the one end here.
            Held::Leader { leadership, .. } => match leadership.lost().await.loss() {
                Some(reason) => reason,
                None => std::future::pending().await,
            },
        }
    }

    /// Resolves when someone asks the holder to let go; never for leadership, which cannot be
    /// revoked.
    pub async fn revocation_requested(&self) {
        match self {
            Held::Lock(guard) => guard.revocation_requested().await,
            Held::Lease(lease) => lease.revocation_requested().await,
            Held::Leader { .. } => std::future::pending().await,
        }
    }

    /// Writes `data` back into our node after a revocation request overwrote it, so that
    /// `zklock list` shows who holds rather than the request. Best effort: the request has
    /// been heard either way.
    pub async fn restore_data(&self, client: &Client, data: &str) {
        if let Err(err) = client.set_data(self.node_path(), data.as_bytes(), None).await {
            info!("could not restore the data of {}: {err}", self.node_path());
        }
    }

    /// Releases (or leaves the election), saying so with -v, and complaining (without failing)
    /// if the delete failed. Out of reach of ZooKeeper, it does not wait for a server it cannot
    /// reach: the node goes when the session expires, which nothing can make sooner.
    pub async fn release(self, client: &Client) {
        if !matches!(client.state(), SessionState::SyncConnected | SessionState::ConnectedReadOnly) {
            info!("ZooKeeper is out of reach: {} goes when the session expires", self.node_path());
            return;
        }
        let (node, what) = (self.node_path().to_owned(), self.what());
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
            Err(err) => crate::output::warn(&format!("releasing the {what}: {}", crate::exit::with_causes(&err))),
        }
    }
}
