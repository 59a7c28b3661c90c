//! `zklock list`: each queue of a lock path, who holds and who waits.

use std::process::ExitCode;

use serde_json::json;
use zklock::{InterProcessMutex, InterProcessSemaphoreV2, LeaderLatch, NodeSchema, ParticipantNode};
use zookeeper_client::Client;

use crate::exit::Failure;
use crate::layout::{kinds_present, Kind};

/// One participant of a queue.
#[derive(Debug, PartialEq, Eq)]
pub struct Entry {
    pub node: String,
    pub data: String,
    /// `read` or `write` in a read-write lock.
    pub side: Option<&'static str>,
    pub holds: bool,
}

/// The participants of `kind`'s queue on `path`, in queue order.
///
/// An election lists its leader as the holder. A semaphore lists its leases as holders (Curator's layout does not store the number of
/// leases; a participant that has just added its lease and waits for room shows among them
/// while it is also first in the `locks` queue), then the participants queued in `locks`.
pub async fn queue(client: &Client, path: &str, kind: Kind) -> Result<Vec<Entry>, Failure> {
    let lock_error = Failure::from_lock_error;
    let nodes = match kind {
        Kind::ReadWrite => {
            let rw = InterProcessMutex::builder(client, path).build_read_write().map_err(lock_error)?;
            let nodes = rw.read_lock().participants_with_data().await.map_err(lock_error)?;
            return Ok(read_write_roles(nodes.into_iter().map(|node| entry(node, None, false)).collect()));
        }
        Kind::Mutex => InterProcessMutex::new(client, path).map_err(lock_error)?,
        Kind::Kazoo => {
            InterProcessMutex::builder(client, path).node_schema(NodeSchema::Kazoo).build().map_err(lock_error)?
        }
        Kind::Semaphore => {
            let semaphore = InterProcessSemaphoreV2::new(client, path, 1).map_err(lock_error)?;
            let leases = semaphore.participants_with_data().await.map_err(lock_error)?;
            let queued = InterProcessMutex::new(client, &format!("{path}/locks")).map_err(lock_error)?;
            let queued = queued.participants_with_data().await.map_err(lock_error)?;
            let entries = leases.into_iter().map(|node| entry(node, None, true));
            return Ok(entries.chain(queued.into_iter().map(|node| entry(node, None, false))).collect());
        }
        Kind::Latch => {
            // The latch only reads here: it never joins the election.
            let latch = LeaderLatch::new(client, path, "zklock list").map_err(lock_error)?;
            let participants = latch.participants().await.map_err(lock_error)?;
            let entries = participants.into_iter().map(|participant| Entry {
                node: participant.node_path,
                data: participant.id,
                side: None,
                holds: participant.is_leader,
            });
            return Ok(entries.collect());
        }
    }
    .participants_with_data()
    .await
    .map_err(lock_error)?;
    Ok(nodes.into_iter().enumerate().map(|(position, node)| entry(node, None, position == 0)).collect())
}

fn entry(node: ParticipantNode, side: Option<&'static str>, holds: bool) -> Entry {
    let data = String::from_utf8_lossy(&node.data).trim().to_owned();
    Entry { node: node.path, data, side, holds }
}

/// Curator's read-write rules on a queue in order: a writer holds when it is first, a reader
/// when no writer is ahead of it (a writer's own downgrade is not told apart: it shows waiting).
fn read_write_roles(mut entries: Vec<Entry>) -> Vec<Entry> {
    let mut writer_ahead = false;
    for (position, entry) in entries.iter_mut().enumerate() {
        if entry.node.contains("__WRIT__") {
            entry.side = Some("write");
            entry.holds = position == 0;
            writer_ahead = true;
        } else {
            entry.side = Some("read");
            entry.holds = !writer_ahead;
        }
    }
    entries
}

/// Prints each queue on `path`; exit 0 when someone holds, 1 when nobody does.
pub async fn list(client: &Client, path: &str, as_json: bool) -> Result<ExitCode, Failure> {
    let mut queues = Vec::new();
    for kind in kinds_present(client, path).await? {
        queues.push((kind, queue(client, path, kind).await?));
    }
    let held = queues.iter().any(|(_, entries)| entries.iter().any(|entry| entry.holds));
    if as_json {
        println!("{}", to_json(path, held, &queues));
    } else {
        print_text(path, &queues);
    }
    Ok(if held { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

fn to_json(path: &str, held: bool, queues: &[(Kind, Vec<Entry>)]) -> serde_json::Value {
    let queues: Vec<_> = queues
        .iter()
        .map(|(kind, entries)| {
            let nodes: Vec<_> = entries
                .iter()
                .map(|entry| {
                    let mut node = json!({
                        "node": entry.node,
                        "role": if entry.holds { "holder" } else { "waiter" },
                        "data": entry.data,
                    });
                    if let Some(side) = entry.side {
                        node["side"] = json!(side);
                    }
                    node
                })
                .collect();
            json!({ "kind": kind.name(), "nodes": nodes })
        })
        .collect();
    json!({ "path": path, "held": held, "queues": queues })
}

fn print_text(path: &str, queues: &[(Kind, Vec<Entry>)]) {
    if queues.is_empty() {
        println!("{path}: nobody holds or waits");
    }
    for (kind, entries) in queues {
        println!("{path}: {kind}");
        for entry in entries {
            let role = if entry.holds { "holder" } else { "waiter" };
            println!("  {role:<6}  {:<5}  {}  {}", entry.side.unwrap_or(""), entry.node, entry.data);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &str) -> Entry {
        Entry { node: format!("/p/{name}"), data: String::new(), side: None, holds: false }
    }

    #[test]
    fn readers_before_the_first_writer_hold() {
        let queue =
            vec![node("_c_a-__READ__1"), node("_c_b-__READ__2"), node("_c_c-__WRIT__3"), node("_c_d-__READ__4")];
        let holds: Vec<bool> = read_write_roles(queue).iter().map(|entry| entry.holds).collect();
        assert_eq!(holds, [true, true, false, false]);
    }

    #[test]
    fn a_writer_holds_only_first() {
        let queue = vec![node("_c_a-__WRIT__1"), node("_c_b-__WRIT__2"), node("_c_c-__READ__3")];
        let holds: Vec<bool> = read_write_roles(queue).iter().map(|entry| entry.holds).collect();
        assert_eq!(holds, [true, false, false]);
    }
}
