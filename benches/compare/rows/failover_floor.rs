//! The failover floor: one session deletes its ephemeral node, another that watches the node is
//! notified. What any ZooKeeper election must do at least to hand leadership on; no election
//! logic, so it has only failover figures.

use std::error::Error;
use std::time::{Duration, Instant};

use zookeeper_client::{Acls, Client, CreateMode};

use crate::election::Candidates;
use crate::Plan;

/// The leader's session and node, and the session that watches it.
pub struct WatchedDelete {
    leader: Client,
    watcher: Client,
    node: String,
}

impl Candidates for WatchedDelete {
    const NAME: &'static str = "raw floor (delete, a watcher notified)";
    const TAG: &'static str = "failover-floor";
    const IS_FLOOR: bool = true;

    fn sessions(_plan: &Plan) -> usize {
        2
    }

    async fn join(clients: &[Client], path: &str) -> Result<WatchedDelete, Box<dyn Error>> {
        let [leader, watcher] = clients else { return Err("the floor takes two sessions".into()) };
        Ok(WatchedDelete { leader: leader.clone(), watcher: watcher.clone(), node: format!("{path}/leader") })
    }

    /// Untimed: the node, and the watch on it (three requests per term with the delete).
    async fn term(&mut self) -> Result<Duration, Box<dyn Error>> {
        let options = CreateMode::Ephemeral.with_acls(Acls::anyone_all());
        self.leader.create(&self.node, b"", &options).await?;
        let (stat, watcher) = self.watcher.check_and_watch_stat(&self.node).await?;
        if stat.is_none() {
            return Err(format!("{} vanished before its delete", self.node).into());
        }
        let gave_up = Instant::now();
        // Together: the notification may come before the delete's answer.
        let (deleted, told) = tokio::join!(self.leader.delete(&self.node, None), async {
            watcher.changed().await;
            Instant::now()
        });
        deleted?;
        Ok(told.duration_since(gave_up))
    }

    async fn leave(self) -> Result<(), Box<dyn Error>> {
        Ok(())
    }
}
