//! A lease in a counting semaphore, as Curator's `InterProcessSemaphoreV2` takes it: while the
//! semaphore's mutex is held, create a lease node and wait until the leases directory holds at
//! most `max_leases` children.

use zookeeper_client::Error as ZkError;

use super::deadline::Patience;
use super::node::{FirstLook, LockNode};
use super::queue::{enter, QueueSpec, Wait};
use super::retry::retry_transient;
use super::session_end::SessionEnd;
use crate::driver::opening::Proof;
use crate::{Error, LockGuard, LossReason, Result};

/// Creates a lease node in `spec.lock_path` while `gate` (the semaphore's mutex) is held, and
/// waits until at most `max_leases` children are there (ours among them). `Ok(None)` when
/// `patience` runs out; see [`enter`] for timeouts, errors and cancellation.
///
/// Curator counts every child of the leases directory, and so does this: counting a foreign child
/// can only make us wait, never hold a lease too many.
///
/// # Errors
/// [`Error::LockNodeDeleted`] when our lease node, or the gate's node while we wait for room, is
/// deleted by someone else: the taker starts over from the gate (a lease queued again under a
/// gate that another taker now holds could wait beside that taker's lease for ever).
/// [`Error::LockLost`] when the gate is lost otherwise while we wait.
pub(crate) async fn take_lease(
    spec: &QueueSpec<'_>,
    max_leases: usize,
    patience: Patience,
    gate: &LockGuard,
) -> Result<Option<LockNode>> {
    let room = RoomWait { max_leases, waits: patience != Patience::NoWait, gate };
    Ok(enter(spec, patience, &room).await?.map(|(node, ())| node))
}

/// Waiting for room among the leases.
struct RoomWait<'g> {
    max_leases: usize,
    /// `false` for a try: give up at once when full.
    waits: bool,
    /// The hold of the semaphore's mutex under which we take the lease.
    gate: &'g LockGuard,
}

impl Wait for RoomWait<'_> {
    type Output = ();

    /// The semaphore starts over from its mutex, as Curator's does: a lease queued again under
    /// a hold of the mutex that may itself be gone could wait beside another taker for ever.
    const QUEUES_AGAIN: bool = false;

    async fn wait<'a>(
        &'a self,
        spec: &'a QueueSpec<'a>,
        node: &'a mut LockNode,
        first: FirstLook,
        _proof: Proof,
    ) -> Result<Option<()>> {
        Ok(wait_for_room(spec, node, first, self).await?.then_some(()))
    }
}

/// Waits until the directory has room for our lease: `Ok(false)` when it is full and `waits`
/// is false.
async fn wait_for_room(spec: &QueueSpec<'_>, node: &LockNode, first: FirstLook, room: &RoomWait<'_>) -> Result<bool> {
    let RoomWait { max_leases, waits, gate } = *room;
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
        let event = tokio::select! {
            event = watcher.changed() => event,
            reason = gate.lost() => return Err(match reason {
                LossReason::NodeDeleted => Error::LockNodeDeleted { path: gate.node_path().to_owned() },
                reason => Error::LockLost(reason),
            }),
        };
        if let Some(end) = SessionEnd::of_state(event.session_state) {
            return Err(end.error());
        }
        children = super::node::list_children(spec.client, spec.lock_path).await?;
    }
}
