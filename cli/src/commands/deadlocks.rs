//! `zklock deadlocks ROOT`: sessions under ROOT that wait on each other in a ring, each queued
//! on a lock the next one holds, so that none of them can go on. zklock finds them
//! (`zklock::find_deadlocks`); this prints them.

use std::collections::BTreeMap;
use std::process::ExitCode;

use serde_json::json;
use zklock::{find_deadlocks, Deadlock};
use zookeeper_client::Client;

use crate::exit::Failure;
use crate::queue::session_id;
use crate::stdout;

/// Prints each deadlock under `root`; exit 0 when there is none, 1 when there is one.
pub async fn deadlocks(client: &Client, root: &str, as_json: bool) -> Result<ExitCode, Failure> {
    let report = find_deadlocks(client, root).await.map_err(Failure::from_lock_error)?;
    let found = &report.deadlocks;
    let who = who(found);
    let text = if as_json {
        to_json(root, report.locks_read, found, &who)
    } else {
        to_text(root, report.locks_read, found, &who)
    };
    stdout::line(&text)?;
    Ok(if found.is_empty() { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

/// Who each session on a ring is: the data of its waiting node (pid and host for zklock).
fn who(deadlocks: &[Deadlock]) -> BTreeMap<i64, String> {
    let mut who = BTreeMap::new();
    for hop in deadlocks.iter().flat_map(|deadlock| &deadlock.hops) {
        if let Some(wait) = hop.waits.first() {
            who.entry(hop.waiter_session)
                .or_insert_with(|| String::from_utf8_lossy(&wait.waiter_data).trim().to_owned());
        }
    }
    who
}

fn to_json(root: &str, locks: usize, deadlocks: &[Deadlock], who: &BTreeMap<i64, String>) -> String {
    let deadlocks: Vec<_> = deadlocks
        .iter()
        .map(|deadlock| {
            let sessions: Vec<_> = deadlock
                .hops
                .iter()
                .map(|hop| {
                    json!({
                        "session": session_id(hop.waiter_session),
                        "task": hop.waiter_owner.map(task_id),
                        "data": who.get(&hop.waiter_session),
                    })
                })
                .collect();
            let waits: Vec<_> = deadlock
                .hops
                .iter()
                .flat_map(|hop| hop.waits.iter().map(move |wait| (hop, wait)))
                .map(|(hop, wait)| {
                    json!({
                        "waiter": session_id(hop.waiter_session),
                        "waiter_task": hop.waiter_owner.map(task_id),
                        "holder": session_id(hop.holder_session),
                        "holder_task": hop.holder_owner.map(task_id),
                        "lock": wait.lock,
                        "waiter_node": wait.waiter_node,
                        "holder_node": wait.holder_node,
                    })
                })
                .collect();
            json!({ "sessions": sessions, "waits": waits })
        })
        .collect();
    json!({ "root": root, "locks": locks, "deadlocked": !deadlocks.is_empty(), "deadlocks": deadlocks }).to_string()
}

fn to_text(root: &str, locks: usize, deadlocks: &[Deadlock], who: &BTreeMap<i64, String>) -> String {
    if deadlocks.is_empty() {
        return format!("{root}: no deadlock ({locks} locks read)");
    }
    // A session, or one task of it when its nodes carry owner tags (a library built with
    // `fail_on_deadlock`): then two tasks of one session may both be on the ring.
    let vertex = |session: i64, owner: Option<u64>| match owner {
        Some(owner) => format!("{} task {}", session_id(session), task_id(owner)),
        None => session_id(session),
    };
    let named = |session: i64, owner: Option<u64>| match who.get(&session).filter(|data| !data.is_empty()) {
        Some(data) => format!("{} ({data})", vertex(session, owner)),
        None => vertex(session, owner),
    };
    let mut lines = Vec::new();
    for deadlock in deadlocks {
        let ring: Vec<String> = deadlock
            .hops
            .iter()
            .chain(deadlock.hops.first())
            .map(|hop| vertex(hop.waiter_session, hop.waiter_owner))
            .collect();
        let tasks = deadlock.hops.iter().any(|hop| hop.waiter_owner.is_some());
        let of = if tasks { "tasks or sessions" } else { "sessions" };
        lines.push(format!("deadlock of {} {of}: {}", deadlock.hops.len(), ring.join(" -> ")));
        for hop in &deadlock.hops {
            for wait in &hop.waits {
                let waiter = named(hop.waiter_session, hop.waiter_owner);
                lines.push(format!("  {waiter} waits on {} ({})", wait.lock, wait.waiter_node));
                lines.push(format!(
                    "    held by {} ({})",
                    named(hop.holder_session, hop.holder_owner),
                    wait.holder_node
                ));
            }
        }
    }
    lines.join("\n")
}

/// An owner tag as the node's uuid shows it: its first 12 hex digits.
fn task_id(owner: u64) -> String {
    format!("{owner:012x}")
}
