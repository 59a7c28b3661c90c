//! `zklock deadlocks ROOT`: sessions (or tasks, or chains) under ROOT that wait on each other in
//! a ring, each queued on a lock behind a node of the next one, so that none of them can go on.
//! zklock finds them (`zklock::deadlock::find_deadlocks`); this prints them, each certain (every
//! member a task or a chain told by its tag) or only possible (through a session read whole), and
//! exits with what it found (see [`Found`]).

use std::collections::BTreeMap;
use std::process::ExitCode;

use serde_json::json;
use zklock::deadlock::{find_deadlocks, Deadlock, DeadlockHop, DeadlockReport, LockWait};
use zookeeper_client::Client;

use crate::nodes::queue::session_id;
use crate::output::exit::Failure;
use crate::output::json_schema::DEADLOCKS;
use crate::output::stdout;

/// The version of the JSON's layout, also the number of its `schema` (`json_schema.rs`): raised
/// when a field changes meaning or goes. 2: a ring's member may be a chain (`chain`, with
/// `session` the one of its first wait), and each wait names its own two sessions (`waiter`,
/// `holder`) and chains.
const JSON_VERSION: u32 = 2;

/// What the command found, and the exit code that says it (the manual lists them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Found {
    /// Locks read, no ring: 0.
    None,
    /// At least one certain ring: 1.
    Certain,
    /// Possible rings only (each through a session read whole): 2.
    Possible,
    /// The root does not exist, or holds no lock: 3. A mistyped root must not look healthy.
    NoLocks,
}

impl Found {
    fn of(report: &DeadlockReport) -> Found {
        if report.locks_read == 0 {
            Found::NoLocks
        } else if report.certain().next().is_some() {
            Found::Certain
        } else if report.deadlocks.is_empty() {
            Found::None
        } else {
            Found::Possible
        }
    }

    fn code(self) -> u8 {
        match self {
            Found::None => 0,
            Found::Certain => 1,
            Found::Possible => 2,
            Found::NoLocks => 3,
        }
    }

    /// Its name in the JSON's `found`.
    fn name(self) -> &'static str {
        match self {
            Found::None => "none",
            Found::Certain => "certain",
            Found::Possible => "possible",
            Found::NoLocks => "no locks",
        }
    }
}

/// Prints each deadlock under `root`; exits with [`Found`]'s code.
pub async fn deadlocks(client: &Client, root: &str, as_json: bool) -> Result<ExitCode, Failure> {
    let report = find_deadlocks(client, root).await.map_err(Failure::from_lock_error)?;
    let found = Found::of(&report);
    let who = who(&report.deadlocks);
    let text = if as_json { to_json(root, &report, found, &who) } else { to_text(root, &report, &who) };
    stdout::line(&text)?;
    Ok(ExitCode::from(found.code()))
}

/// A member of a ring: a session read whole, a task of a session, or a chain of `zklock`s
/// (whose processes have sessions of their own).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Member {
    Session(i64),
    Task(i64, u64),
    Chain(u64),
}

impl Member {
    fn of(session: i64, owner: Option<u64>, chain: Option<u64>) -> Member {
        match (owner, chain) {
            (_, Some(chain)) => Member::Chain(chain),
            (Some(owner), None) => Member::Task(session, owner),
            (None, None) => Member::Session(session),
        }
    }

    fn waiter(hop: &DeadlockHop) -> Member {
        Member::of(hop.waiter_session, hop.waiter_owner, hop.waiter_chain)
    }

    fn holder(hop: &DeadlockHop) -> Member {
        Member::of(hop.holder_session, hop.holder_owner, hop.holder_chain)
    }

    /// What a ring of such members is of, in the plural: "tasks", "chains or sessions", ...
    fn kinds(ring: &[Member]) -> String {
        let tasks = ring.iter().any(|member| matches!(member, Member::Task(..)));
        let chains = ring.iter().any(|member| matches!(member, Member::Chain(_)));
        let sessions = ring.iter().any(|member| matches!(member, Member::Session(_)));
        let kinds = [("tasks", tasks), ("chains", chains), ("sessions", sessions)];
        let present: Vec<&str> = kinds.iter().filter(|(_, present)| *present).map(|(name, _)| *name).collect();
        present.join(" or ")
    }

    /// The member as the ring's line names it.
    fn name(self) -> String {
        match self {
            Member::Session(session) => session_id(session),
            Member::Task(session, owner) => format!("{} task {}", session_id(session), hex12(owner)),
            Member::Chain(chain) => format!("chain {}", hex12(chain)),
        }
    }

    /// The member as one of its waits names it: a chain with the session of that wait's node.
    fn at(self, session: i64) -> String {
        match self {
            Member::Chain(chain) => format!("{} chain {}", session_id(session), hex12(chain)),
            _ => self.name(),
        }
    }
}

/// Who each waiting session on a ring is: the data of its waiting node (pid and host for zklock).
fn who(deadlocks: &[Deadlock]) -> BTreeMap<i64, String> {
    let mut who = BTreeMap::new();
    for wait in deadlocks.iter().flat_map(Deadlock::waits) {
        who.entry(wait.waiter_session).or_insert_with(|| String::from_utf8_lossy(&wait.waiter_data).trim().to_owned());
    }
    who
}

fn to_json(root: &str, report: &DeadlockReport, found: Found, who: &BTreeMap<i64, String>) -> String {
    let deadlocks: Vec<_> = report
        .deadlocks
        .iter()
        .map(|deadlock| {
            let sessions: Vec<_> = deadlock
                .hops
                .iter()
                .map(|hop| {
                    json!({
                        "session": session_id(hop.waiter_session),
                        "task": hop.waiter_owner.map(hex12),
                        "chain": hop.waiter_chain.map(hex12),
                        "data": who.get(&hop.waiter_session),
                    })
                })
                .collect();
            let waits: Vec<_> = deadlock
                .hops
                .iter()
                .flat_map(|hop| hop.waits.iter().map(move |wait| (hop, wait)))
                .map(|(hop, wait): (&DeadlockHop, &LockWait)| {
                    json!({
                        "waiter": session_id(wait.waiter_session),
                        "waiter_task": hop.waiter_owner.map(hex12),
                        "waiter_chain": hop.waiter_chain.map(hex12),
                        "holder": session_id(wait.holder_session),
                        "holder_task": hop.holder_owner.map(hex12),
                        "holder_chain": hop.holder_chain.map(hex12),
                        "lock": wait.lock,
                        "waiter_node": wait.waiter_node_path,
                        "holder_node": wait.holder_node_path,
                        "holder_waiting": wait.holder_waiting,
                    })
                })
                .collect();
            json!({ "certain": deadlock.is_certain(), "sessions": sessions, "waits": waits })
        })
        .collect();
    json!({
        "schema": DEADLOCKS.name,
        "version": JSON_VERSION,
        "root": root,
        "root_exists": report.root_exists,
        "locks": report.locks_read,
        "found": found.name(),
        "deadlocked": found == Found::Certain,
        "deadlocks": deadlocks,
    })
    .to_string()
}

fn to_text(root: &str, report: &DeadlockReport, who: &BTreeMap<i64, String>) -> String {
    let (locks, deadlocks) = (report.locks_read, &report.deadlocks);
    if !report.root_exists {
        return format!("{root}: no such node, no lock read");
    }
    if locks == 0 {
        return format!("{root}: holds no locks (no mutex, read-write or kazoo lock under it)");
    }
    if deadlocks.is_empty() {
        return format!("{root}: no deadlock ({locks} locks read)");
    }
    // A member: a session; one task of it when its nodes carry owner tags (a library built with
    // `fail_on_deadlock`), then two tasks of one session may both be on the ring; or a chain of
    // `zklock`s, one owner across the sessions of its processes.
    let named = |member: Member, session: i64| match who.get(&session).filter(|data| !data.is_empty()) {
        Some(data) => format!("{} ({data})", member.at(session)),
        None => member.at(session),
    };
    let mut lines = Vec::new();
    for deadlock in deadlocks {
        let members: Vec<Member> = deadlock.hops.iter().map(Member::waiter).collect();
        let ring: Vec<String> = members.iter().chain(members.first()).map(|member| member.name()).collect();
        let (n, ring, of) = (deadlock.hops.len(), ring.join(" -> "), Member::kinds(&members));
        if deadlock.is_certain() {
            lines.push(format!("deadlock of {n} {of}: {ring}"));
        } else {
            lines.push(format!("possible deadlock of {n} {of}: {ring}"));
            lines.push(
                "  (a session read whole: its nodes carry no owner tag, so the tasks of it that hold may not be \
                 the ones that wait)"
                    .to_owned(),
            );
        }
        for hop in &deadlock.hops {
            for wait in &hop.waits {
                let waiter = named(Member::waiter(hop), wait.waiter_session);
                lines.push(format!("  {waiter} waits on {} ({})", wait.lock, wait.waiter_node_path));
                let how = if wait.holder_waiting { "behind, waiting too," } else { "held by" };
                let holder = named(Member::holder(hop), wait.holder_session);
                lines.push(format!("    {how} {holder} ({})", wait.holder_node_path));
            }
        }
    }
    lines.join("\n")
}

/// An owner tag or a chain's id as the node's uuid shows it: its first 12 hex digits.
fn hex12(tag: u64) -> String {
    format!("{tag:012x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schema_name_carries_the_version() {
        assert_eq!(DEADLOCKS.name, format!("zklock.deadlocks/{JSON_VERSION}"));
    }
}
