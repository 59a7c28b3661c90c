//! `zklock deadlocks ROOT`: sessions under ROOT that wait on each other in a ring, each queued
//! on a lock the next one holds, so that none of them can go on.

use std::collections::BTreeMap;
use std::process::ExitCode;

use serde_json::json;
use zookeeper_client::{Client, Error as ZkError};

use crate::exit::Failure;
use crate::layout::{kinds_present, Kind};
use crate::queue::{add_stats, queue, session_id};
use crate::stdout;
use crate::wait_for::{common, cycles, graph, Cycle, Graph, Node, Session};

/// The kinds whose waits are read. A semaphore's waiter goes on when any one lease is let go,
/// so a ring through it is no deadlock unless every lease holder is stuck (its `locks/` folder,
/// a plain mutex, is read as one); an election's participants wait for leadership, not a lock.
const LOCKS: [Kind; 3] = [Kind::ReadWrite, Kind::Mutex, Kind::Kazoo];

/// The most cycles reported: a few tell the operator where to start.
const MOST_CYCLES: usize = 100;

/// The queues read, each lock's nodes with their sessions, and who each session is (the data
/// of one of its nodes: pid and host for zklock).
#[derive(Default)]
struct Read {
    locks: Vec<(String, Vec<Node>)>,
    who: BTreeMap<Session, String>,
}

impl Read {
    fn graph(&self) -> Graph {
        graph(self.locks.iter().map(|(lock, nodes)| (lock.as_str(), nodes.as_slice())))
    }
}

/// Prints each cycle of waits under `root`; exit 0 when there is none, 1 when there is one.
/// The locks on a cycle are read a second time, and a cycle is reported only if each of its
/// waits was seen both times (`wait_for::common`): then they all stood at one moment.
pub async fn deadlocks(client: &Client, root: &str, as_json: bool) -> Result<ExitCode, Failure> {
    let locks = lock_paths(client, root).await?;
    let first = read(client, &locks).await?;
    let suspects = cycles(&first.graph(), MOST_CYCLES);
    let on_a_cycle =
        |lock: &&(String, Kind)| suspects.iter().flatten().flat_map(|hop| &hop.waits).any(|wait| wait.lock == lock.0);
    let again: Vec<(String, Kind)> = locks.iter().filter(on_a_cycle).cloned().collect();
    let second = read(client, &again).await?;
    let found = cycles(&common(&first.graph(), &second.graph()), MOST_CYCLES);
    let text = if as_json {
        to_json(root, locks.len(), &found, &first.who)
    } else {
        to_text(root, locks.len(), &found, &first.who)
    };
    stdout::line(&text)?;
    Ok(if found.is_empty() { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

/// Every lock under `root` (itself included) and its kind, walking every child that is not a
/// participant's node.
async fn lock_paths(client: &Client, root: &str) -> Result<Vec<(String, Kind)>, Failure> {
    let mut found = Vec::new();
    let mut pending = vec![root.to_owned()];
    while let Some(path) = pending.pop() {
        let kinds = kinds_present(client, &path).await?;
        found.extend(kinds.into_iter().filter(|kind| LOCKS.contains(kind)).map(|kind| (path.clone(), kind)));
        let children = match client.list_children(&path).await {
            Ok(children) => children,
            Err(ZkError::NoNode) => Vec::new(),
            Err(err) => return Err(Failure::zookeeper("list", &path, err)),
        };
        let folders = children.into_iter().filter(|child| Kind::of_node(child).is_none() && !child.contains("-lease-"));
        pending.extend(folders.map(|child| format!("{}/{child}", path.trim_end_matches('/'))));
    }
    found.sort();
    Ok(found)
}

/// The queues of `locks`, each node with its session (its ephemeralOwner, read by `add_stats` in
/// one pipelined round of stat requests per lock). A node gone meanwhile neither holds nor
/// waits any more.
async fn read(client: &Client, locks: &[(String, Kind)]) -> Result<Read, Failure> {
    let mut read = Read::default();
    for (path, kind) in locks {
        let mut entries = queue(client, path, *kind).await?;
        add_stats(client, &mut entries).await;
        let mut nodes = Vec::new();
        for entry in entries {
            let Some(session) = entry.session.filter(|session| *session != 0) else { continue };
            let who = read.who.entry(session).or_default();
            if who.is_empty() {
                who.clone_from(&entry.data);
            }
            nodes.push(Node { path: entry.node, session, holds: entry.holds });
        }
        read.locks.push((path.clone(), nodes));
    }
    Ok(read)
}

fn to_json(root: &str, locks: usize, cycles: &[Cycle], who: &BTreeMap<Session, String>) -> String {
    let deadlocks: Vec<_> = cycles
        .iter()
        .map(|cycle| {
            let sessions: Vec<_> = cycle
                .iter()
                .map(|hop| json!({ "session": session_id(hop.waiter), "data": who.get(&hop.waiter) }))
                .collect();
            let waits: Vec<_> = cycle
                .iter()
                .flat_map(|hop| hop.waits.iter().map(move |wait| (hop, wait)))
                .map(|(hop, wait)| {
                    json!({
                        "waiter": session_id(hop.waiter),
                        "holder": session_id(hop.holder),
                        "lock": wait.lock,
                        "waiter_node": wait.waiter_node,
                        "holder_node": wait.holder_node,
                    })
                })
                .collect();
            json!({ "sessions": sessions, "waits": waits })
        })
        .collect();
    json!({ "root": root, "locks": locks, "deadlocked": !cycles.is_empty(), "deadlocks": deadlocks }).to_string()
}

fn to_text(root: &str, locks: usize, cycles: &[Cycle], who: &BTreeMap<Session, String>) -> String {
    if cycles.is_empty() {
        return format!("{root}: no deadlock ({locks} locks read)");
    }
    let named = |id: Session| match who.get(&id).filter(|data| !data.is_empty()) {
        Some(data) => format!("{} ({data})", session_id(id)),
        None => session_id(id),
    };
    let mut lines = Vec::new();
    for cycle in cycles {
        let ring: Vec<String> = cycle.iter().chain(cycle.first()).map(|hop| session_id(hop.waiter)).collect();
        lines.push(format!("deadlock of {} sessions: {}", cycle.len(), ring.join(" -> ")));
        for hop in cycle {
            for wait in &hop.waits {
                lines.push(format!("  {} waits on {} ({})", named(hop.waiter), wait.lock, wait.waiter_node));
                lines.push(format!("    held by {} ({})", named(hop.holder), wait.holder_node));
            }
        }
    }
    lines.join("\n")
}
