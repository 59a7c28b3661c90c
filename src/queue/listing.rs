//! A queue read as its participants: who is in it, in order, with their data.
//!
//! For the wait-for graph, with their stats too.

use zookeeper_client::{Client, Error as ZkError, MultiReadResult};

use super::node::list_children;
use crate::client::retry::{retry_transient, RetryPolicy};
use crate::error::{Error, Result};
use crate::queue::queue_node::QueueNode;
use crate::rules::naming::Schema;
use crate::rules::path::child_path;

/// The queue of `lock_path` as full paths, holder first; empty when the path does not exist.
pub(crate) async fn queue_order(
    client: &Client,
    retry: RetryPolicy,
    lock_path: &str,
    schema: Schema,
) -> Result<Vec<String>> {
    Ok(in_queue_order(lock_path, schema, children_or_none(client, retry, lock_path).await?))
}

/// The children of `path`; none when it does not exist.
pub(crate) async fn children_or_none(client: &Client, retry: RetryPolicy, path: &str) -> Result<Vec<String>> {
    match list_children(client, retry, path).await {
        Err(Error::ZooKeeper { source: ZkError::NoNode, .. }) => Ok(Vec::new()),
        other => other,
    }
}

/// The `children` of `lock_path` that are `schema`'s lock nodes, as full paths in queue order.
pub(crate) fn in_queue_order(lock_path: &str, schema: Schema, children: Vec<String>) -> Vec<String> {
    schema.contenders(children).into_iter().map(|child| child_path(lock_path, &child)).collect()
}

/// The queue of `lock_path` with each node's data, holder first: one list, then one multi-read
/// for every node's data. Nodes that go between the two are left out.
pub(crate) async fn queue_with_data(
    client: &Client,
    retry: RetryPolicy,
    lock_path: &str,
    schema: Schema,
) -> Result<Vec<QueueNode>> {
    let paths = queue_order(client, retry, lock_path, schema).await?;
    read_nodes(client, retry, lock_path, paths).await
}

/// Each of `paths` (nodes of `lock_path`, in the order given), read with its data and stat in
/// one multi-read. Nodes gone meanwhile are left out.
pub(crate) async fn read_nodes(
    client: &Client,
    retry: RetryPolicy,
    lock_path: &str,
    paths: Vec<String>,
) -> Result<Vec<QueueNode>> {
    if paths.is_empty() {
        return Ok(Vec::new());
    }
    let results = retry_transient(retry, || async {
        let mut reader = client.new_multi_reader();
        for path in &paths {
            reader.add_get_data(path)?;
        }
        reader.commit().await
    })
    .await
    .map_err(Error::on("read", lock_path))?;
    Ok(paths
        .into_iter()
        .zip(results)
        .filter_map(|(path, result)| match result {
            MultiReadResult::Data { data, stat } => Some(QueueNode::read(path, data, &stat)),
            _ => None,
        })
        .collect())
}
