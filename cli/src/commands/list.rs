//! `zklock list`: each queue of a lock path, who holds and who waits.

use std::process::ExitCode;
use std::time::SystemTime;

use zookeeper_client::Client;

use crate::exit::Failure;
use crate::layout::{kazoo_stored_leases, kinds_present, Kind};
use crate::list_output::{to_json, to_text};
use crate::queue::{add_stats, queue};
use crate::stdout;

/// Prints each queue on `path`; exit 0 when someone holds, 1 when nobody does.
pub async fn list(client: &Client, path: &str, as_json: bool) -> Result<ExitCode, Failure> {
    let mut queues = Vec::new();
    for kind in kinds_present(client, path).await? {
        let mut entries = queue(client, path, kind).await?;
        add_stats(client, &mut entries).await;
        queues.push((kind, entries));
    }
    let stored_leases = match queues.iter().any(|(kind, _)| *kind == Kind::KazooSemaphore) {
        true => kazoo_stored_leases(client, path).await?,
        false => None,
    };
    let held = queues.iter().any(|(_, entries)| entries.iter().any(|entry| entry.holds));
    let now = SystemTime::now();
    let text = if as_json {
        to_json(path, held, &queues, stored_leases, now).to_string()
    } else {
        to_text(path, &queues, now)
    };
    stdout::line(&text)?;
    Ok(if held { ExitCode::SUCCESS } else { ExitCode::from(1) })
}
