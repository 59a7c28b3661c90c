//! How `zklock list` shows the queues: text for people, JSON for scripts (who holds, with the
//! fencing token, pid and host as fields).

use serde_json::json;

use crate::layout::Kind;
use crate::queue::Entry;

pub fn to_json(path: &str, held: bool, queues: &[(Kind, Vec<Entry>)]) -> serde_json::Value {
    let queues: Vec<_> = queues
        .iter()
        .map(|(kind, entries)| {
            let nodes: Vec<_> = entries.iter().map(node_json).collect();
            let mut queue = json!({ "kind": kind.name(), "nodes": nodes });
            if *kind == Kind::Semaphore {
                queue["leases"] = json!(entries.iter().filter_map(|entry| entry.owner()?.leases).max());
            }
            queue
        })
        .collect();
    json!({ "path": path, "held": held, "queues": queues })
}

fn node_json(entry: &Entry) -> serde_json::Value {
    let owner = entry.owner();
    let mut node = json!({
        "node": entry.node,
        "role": role(entry),
        "data": entry.data,
        "token": entry.token,
        "pid": owner.as_ref().map(|owner| owner.pid),
        "host": owner.as_ref().map(|owner| owner.host.as_str()),
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

pub fn to_text(path: &str, queues: &[(Kind, Vec<Entry>)]) -> String {
    let mut lines = Vec::new();
    if queues.is_empty() {
        lines.push(format!("{path}: nobody holds or waits"));
    }
    for (kind, entries) in queues {
        lines.push(format!("{path}: {kind}"));
        for entry in entries {
            let token = entry.token.map(|token| token.to_string()).unwrap_or_default();
            let side = entry.side.unwrap_or("");
            lines.push(format!("  {:<6}  {side:<5}  {}  {token}  {}", role(entry), entry.node, entry.data));
        }
    }
    lines.join("\n")
}
