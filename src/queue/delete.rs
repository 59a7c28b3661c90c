//! Deleting a node of ours, and a released hold's delete seen through.
//!
//! Once, retried through connection loss (a `NoNode` after a lost reply is our own delete gone
//! through), and a released hold's delete, sent at once and seen through in a spawned task if its
//! caller goes (on the caller's runtime, or zklock's own when the caller is on a thread with none).

use std::sync::Arc;

use zookeeper_client::{Client, Error as ZkError};

use crate::client::background;
use crate::client::retry::{is_connection_loss, is_transient, Retries, RetryPolicy};
use crate::error::{Error, LossReason, Result};

/// How a delete ended.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Deleted {
    /// Our delete removed the node.
    ByUs,
    /// The node was already gone before we asked.
    AlreadyGone,
}

/// Deletes `path`, retrying what is transient until it is gone: paced as `retry` says, but never
/// giving up while the session lives, whatever its bound (a delete that gave up would leave a
/// node of ours that keeps the queue waiting until our session ends).
///
/// A `NoNode` after a lost reply means our earlier delete went through; after a `Throttled`
/// one it does not (the server ran nothing).
pub(crate) async fn delete_node(client: &Client, retry: RetryPolicy, path: &str) -> Result<Deleted> {
    let mut may_have_run = false;
    let mut retries = Retries::new(retry.without_bound());
    loop {
        match client.delete(path, None).await {
            Ok(()) => return Ok(Deleted::ByUs),
            Err(ZkError::NoNode) if may_have_run => return Ok(Deleted::ByUs),
            Err(ZkError::NoNode) => return Ok(Deleted::AlreadyGone),
            Err(err) if is_transient(&err) => {
                may_have_run |= is_connection_loss(&err);
                // Unbounded: it always pauses and goes on.
                retries.pause().await;
            }
            Err(err) => return Err(Error::zookeeper("delete", path, err)),
        }
    }
}

/// Deletes a released node and reports how it went: the guards' `release`.
///
/// The delete is sent at once, in call order, and awaited here; if the caller's future is
/// dropped first, the rest (waiting, retrying through connection loss) goes on in a spawned task,
/// so the node is never left behind.
pub(crate) async fn delete_released(client: &Arc<Client>, retry: RetryPolicy, node: &Arc<str>) -> Result<()> {
    match PendingDelete::send(client, retry, node).finish().await {
        Ok(Deleted::ByUs) => Ok(()),
        Ok(Deleted::AlreadyGone) => Err(Error::LockLost(LossReason::NodeDeleted)),
        Err(err) => Err(err),
    }
}

/// Deletes a released node, sending the delete at once and seeing it through in a spawned task;
/// failures are logged: a guard's `Drop`.
pub(crate) fn delete_in_background(client: &Arc<Client>, retry: RetryPolicy, node: Arc<str>) {
    // Dropped unfinished, it goes on in the background: on this thread's runtime, or zklock's
    // own on a thread with none.
    drop(PendingDelete::send(client, retry, &node));
}

type Finishing = std::pin::Pin<Box<dyn std::future::Future<Output = Result<Deleted>> + Send>>;

/// A delete that was sent and must be seen through: by [`PendingDelete::finish`], or, if it is
/// dropped before that is done, by a spawned task.
struct PendingDelete {
    node: Arc<str>,
    rest: Option<Finishing>,
    /// Past it the server has expired the session and removed the node: nothing to wait for.
    session_timeout: std::time::Duration,
}

impl PendingDelete {
    /// Sends the delete of `node`.
    fn send(client: &Arc<Client>, retry: RetryPolicy, node: &Arc<str>) -> Self {
        let first = client.delete(node, None);
        let session_timeout = client.session_timeout();
        let (client, task_node) = (Arc::clone(client), Arc::clone(node));
        let rest: Finishing = Box::pin(async move { finish_delete(first, &client, retry, &task_node).await });
        PendingDelete { node: Arc::clone(node), rest: Some(rest), session_timeout }
    }

    /// Waits for the delete; dropping this future hands the rest to `Drop`.
    async fn finish(mut self) -> Result<Deleted> {
        // `send` always leaves a rest, and only this (by value) or `Drop` takes it.
        let Some(rest) = self.rest.as_mut() else { return Ok(Deleted::ByUs) };
        let outcome = rest.await;
        self.rest = None;
        outcome
    }
}

impl Drop for PendingDelete {
    fn drop(&mut self) {
        let Some(rest) = self.rest.take() else { return };
        let node = Arc::clone(&self.node);
        let pending = background::Pending::begin(self.session_timeout);
        background::spawn(async move {
            let _pending = pending;
            match rest.await {
                Ok(_) | Err(Error::SessionExpired | Error::SessionClosed) => {}
                Err(err) => {
                    tracing::warn!(node = %node, error = %err.with_causes(), "could not delete a released node")
                }
            }
        });
    }
}

/// Waits for a delete already sent; after a transient failure, deletes again until it is done.
async fn finish_delete(
    first: impl std::future::Future<Output = std::result::Result<(), ZkError>>,
    client: &Client,
    retry: RetryPolicy,
    path: &str,
) -> Result<Deleted> {
    match first.await {
        Ok(()) => Ok(Deleted::ByUs),
        Err(ZkError::NoNode) => Ok(Deleted::AlreadyGone),
        // The lost attempt may have deleted it: a NoNode now means ours went through. (The
        // deletes again are boxed: every release boxes this future, and they are rare.)
        Err(err) if is_connection_loss(&err) => Box::pin(delete_node(client, retry, path)).await.map(|_| Deleted::ByUs),
        // Refused unrun: as if it had not been sent.
        Err(ZkError::Throttled) => Box::pin(delete_node(client, retry, path)).await,
        Err(err) => Err(Error::zookeeper("delete", path, err)),
    }
}
