//! `zklock list`: who holds a lock and who waits.

use std::process::ExitCode;

use zklock::{InterProcessMutex, InterProcessReadWriteLock, InterProcessSemaphoreV2, ParticipantNode};
use zookeeper_client::Client;

use crate::exit::Failure;

/// Prints the participants in queue order: mutex nodes and read-write nodes of the path, or a
/// semaphore's leases.
pub async fn list(client: &Client, lock_path: &str, semaphore: bool) -> Result<ExitCode, Failure> {
    let nodes: Vec<ParticipantNode> = if semaphore {
        let semaphore = InterProcessSemaphoreV2::new(client, lock_path, 1).map_err(Failure::from_lock_error)?;
        semaphore.participants_with_data().await.map_err(Failure::from_lock_error)?
    } else {
        let mutex = InterProcessMutex::new(client, lock_path).map_err(Failure::from_lock_error)?;
        let mut nodes = mutex.participants_with_data().await.map_err(Failure::from_lock_error)?;
        let rw = InterProcessReadWriteLock::new(client, lock_path).map_err(Failure::from_lock_error)?;
        nodes.extend(rw.read_lock().participants_with_data().await.map_err(Failure::from_lock_error)?);
        nodes
    };
    if nodes.is_empty() {
        println!("{lock_path}: nobody holds or waits");
    }
    for (position, node) in nodes.iter().enumerate() {
        let data = String::from_utf8_lossy(&node.data);
        println!("{position:>3}  {}  {}", node.path, data.trim());
    }
    Ok(ExitCode::SUCCESS)
}
