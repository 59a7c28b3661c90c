//! A lease in a counting semaphore, as Curator's `InterProcessSemaphoreV2` takes it: while the
//! semaphore's mutex is held, create a lease node and wait until the leases directory holds at
//! most `max_leases` children.

use zookeeper_client::Error as ZkError;

use super::deadline::{within, Patience};
use super::node::{create_node, FirstLook, LockNode, NodeCleanup};
use super::queue::{queues_again, QueueSpec};
use super::retry::retry_transient;
use super::session_end::SessionEnd;
use crate::{Error, Result};

/// Creates a lease node in `spec.lock_path` and waits until at most `max_leases` children are
/// there (ours among them). `Ok(None)` when `deadline` passes first; the node is deleted before
/// that returns, and before an error returns. A node deleted by someone else while we wait is
/// replaced by a new one (we queue again) while the session lives.
///
/// Curator counts every child of the leases directory, and so does this: counting a foreign child
/// can only make us wait, never hold a lease too many.
///
/// # Cancel safety
/// Dropping the future leaves no node behind (the cleanup is armed before the create).
pub(crate) async fn take_lease(
    spec: &QueueSpec<'_>,
    max_leases: usize,
    patience: Patience,
) -> Result<Option<LockNode>> {
    let deadline = patience.deadline();
    loop {
        let prefix = spec.schema.protected_prefix(&uuid::Uuid::new_v4());
        let mut cleanup = NodeCleanup::new(spec.client, spec.lock_path, &prefix);
        let outcome = match within(deadline, create_node(spec, &prefix, &mut cleanup)).await {
            Some(Ok((node, first, _))) => {
                let waits = patience != Patience::NoWait;
                match within(deadline, wait_for_room(spec, &node, first, max_leases, waits)).await {
                    Some(Ok(true)) => Ok(Some(node)),
                    Some(Ok(false)) | None => Ok(None),
                    Some(Err(err)) => Err(err),
                }
            }
            None => Ok(None),
            Some(Err(err)) => Err(err),
        };
        if !queues_again(&outcome, spec.client) {
            return cleanup.settle(outcome, deadline).await;
        }
    }
}

/// Waits until the directory has room for our lease: `Ok(false)` when it is full and `waits`
/// is false.
async fn wait_for_room(
    spec: &QueueSpec<'_>,
    node: &LockNode,
    first: FirstLook,
    max_leases: usize,
    waits: bool,
) -> Result<bool> {
    let mut children = first.into_listing(spec.client, spec.lock_path).await?;
    loop {
        if !children.iter().any(|child| child == node.name()) {
            return Err(Error::LockNodeDeleted { path: node.path.clone() });
        }
        if children.len() <= max_leases {
            return Ok(true);
        }
        if !waits {
            return Ok(false);
        }
        // Full: wait for a change in the directory, then count again. (Every waiter watches the
        // directory, as in Curator; only the holder of the semaphore's mutex waits here.)
        let (listed, watcher) = match retry_transient(|| spec.client.list_and_watch_children(spec.lock_path)).await {
            Ok(listing) => listing,
            Err(ZkError::NoNode) => return Err(Error::LockNodeDeleted { path: node.path.clone() }),
            Err(err) => return Err(Error::zookeeper("watch", spec.lock_path, err)),
        };
        if listed.len() <= max_leases || !listed.iter().any(|child| child == node.name()) {
            children = listed;
            continue;
        }
        let event = watcher.changed().await;
        if let Some(end) = SessionEnd::of_state(event.session_state) {
            return Err(end.error());
        }
        children = super::node::list_children(spec.client, spec.lock_path).await?;
    }
}
