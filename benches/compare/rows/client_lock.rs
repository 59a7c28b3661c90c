//! The row of zookeeper-client's own lock recipe, `Client::lock` (Curator-style names).

use std::future::Future;
use zookeeper_client::{Acls, Client, LockOptions, LockPrefix};

use crate::row::Scenario;
use crate::spin::Cycle;
use crate::zookeeper::ZooKeeperLock;

/// `Client::lock` under `dir`.
#[derive(Clone)]
pub struct ClientLock {
    client: Client,
    dir: String,
}

impl ZooKeeperLock for ClientLock {
    const NAME: &'static str = "zookeeper-client Client::lock";
    const TAG: &'static str = "client-lock";
    const SCENARIOS: &'static [Scenario] =
        &[Scenario::Uncontended, Scenario::Contended, Scenario::Handoff, Scenario::Cohort];

    fn new(client: &Client, path: &str) -> ClientLock {
        ClientLock { client: client.clone(), dir: path.to_owned() }
    }
}

impl Cycle for ClientLock {
    async fn cycle(&mut self, inside: impl Future<Output = Result<(), String>> + Send) -> Result<(), String> {
        let prefix = LockPrefix::new_curator(&self.dir, "lock-").map_err(|e| e.to_string())?;
        let lock =
            self.client.lock(prefix, b"", LockOptions::new(Acls::anyone_all())).await.map_err(|e| e.to_string())?;
        inside.await?;
        let path = lock.lock_path().to_owned();
        // Await the delete ourselves (its Drop would send it in the background).
        std::mem::forget(lock);
        self.client.delete(&path, None).await.map_err(|e| e.to_string())
    }
}

/// `Client::lock` once more, a second row of the contended and handoff tables: two rows of one
/// lock in one run differ by the run's noise alone, which the targets table writes beside
/// zklock's ratio to `Client::lock` (a verdict of "level" from one run is worth what that noise
/// allows).
#[derive(Clone)]
pub struct ClientLockAgain(ClientLock);

impl ZooKeeperLock for ClientLockAgain {
    const NAME: &'static str = "zookeeper-client Client::lock, again (the run's noise)";
    const TAG: &'static str = "client-lock-again";
    const SCENARIOS: &'static [Scenario] = &[Scenario::Contended, Scenario::Handoff];

    fn new(client: &Client, path: &str) -> ClientLockAgain {
        ClientLockAgain(ClientLock::new(client, path))
    }
}

impl Cycle for ClientLockAgain {
    async fn cycle(&mut self, inside: impl Future<Output = Result<(), String>> + Send) -> Result<(), String> {
        self.0.cycle(inside).await
    }
}
