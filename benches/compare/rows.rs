//! The locks under comparison that run in this process, each as "take it, then give it back".

use std::time::Duration;

use zklock::InterProcessMutex;
use zookeeper_client::{Acls, Client, CreateMode, Error as ZkError, LockOptions, LockPrefix};

/// A lock (or the lock-free floor) that one session can take and give back.
pub enum Row {
    /// zklock's `InterProcessMutex`.
    Zklock(InterProcessMutex),
    /// zookeeper-client's own `Client::lock` (Curator-style names).
    ClientLock { client: Client, dir: String },
    /// The floor: create an ephemeral sequential node and delete it; no exclusion at all.
    RawFloor { client: Client, prefix: String },
    /// The seed articles' naive lock: create one ephemeral node; on NodeExists sleep 1 ms and
    /// retry.
    Naive { client: Client, path: String },
}

/// The row of the raw floor: it does not exclude, so it has no contended figures.
pub const FLOOR: usize = 2;

/// The names of the rows, in table order.
pub const NAMES: [&str; 4] = [
    "zklock InterProcessMutex",
    "zookeeper-client Client::lock",
    "raw floor (create+delete)",
    "naive ephemeral + retry",
];

/// Creates the lock path as a persistent node, so that no row pays for parents and no container
/// reaper deletes them between cycles.
pub async fn prepare(client: &Client, path: &str) {
    let _ = client.mkdir(path, &CreateMode::Persistent.with_acls(Acls::anyone_all())).await;
}

impl Row {
    /// Makes row `index` of [`NAMES`] on `client`, for the lock at `path`.
    pub fn new(index: usize, client: &Client, path: &str) -> Row {
        match index {
            0 => Row::Zklock(InterProcessMutex::new(client, path).expect("lock path")),
            1 => Row::ClientLock { client: client.clone(), dir: path.to_owned() },
            2 => Row::RawFloor { client: client.clone(), prefix: format!("{path}/raw-") },
            _ => Row::Naive { client: client.clone(), path: format!("{path}/naive") },
        }
    }

    /// Takes the lock, runs `inside` while holding it, gives it back.
    pub async fn cycle<F: FnOnce()>(&self, inside: F) -> Result<(), String> {
        match self {
            Row::Zklock(mutex) => {
                let guard = mutex.acquire().await.map_err(|e| e.to_string())?;
                inside();
                guard.release().await.map_err(|e| e.to_string())
            }
            Row::ClientLock { client, dir } => {
                let prefix = LockPrefix::new_curator(dir, "lock-").map_err(|e| e.to_string())?;
                let lock =
                    client.lock(prefix, b"", LockOptions::new(Acls::anyone_all())).await.map_err(|e| e.to_string())?;
                inside();
                let path = lock.lock_path().to_owned();
                // Await the delete ourselves (its Drop would send it in the background).
                std::mem::forget(lock);
                client.delete(&path, None).await.map_err(|e| e.to_string())
            }
            Row::RawFloor { client, prefix } => {
                let options = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
                let (_, sequence) = client.create(prefix, b"", &options).await.map_err(|e| e.to_string())?;
                inside();
                client.delete(&format!("{prefix}{sequence}"), None).await.map_err(|e| e.to_string())
            }
            Row::Naive { client, path } => {
                let options = CreateMode::Ephemeral.with_acls(Acls::anyone_all());
                loop {
                    match client.create(path, b"", &options).await {
                        Ok(_) => break,
                        Err(ZkError::NodeExists) => tokio::time::sleep(Duration::from_millis(1)).await,
                        Err(err) => return Err(err.to_string()),
                    }
                }
                inside();
                client.delete(path, None).await.map_err(|e| e.to_string())
            }
        }
    }
}

impl crate::spin::Cycle for Row {
    fn cycle(&mut self, inside: impl FnOnce() + Send) -> impl std::future::Future<Output = Result<(), String>> + Send {
        Row::cycle(self, inside)
    }
}
