//! The raw floor: create an ephemeral sequential node and delete it, what any ZooKeeper queue
//! lock must do at least. It does not exclude, so it has only uncontended figures.

use std::future::Future;
use zookeeper_client::{Acls, Client, CreateMode};

use crate::row::Scenario;
use crate::spin::Cycle;
use crate::zookeeper::ZooKeeperLock;

/// Nodes `{prefix}{sequence}`, one per cycle.
#[derive(Clone)]
pub struct RawFloor {
    client: Client,
    prefix: String,
}

impl ZooKeeperLock for RawFloor {
    const NAME: &'static str = "raw floor (create+delete)";
    const TAG: &'static str = "floor";
    const SCENARIOS: &'static [Scenario] = &[Scenario::Uncontended];
    const IS_FLOOR: bool = true;

    fn new(client: &Client, path: &str) -> RawFloor {
        RawFloor { client: client.clone(), prefix: format!("{path}/raw-") }
    }
}

impl Cycle for RawFloor {
    async fn cycle(&mut self, inside: impl Future<Output = Result<(), String>> + Send) -> Result<(), String> {
        let options = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
        let (_, sequence) = self.client.create(&self.prefix, b"", &options).await.map_err(|e| e.to_string())?;
        inside.await?;
        self.client.delete(&format!("{}{sequence}", self.prefix), None).await.map_err(|e| e.to_string())
    }
}
