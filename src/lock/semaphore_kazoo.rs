//! A semaphore in kazoo's layout: the stored maximum, and taking one lease.
//!
//! The layout is `rules/kazoo_leases.rs`'s: the path node that stores the maximum, checked as kazoo
//! checks it, and the taking of one lease by the holder of the gate: count, create when there is
//! room, and hold once a listing shows our lease within the maximum.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicI64, Ordering};

use uuid::Uuid;
use zookeeper_client::{Acls, Client, CreateMode, Error as ZkError};

use crate::client::deadline::{cleanup_deadline, within, within_patience, Patience};
use crate::client::retry::{is_transient, retry_transient, Retries, RetryPolicy};
use crate::client::session_end::SessionEnd;
use crate::error::{Error, LossReason, Result};
use crate::options::AclProvider;
use crate::queue::cleanup::{czxid_if_ours, NodeCleanup, Remains};
use crate::queue::listing::children_or_none;
use crate::queue::node::LockNode;
use crate::rules::kazoo_leases::{
    after_create, gate_path, has_room, lease_name, read_stored_max, stored_max_leases, Created, StoredMax,
};
use crate::rules::path::child_path;

/// The lease pool of a kazoo-layout semaphore: `{path}`, whose children are the leases.
#[derive(Debug)]
pub(crate) struct KazooPool<'a> {
    pub(crate) client: &'a Client,
    /// The session's retry policy (an acquire's requests honour its bound).
    pub(crate) retry: RetryPolicy,
    pub(crate) path: &'a str,
    pub(crate) max_leases: u32,
    /// Our lease nodes' data (kazoo writes its identifier there).
    pub(crate) data: &'a [u8],
    pub(crate) acls: &'a AclProvider,
    /// The czxid of the path node last found storing our maximum (0: none yet), kept by the
    /// semaphore object: a path node made again (another czxid) is checked again.
    pub(crate) checked: &'a AtomicI64,
}

impl KazooPool<'_> {
    /// Refuses a semaphore whose path stores another maximum than ours, as kazoo's
    /// `_ensure_path` does; creates the path node with ours when there is none. Done before an
    /// acquire takes the gate, so a refused acquire leaves nothing behind; by each semaphore
    /// object until it finds our maximum (kazoo checks once per instance: data that is no number
    /// yet, between kazoo's create of the node and its set, is no refusal), and again when the
    /// path node was made anew since (its czxid, seen by each take's listing).
    ///
    /// # Errors
    /// [`Error::MaxLeasesMismatch`]; a session's end; what ZooKeeper refuses.
    pub(crate) async fn check_max_leases(&self) -> Result<()> {
        if self.checked.load(Ordering::Relaxed) != 0 {
            return Ok(());
        }
        loop {
            match retry_transient(self.retry, || self.client.get_data(self.path)).await {
                Ok((data, stat)) => {
                    return match read_stored_max(&data, self.max_leases) {
                        StoredMax::Same => {
                            self.checked.store(stat.czxid, Ordering::Relaxed);
                            Ok(())
                        }
                        StoredMax::NoNumber => Ok(()),
                        StoredMax::Other(stored) => Err(Error::MaxLeasesMismatch {
                            path: self.path.to_owned(),
                            stored,
                            max_leases: self.max_leases,
                        }),
                    }
                }
                Err(ZkError::NoNode) => {
                    if self.create_path_node().await? {
                        return Ok(());
                    }
                }
                Err(err) => return Err(Error::zookeeper("read", self.path, err)),
            }
        }
    }

    /// Creates the path node, persistent as kazoo's (a container would go with its last lease,
    /// and a kazoo taker's create under it would fail), with our maximum as its data, and the
    /// gate's path beside it, persistent too (the gate mutex would make it a container, reaped
    /// once empty, between a kazoo taker's `ensure_path` and its create); their parents as
    /// containers. `false` when the path node was there first (read it).
    async fn create_path_node(&self) -> Result<bool> {
        let data = stored_max_leases(self.max_leases);
        let options = CreateMode::Persistent.with_acls(Acls::new(self.acls.parents()));
        loop {
            match retry_transient(self.retry, || self.client.create(self.path, &data, &options)).await {
                Ok(_) => {
                    let gate = gate_path(self.path);
                    return match retry_transient(self.retry, || self.client.create(&gate, &[], &options)).await {
                        Ok(_) | Err(ZkError::NodeExists) => Ok(true),
                        Err(err) => Err(Error::zookeeper("create", &gate, err)),
                    };
                }
                Err(ZkError::NodeExists) => return Ok(false),
                Err(ZkError::NoNode) => {
                    let parent = &self.path[..self.path.rfind('/').unwrap_or(0)];
                    let options = CreateMode::Container.with_acls(Acls::new(self.acls.parents()));
                    match retry_transient(self.retry, || self.client.mkdir(parent, &options)).await {
                        Ok(()) | Err(ZkError::NodeExists) => {}
                        Err(err) => return Err(Error::zookeeper("create parents of", self.path, err)),
                    }
                }
                Err(err) => return Err(Error::zookeeper("create", self.path, err)),
            }
        }
    }

    /// Takes one lease while the gate (kazoo's `Lock` on `{path}-__lock__`, our node there
    /// `gate_node`) is held, as kazoo's
    /// `_get_lease` does: while the path has `max_leases` children or more, waits for them to
    /// change (a children watch, as kazoo's, set only by the gate's holder); then creates
    /// `{path}/{hex32}` and holds once a listing shows it there with at most `max_leases`
    /// children. Ends with what `gate_lost` resolves to should the gate's hold go while we wait.
    ///
    /// Returns `Ok(None)` when `patience` runs out; our node is deleted before that returns (as
    /// before an error).
    ///
    /// # Errors
    /// [`Error::LockLost`] (`NodeDeleted`) when our lease or the gate's node is gone before the
    /// hold begins: the taker starts
    /// over from the gate; a session's end; what ZooKeeper refuses.
    ///
    /// # Cancel safety
    /// A cleanup armed before the create deletes our lease, or finds it by its name first, when
    /// the future is dropped.
    pub(crate) async fn take(
        &self,
        patience: Patience,
        gate_node: &str,
        gate_lost: impl Future<Output = Error>,
    ) -> Result<Option<LockNode>> {
        let deadline = patience.deadline();
        let mut gate_lost = std::pin::pin!(gate_lost);
        // The gate's stat rides beside the listing, so it is retried here, paced and bounded by
        // the session's policy as every other request is.
        let mut gate_retries = Retries::new(self.retry);
        loop {
            // Our gate node read behind the listing, in its round trip: one transaction may have
            // deleted a lease and our gate node together (an operator's `deleteall`), and the
            // change of the leases may reach us first. A read sent after that change sees the
            // deletion, so a taker whose gate went never creates a lease beside the next one's.
            let gate_and_leases = async {
                let gate = self.client.check_stat(gate_node);
                let listed = retry_transient(self.retry, || self.client.get_children(self.path)).await;
                (gate.await, listed.map_err(Error::on("list", self.path)))
            };
            let Some((gate, listed)) = within_patience(patience, self.client, gate_and_leases).await else {
                return Ok(None);
            };
            match gate {
                Ok(Some(_)) => {}
                Ok(None) => return Err(Error::LockLost(LossReason::NodeDeleted)),
                Err(err) if is_transient(&err) && gate_retries.pause().await => continue,
                Err(err) => return Err(Error::zookeeper("read", gate_node, err)),
            }
            let children = match listed {
                Err(Error::ZooKeeper { source: ZkError::NoNode, .. }) => {
                    // Deleted since the check (an operator): made again with our maximum.
                    self.create_path_node().await?;
                    continue;
                }
                Ok((children, path_node)) if path_node.czxid != self.checked.load(Ordering::Relaxed) => {
                    // Made anew since our check, maybe by a participant with another maximum.
                    self.checked.store(0, Ordering::Relaxed);
                    self.check_max_leases().await?;
                    children
                }
                other => other?.0,
            };
            if !has_room(children.len(), self.max_leases) {
                if patience == Patience::NoWait {
                    return Ok(None);
                }
                match within(deadline, self.room_changes(gate_lost.as_mut())).await {
                    Some(changed) => changed?,
                    None => return Ok(None),
                }
                continue;
            }
            let name = lease_name(&Uuid::new_v4());
            let mut cleanup = NodeCleanup::new(self.client, self.retry, self.path, &name);
            let outcome = match within_patience(patience, self.client, self.create_lease(&name, &mut cleanup)).await {
                Some(Ok((Created::TooMany, _))) => {
                    cleanup.settle(Ok(None::<()>), cleanup_deadline(patience)).await?;
                    continue;
                }
                Some(Ok((Created::Hold, czxid))) => Ok(Some(LockNode::new(self.path, &name, czxid, None, self.retry))),
                Some(Ok((Created::Missing, _))) => Err(Error::LockLost(LossReason::NodeDeleted)),
                Some(Err(err)) => Err(err),
                None => Ok(None),
            };
            return cleanup.settle(outcome, cleanup_deadline(patience)).await;
        }
    }

    /// Waits for a change among the leases, the path full when last listed (or returns at once
    /// when the watch's own listing shows room, or the path gone); ends with what `gate_lost`
    /// resolves to, should the gate go first.
    async fn room_changes<G: Future<Output = Error>>(&self, gate_lost: Pin<&mut G>) -> Result<()> {
        let (listed, watcher) =
            match retry_transient(self.retry, || self.client.list_and_watch_children(self.path)).await {
                Ok(listing) => listing,
                Err(ZkError::NoNode) => return Ok(()),
                Err(err) => return Err(Error::zookeeper("watch", self.path, err)),
            };
        if has_room(listed.len(), self.max_leases) {
            return Ok(());
        }
        let event = tokio::select! {
            event = watcher.changed() => event,
            err = gate_lost => return Err(err),
        };
        match SessionEnd::of_state(event.session_state) {
            Some(end) => Err(end.error()),
            None => Ok(()),
        }
    }

    /// Creates our lease `{path}/{name}` (ephemeral, no sequence, as kazoo's) and lists the
    /// path: what the listing says of it, and its czxid (the lease's fencing token). After a
    /// lost reply the create is sent again: `NodeExists` on a node our session owns is ours.
    async fn create_lease(&self, name: &str, cleanup: &mut NodeCleanup<'_>) -> Result<(Created, i64)> {
        let path = child_path(self.path, name);
        let options = CreateMode::Ephemeral.with_acls(Acls::new(self.acls.lock_nodes()));
        let mut retries = Retries::new(self.retry);
        let czxid = loop {
            cleanup.remains = Remains::MaybeCreated;
            match self.client.create(&path, self.data, &options).await {
                Ok((stat, _)) => break stat.czxid,
                // The policy's bound spent: the cleanup looks for a lease a lost reply made.
                Err(err) if is_transient(&err) => {
                    if !retries.pause().await {
                        return Err(Error::zookeeper("create", &path, err));
                    }
                }
                Err(ZkError::NodeExists) => match czxid_if_ours(self.client, self.retry, &path).await? {
                    Some(czxid) => break czxid,
                    None => {
                        cleanup.remains = Remains::Nothing;
                        return Err(Error::zookeeper("create", &path, ZkError::NodeExists));
                    }
                },
                Err(ZkError::NoNode) => {
                    cleanup.remains = Remains::Nothing;
                    self.create_path_node().await?;
                }
                Err(err) => {
                    cleanup.remains = Remains::Nothing;
                    return Err(Error::zookeeper("create", &path, err));
                }
            }
        };
        cleanup.remains = Remains::Created(path);
        let children = children_or_none(self.client, self.retry, self.path).await?;
        Ok((after_create(&children, name, self.max_leases), czxid))
    }
}

/// The leases of a kazoo-layout semaphore at `path`: every child, by name (a taker creates its
/// lease only when there is room, so each is a lease held).
pub(crate) async fn lease_paths(client: &Client, retry: RetryPolicy, path: &str) -> Result<Vec<String>> {
    let mut children = children_or_none(client, retry, path).await?;
    children.sort_unstable();
    Ok(children.into_iter().map(|child| format!("{path}/{child}")).collect())
}
