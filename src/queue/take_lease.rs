//! A lease in a counting semaphore, as Curator's `InterProcessSemaphoreV2` takes it: while the
//! semaphore's mutex is held, create a lease node and wait until the leases directory holds at
//! most `max_leases` children.

use std::future::Future;
use std::pin::Pin;

use zookeeper_client::Error as ZkError;

use super::deadline::Patience;
use super::node::QueueSpec;
use super::node::{FirstLook, LockNode};
use super::retry::retry_transient;
use super::session_end::SessionEnd;
use super::turn::{enter, Wait};
use crate::rules::opening::Proof;
use crate::{Error, Result};

/// Creates a lease node in `spec.lock_path` while `gate` (the semaphore's mutex) is held, and
/// waits until at most `max_leases` children are there (ours among them). `Ok(None)` when
/// `patience` runs out; see [`enter`] for timeouts, errors and cancellation.
///
/// Curator counts every child of the leases directory, and so does this: counting a foreign child
/// can only make us wait, never hold a lease too many.
///
/// # Errors
/// [`Error::LockNodeDeleted`] when our lease node is deleted by someone else: the taker starts
/// over from the gate (a lease queued again under a gate that another taker now holds could wait
/// beside that taker's lease for ever). What `gate_lost` resolves to, once the gate is lost while
/// we wait (its node deleted, say: then `LockNodeDeleted` too).
pub(crate) async fn take_lease(
    spec: &QueueSpec<'_>,
    max_leases: usize,
    patience: Patience,
    gate_lost: impl Future<Output = Error> + Send,
) -> Result<Option<LockNode>> {
    let mut room = RoomWait { max_leases, waits: patience != Patience::NoWait, gate_lost: std::pin::pin!(gate_lost) };
    Ok(enter(spec, patience, &mut room).await?.map(|(node, ())| node))
}

/// Waiting for room among the leases.
struct RoomWait<'g, G> {
    max_leases: usize,
    /// `false` for a try: give up at once when full.
    waits: bool,
    /// Resolves once the hold of the semaphore's mutex under which we take the lease is lost.
    gate_lost: Pin<&'g mut G>,
}

impl<G: Future<Output = Error> + Send> Wait for RoomWait<'_, G> {
    type Output = ();

    /// The semaphore starts over from its mutex, as Curator's does: a lease queued again under
    /// a hold of the mutex that may itself be gone could wait beside another taker for ever.
    const QUEUES_AGAIN: bool = false;

    async fn wait<'a>(
        &'a mut self,
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
async fn wait_for_room<G: Future<Output = Error>>(
    spec: &QueueSpec<'_>,
    node: &LockNode,
    first: FirstLook,
    room: &mut RoomWait<'_, G>,
) -> Result<bool> {
    let (max_leases, waits) = (room.max_leases, room.waits);
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
            err = room.gate_lost.as_mut() => return Err(err),
        };
        if let Some(end) = SessionEnd::of_state(event.session_state) {
            return Err(end.error());
        }
        children = super::node::list_children(spec.client, spec.lock_path).await?;
    }
}
