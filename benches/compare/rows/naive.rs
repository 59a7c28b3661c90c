//! The seed articles' naive lock: create one ephemeral node; on NodeExists sleep 1 ms and
//! retry. Not fair, not a queue, so it has no handoff line.

use std::future::Future;
use std::time::Duration;

use zookeeper_client::{Acls, Client, CreateMode, Error as ZkError};

use crate::row::Scenario;
use crate::spin::Cycle;
use crate::zookeeper::ZooKeeperLock;

/// The one node at `path`.
#[derive(Clone)]
pub struct Naive {
    client: Client,
    path: String,
}

impl ZooKeeperLock for Naive {
    const NAME: &'static str = "naive ephemeral + retry";
    const TAG: &'static str = "naive";
    const SCENARIOS: &'static [Scenario] = &[Scenario::Uncontended, Scenario::Contended];

    fn new(client: &Client, path: &str) -> Naive {
        Naive { client: client.clone(), path: format!("{path}/naive") }
    }
}

impl Cycle for Naive {
    async fn cycle(&mut self, inside: impl Future<Output = Result<(), String>> + Send) -> Result<(), String> {
        let options = CreateMode::Ephemeral.with_acls(Acls::anyone_all());
        loop {
            match self.client.create(&self.path, b"", &options).await {
                Ok(_) => break,
                Err(ZkError::NodeExists) => tokio::time::sleep(Duration::from_millis(1)).await,
                Err(err) => return Err(err.to_string()),
            }
        }
        inside.await?;
        self.client.delete(&self.path, None).await.map_err(|e| e.to_string())
    }
}
