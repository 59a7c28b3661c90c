//! What an acquire may have left of its node: found again, and deleted.
//!
//! Found again after a lost create reply (for the create, and for its cleanup), and deleted on
//! every way out of an acquire that did not hold: awaited on timeout and error, spawned when the
//! acquire is dropped (`NodeCleanup`). The cleanup's requests never give up while the session
//! lives, whatever the retry policy's bound: a cleanup that gave up would leave a node that keeps
//! the queue waiting.

use std::time::Instant;

use zookeeper_client::{Client, Error as ZkError};

use super::delete::delete_node;
use crate::client::background;
use crate::client::deadline::{within, CLEANUP_AFTER_DEADLINE};
use crate::client::retry::{retry_transient, RetryPolicy};
use crate::error::{Error, Result};
use crate::rules::naming::sequential_name;
use crate::rules::path::child_path;

/// Finds the node created with `prefix` under `lock_path` by this session, if any: its name and
/// czxid.
///
/// After a lost reply the client may have reconnected to a server that has not applied our
/// create yet; a listing there would miss the node, and we would create a second one and wait
/// behind the first for ever. A `sync` first brings that server up to date with the leader.
pub(crate) async fn find_ours(
    client: &Client,
    retry: RetryPolicy,
    lock_path: &str,
    prefix: &str,
) -> Result<Option<(String, i64)>> {
    match retry_transient(retry, || client.sync(lock_path)).await {
        Ok(()) | Err(ZkError::NoNode) => {}
        Err(err) => return Err(Error::zookeeper("sync", lock_path, err)),
    }
    let children = match retry_transient(retry, || client.list_children(lock_path)).await {
        Err(ZkError::NoNode) => return Ok(None),
        other => other.map_err(Error::on("list", lock_path))?,
    };
    let Some(name) = children.into_iter().find(|child| child.starts_with(prefix)) else {
        return Ok(None);
    };
    let czxid = czxid_if_ours(client, retry, &child_path(lock_path, &name)).await?;
    Ok(czxid.map(|czxid| (name, czxid)))
}

/// The czxid of the node at `path` if this session owns it (an ephemeral node of ours), `None`
/// when it is gone or another session's: how a create whose reply was lost, or that found the
/// name taken, tells whether the node is ours.
pub(crate) async fn czxid_if_ours(client: &Client, retry: RetryPolicy, path: &str) -> Result<Option<i64>> {
    let stat = retry_transient(retry, || client.check_stat(path)).await.map_err(Error::on("stat", path))?;
    Ok(stat.filter(|stat| stat.ephemeral_owner == client.session_id().0).map(|stat| stat.czxid))
}

/// What may exist of our node, as far as the acquire got.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Remains {
    /// Nothing was created, or it was cleaned up or handed to a guard.
    Nothing,
    /// A create was sent and its outcome is unknown: look for the node by prefix.
    MaybeCreated,
    /// The node exists at this path.
    Created(String),
    /// The node exists, created with our prefix under the lock path and given this sequence
    /// number: the usual create's, whose path is only written out if it must be deleted (an
    /// acquire that holds copies nothing for its cleanup).
    Sequential(i64),
}

/// Deletes a half-acquired node: awaited on timeout and error, spawned when dropped.
///
/// Armed before the create is sent, so a dropped acquire future leaves no node behind.
///
/// It borrows what names the node: only a cleanup that is dropped with work left copies it,
/// for the task it spawns (an acquire that holds pays for no copy).
#[derive(Debug)]
pub(crate) struct NodeCleanup<'a> {
    client: &'a Client,
    /// The acquire's pacing, never giving up: a cleanup that gave up would leave the node.
    retry: RetryPolicy,
    lock_path: &'a str,
    prefix: &'a str,
    pub(crate) remains: Remains,
}

impl<'a> NodeCleanup<'a> {
    pub(crate) fn new(client: &'a Client, retry: RetryPolicy, lock_path: &'a str, prefix: &'a str) -> Self {
        NodeCleanup { client, retry: retry.without_bound(), lock_path, prefix, remains: Remains::Nothing }
    }

    /// The node now belongs to a guard: nothing to clean up.
    pub(crate) fn disarm(&mut self) {
        self.remains = Remains::Nothing;
    }

    /// Ends an acquire: a node we hold now belongs to its guard; on timeout or error, what may
    /// exist of our node is deleted, spending at most [`CLEANUP_AFTER_DEADLINE`] past a deadline
    /// (an unfinished cleanup goes on in the background, from `Drop`).
    pub(crate) async fn settle<T>(
        &mut self,
        outcome: Result<Option<T>>,
        deadline: Option<Instant>,
    ) -> Result<Option<T>> {
        if let Ok(Some(_)) = &outcome {
            self.disarm();
        } else {
            let grace = deadline.map(|_| Instant::now() + CLEANUP_AFTER_DEADLINE);
            // Boxed: a delete, perhaps after a search by prefix, is a large state machine that
            // only an acquire that did not hold runs, and every acquire's would carry it.
            within(grace, Box::pin(self.run())).await;
        }
        outcome
    }

    /// Deletes what may exist of our node. Failures are logged: a session that ended took the
    /// node with it.
    ///
    /// Cancel safe: what remains is cleared only once the work is done, so a dropped `run` is
    /// finished by `Drop`.
    pub(crate) async fn run(&mut self) {
        delete_remains_or_warn(self.client, self.retry, self.lock_path, self.prefix, &self.remains).await;
        self.remains = Remains::Nothing;
    }
}

impl Drop for NodeCleanup<'_> {
    fn drop(&mut self) {
        let remains = std::mem::replace(&mut self.remains, Remains::Nothing);
        if remains == Remains::Nothing {
            return;
        }
        // The spawned future owns plain data, not a NodeCleanup: a runtime that is shutting down
        // drops it unpolled, and that must not spawn again.
        let (client, retry, lock_path, prefix) =
            (self.client.clone(), self.retry, self.lock_path.to_owned(), self.prefix.to_owned());
        let pending = background::Pending::begin(client.session_timeout());
        background::spawn(async move {
            let _pending = pending;
            delete_remains_or_warn(&client, retry, &lock_path, &prefix, &remains).await;
        });
    }
}

/// [`delete_remains`] for a cleanup, which has no caller to tell: a failure is logged (a session
/// that ended took the node with it).
async fn delete_remains_or_warn(client: &Client, retry: RetryPolicy, lock_path: &str, prefix: &str, remains: &Remains) {
    if let Err(err) = delete_remains(client, retry, lock_path, prefix, remains).await {
        tracing::warn!(%lock_path, error = %err.with_causes(), "could not delete an abandoned lock node");
    }
}

/// Deletes our node `prefix…` under `lock_path`: at `node` when its create was confirmed, else
/// wherever a create of ours may have put it. Returns once ZooKeeper confirmed: it never gives
/// up while the session lives, whatever `retry`'s bound.
pub(crate) async fn delete_ours(
    client: &Client,
    retry: RetryPolicy,
    lock_path: &str,
    prefix: &str,
    node: Option<&str>,
) -> Result<()> {
    let remains = match node {
        Some(path) => Remains::Created(path.to_owned()),
        None => Remains::MaybeCreated,
    };
    delete_remains(client, retry, lock_path, prefix, &remains).await
}

async fn delete_remains(
    client: &Client,
    retry: RetryPolicy,
    lock_path: &str,
    prefix: &str,
    remains: &Remains,
) -> Result<()> {
    let retry = retry.without_bound();
    let outcome = async {
        let path = match remains {
            Remains::Nothing => return Ok(()),
            Remains::Created(path) => path.clone(),
            Remains::Sequential(sequence) => sequential_name(&child_path(lock_path, prefix), *sequence),
            Remains::MaybeCreated => match find_ours(client, retry, lock_path, prefix).await? {
                Some((name, _)) => child_path(lock_path, &name),
                None => return Ok(()),
            },
        };
        delete_node(client, retry, &path).await.map(drop)
    };
    match outcome.await {
        // The session's end deleted the node.
        Err(Error::SessionExpired | Error::SessionClosed) => Ok(()),
        outcome => outcome,
    }
}
