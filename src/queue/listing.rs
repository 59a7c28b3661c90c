//! Reading a queue as its participants: who is in it, in order, with their nodes' data.

use zookeeper_client::{Client, Error as ZkError, MultiReadResult};

use super::node::list_children;
use crate::client::retry::retry_transient;
use crate::error::{Error, Result};
use crate::queue::participant_node::ParticipantNode;
use crate::rules::naming::Schema;

/// The queue of `lock_path` as full paths, holder first; empty when the path does not exist.
pub(crate) async fn queue_order(client: &Client, lock_path: &str, schema: Schema) -> Result<Vec<String>> {
    let children = match list_children(client, lock_path).await {
        Err(Error::ZooKeeper { source: ZkError::NoNode, .. }) => return Ok(Vec::new()),
        other => other?,
    };
    Ok(schema.contenders(children).into_iter().map(|child| format!("{lock_path}/{child}")).collect())
}

/// The queue of `lock_path` with each node's data, holder first: one list, then one multi-read
/// for every node's data. Nodes that go between the two are left out.
pub(crate) async fn queue_with_data(client: &Client, lock_path: &str, schema: Schema) -> Result<Vec<ParticipantNode>> {
    let paths = queue_order(client, lock_path, schema).await?;
    if paths.is_empty() {
        return Ok(Vec::new());
    }
    let results = retry_transient(|| async {
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
            MultiReadResult::Data { data, .. } => Some(ParticipantNode { path, data }),
            _ => None,
        })
        .collect())
}
