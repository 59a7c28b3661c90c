//! The guard of one semaphore lease.

use std::fmt;
use std::sync::Arc;

use zookeeper_client::Client;

use crate::internals::hold_signal::HoldSignal;
use crate::internals::node::{delete_in_background, delete_released, LockNode};
use crate::internals::node_watch::watch_node;
use crate::internals::session_end::ended_session;
use crate::internals::session_watch::SessionWatch;
use crate::{Error, LossReason, Result};

/// One lease of an [`InterProcessSemaphoreV2`](crate::InterProcessSemaphoreV2) (or the hold of
/// an [`InterProcessSemaphoreMutex`](crate::InterProcessSemaphoreMutex)); returns the lease when
/// dropped or [released](Lease::release).
///
/// Like [`LockGuard`](crate::LockGuard): `Send + 'static`, a fencing token, and a loss signal
/// (`is_held`, `lost`). Dropping it deletes the lease node in the background on the current
/// tokio runtime; the node is ephemeral and never outlives the session.
#[must_use = "the lease is returned as soon as it is dropped"]
pub struct Lease {
    client: Client,
    node_path: Arc<str>,
    fencing_token: i64,
    signal: Arc<HoldSignal>,
    released: bool,
}

impl Lease {
    pub(crate) fn new(client: &Client, node: LockNode, session_watch: &Arc<SessionWatch>) -> Self {
        let lease = Lease {
            client: client.clone(),
            node_path: node.path.into(),
            fencing_token: node.czxid,
            signal: HoldSignal::new(),
            released: false,
        };
        session_watch.register(&lease.signal, &lease.node_path);
        lease
    }

    /// Returns the lease: deletes its node and waits for ZooKeeper to confirm.
    ///
    /// # Errors
    /// - [`Error::LockLost`]: the lease had been lost (the node, if it still exists, is deleted
    ///   in the background);
    /// - [`Error::LockNodeDeleted`]: the node was already gone;
    /// - [`Error::SessionExpired`] / [`Error::SessionClosed`]: the session ended, and the node
    ///   with it;
    /// - [`Error::ZooKeeper`]: the delete was refused.
    ///
    /// # Cancel safety
    /// Cancel safe: the delete is sent on the first poll, and if this future is dropped before
    /// ZooKeeper answers, a spawned task sees it through.
    pub async fn release(mut self) -> Result<()> {
        self.released = true;
        self.signal.mark_released();
        if let Some(reason) = self.signal.reason() {
            delete_in_background(&self.client, Arc::clone(&self.node_path));
            return Err(Error::LockLost(reason));
        }
        delete_released(&self.client, &self.node_path).await
    }

    /// Resolves when someone asks for the lease back; see
    /// [`LockGuard::revocation_requested`](crate::LockGuard::revocation_requested).
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn revocation_requested(&self) {
        watch_node(&self.client, &self.node_path, &self.signal);
        self.signal.revocation_requested().await
    }

    /// The full path of the lease node.
    pub fn node_path(&self) -> &str {
        &self.node_path
    }

    /// The czxid of the lease node; see [`LockGuard::fencing_token`](crate::LockGuard::fencing_token).
    /// With several leases, each holder has its own token; a resource can refuse tokens older
    /// than the oldest lease it still honours.
    pub fn fencing_token(&self) -> i64 {
        self.fencing_token
    }

    /// Whether the lease is still held, as far as this process knows; see
    /// [`LockGuard::is_held`](crate::LockGuard::is_held). Never sends a request.
    pub fn is_held(&self) -> bool {
        self.signal.reason().is_none() && ended_session(&self.client).is_none()
    }

    /// Resolves when the lease is lost; see [`LockGuard::lost`](crate::LockGuard::lost).
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn lost(&self) -> LossReason {
        watch_node(&self.client, &self.node_path, &self.signal);
        self.signal.lost().await
    }
}

impl fmt::Debug for Lease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lease").field("node_path", &self.node_path).field("fencing_token", &self.fencing_token).finish()
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if !self.released {
            self.signal.mark_released();
            delete_in_background(&self.client, Arc::clone(&self.node_path));
        }
    }
}
