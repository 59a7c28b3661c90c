//! The guard of one semaphore lease.

use std::fmt;

use crate::error::Result;
use crate::hold::held_node::HeldNode;
use crate::hold::Hold;

/// One lease of an [`InterProcessSemaphoreV2`](crate::InterProcessSemaphoreV2) (or the hold of
/// an [`InterProcessSemaphoreMutex`](crate::InterProcessSemaphoreMutex)); returns the lease when
/// dropped or [released](Lease::release).
///
/// Like [`LockGuard`](crate::LockGuard): `Send + 'static`, and what every [`Hold`] tells: a
/// fencing token, a loss signal (`is_held`, `lost`), fenced writes, revocation. Dropping it
/// deletes the lease node in the background, on any thread (as a guard's drop); the node is
/// ephemeral and never outlives the session. Unlike a guard it belongs to no task: any task may
/// release it.
///
/// # Examples
///
/// ```no_run
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use zklock::hold::Hold;
///
/// let client = zklock::Client::connect("127.0.0.1:2181").await?;
/// let exports = zklock::InterProcessSemaphoreV2::new(&client, "/app/semaphores/exports", 3)?;
/// let lease = exports.acquire().await?;
/// let worker = tokio::spawn(async move {
///     tokio::select! {
///         () = lease.revocation_requested() => {} // someone asked for it back: finish early
///         () = tokio::time::sleep(std::time::Duration::from_secs(60)) => {}
///     }
///     lease.release().await
/// });
/// worker.await??;
/// # Ok(())
/// # }
/// ```
#[must_use = "the lease is returned as soon as it is dropped"]
pub struct Lease {
    node: HeldNode,
    released: bool,
}

impl Lease {
    pub(crate) fn new(node: HeldNode) -> Self {
        Lease { node, released: false }
    }

    /// Returns the lease: deletes its node and waits for ZooKeeper to confirm.
    ///
    /// # Errors
    /// - [`Error::LockLost`](crate::Error::LockLost): the lease was lost, before this release
    ///   (the node, if it still exists, is deleted in the background) or as it found: the node
    ///   already gone (`NodeDeleted`), the session ended and the node with it
    ///   (`SessionExpired`, `SessionClosed`). As [`LockGuard::release`](crate::LockGuard::release);
    /// - [`Error::ZooKeeper`](crate::Error::ZooKeeper): the delete was refused.
    ///
    /// # Cancel safety
    /// Cancel safe: the delete is sent on the first poll, and if this future is dropped before
    /// ZooKeeper answers, a spawned task sees it through.
    pub async fn release(mut self) -> Result<()> {
        self.released = true;
        self.node.mark_released();
        self.node.delete(self.node.loss()).await
    }
}

impl fmt::Debug for Lease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lease")
            .field("node_path", &self.node_path())
            .field("fencing_token", &self.fencing_token())
            .finish()
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if !self.released {
            self.node.release_in_background();
        }
    }
}

impl super::hold_trait::sealed::Sealed for Lease {
    fn held_node(&self) -> &HeldNode {
        &self.node
    }
}
