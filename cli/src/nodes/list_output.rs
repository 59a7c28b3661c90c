//! How `zklock list` shows the queues: text for people, JSON for scripts (who holds, with the
//! fencing token, session, since when, pid and host as fields). Each queue is in queue order,
//! holders first.

use std::time::{Duration, SystemTime};

use serde_json::json;

use crate::nodes::layout::Kind;
use crate::nodes::queue::{session_id, Entry};
use crate::output::duration::{human, whole_seconds};
use crate::output::json_schema::LIST;

/// One queue on a lock path: the path `zklock list` was given, or a lock under it.
#[derive(Debug)]
pub struct Queue {
    pub path: String,
    pub kind: Kind,
    pub entries: Vec<Entry>,
    /// The maximum a kazoo semaphore's path stores, for its queue's `leases`.
    pub stored_leases: Option<u32>,
}

pub fn to_json(path: &str, held: bool, queues: &[Queue], now: SystemTime) -> serde_json::Value {
    let queues: Vec<_> = queues
        .iter()
        .map(|Queue { path, kind, entries, stored_leases }| {
            let nodes: Vec<_> = entries.iter().map(|entry| node_json(entry, now)).collect();
            let mut queue = json!({ "path": path, "kind": kind.name(), "nodes": nodes });
            if *kind == Kind::Semaphore {
                queue["leases"] = json!(entries.iter().filter_map(|entry| entry.owner()?.leases).max());
            }
            if *kind == Kind::KazooSemaphore {
                queue["leases"] = json!(stored_leases);
            }
            queue
        })
        .collect();
    json!({ "schema": LIST.name, "path": path, "held": held, "queues": queues })
}

fn node_json(entry: &Entry, now: SystemTime) -> serde_json::Value {
    let owner = entry.owner();
    let created_ms = entry.created.duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default();
    let mut node = json!({
        "node": entry.node,
        "role": role(entry),
        "data": entry.data,
        "token": entry.token,
        "session": session_id(entry.session),
        "created_ms": created_ms.as_millis() as u64,
        "for_ms": age(entry, now).as_millis() as u64,
        "pid": owner.as_ref().map(|owner| owner.pid),
        "host": owner.as_ref().map(|owner| owner.host.as_str()),
        "max_hold_ms": owner.as_ref().and_then(|owner| owner.max_hold).map(|bound| bound.as_millis() as u64),
    });
    if let Some(side) = entry.side {
        node["side"] = json!(side);
    }
    node
}

fn role(entry: &Entry) -> &'static str {
    if entry.holds {
        "holder"
    } else {
        "waiter"
    }
}

/// How long the node has stood at `now`: a holder has held at most that long (exactly, when it
/// took a free lock), a waiter has waited that long.
fn age(entry: &Entry, now: SystemTime) -> Duration {
    now.duration_since(entry.created).unwrap_or_default()
}

/// How long the node has stood, as the text shows it: "held 12s of at most 30s" for a holder
/// whose node carries its bound (`--max-hold`).
fn held_for(entry: &Entry, now: SystemTime) -> String {
    let age = whole_seconds(age(entry, now));
    match entry.owner().and_then(|owner| owner.max_hold).filter(|_| entry.holds) {
        Some(bound) => format!("held {age} of at most {}", human(bound)),
        None => age,
    }
}

pub fn to_text(path: &str, queues: &[Queue], now: SystemTime) -> String {
    let mut lines = Vec::new();
    if queues.is_empty() {
        lines.push(format!("{path}: nobody holds or waits"));
    }
    for Queue { path, kind, entries, .. } in queues {
        lines.push(format!("{path}: {kind}"));
        for entry in entries {
            let token = entry.token;
            let side = entry.side.unwrap_or("");
            let age = held_for(entry, now);
            let session = session_id(entry.session);
            lines.push(format!(
                "  {:<6}  {side:<5}  {}  {token:>6}  {age:>6}  {session}  {}",
                role(entry),
                entry.node,
                entry.data
            ));
        }
    }
    lines.join("\n")
}
