//! `zklock list`: each queue of a lock path, who holds and who waits; on a path that is no
//! lock (a folder of locks), the queues of every lock under it.

use std::collections::{BTreeSet, VecDeque};
use std::process::ExitCode;
use std::time::SystemTime;

use zookeeper_client::{Client, Error as ZkError};

use crate::nodes::layout::{kazoo_stored_leases, kinds_present, Kind};
use crate::nodes::list_output::{to_json, to_text, Queue};
use crate::nodes::queue::queue;
use crate::output::exit::Failure;
use crate::output::{stderr, stdout};

/// How many paths under a folder `list` looks at, at most: a bound on a tree nobody meant to
/// list whole (each costs a few requests).
const FOLDER_LIMIT: usize = 10_000;

/// Prints each queue on `path` (or, on a folder, of each lock under it); exit 0 when someone
/// holds, 1 when nobody does.
pub async fn list(client: &Client, path: &str, as_json: bool) -> Result<ExitCode, Failure> {
    let kinds = kinds_present(client, path).await?;
    let locks = match kinds.is_empty() {
        true => locks_under(client, path).await?,
        false => vec![(path.to_owned(), kinds)],
    };
    let mut queues = Vec::new();
    for (lock, kinds) in locks {
        for kind in kinds {
            let entries = queue(client, &lock, kind).await?;
            let stored_leases = match kind == Kind::KazooSemaphore {
                true => kazoo_stored_leases(client, &lock).await?,
                false => None,
            };
            queues.push(Queue { path: lock.clone(), kind, entries, stored_leases });
        }
    }
    let held = queues.iter().any(|queue| queue.entries.iter().any(|entry| entry.holds));
    let now = SystemTime::now();
    let text = if as_json { to_json(path, held, &queues, now).to_string() } else { to_text(path, &queues, now) };
    stdout::line(&text)?;
    Ok(if held { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

/// The locks under `folder` (a path with no lock of its own), in path order, with the kinds on
/// each; a lock's own nodes are not looked into. At most [`FOLDER_LIMIT`] paths are looked at
/// (said on stderr when there were more).
async fn locks_under(client: &Client, root: &str) -> Result<Vec<(String, BTreeSet<Kind>)>, Failure> {
    let mut locks = Vec::new();
    let mut folders = VecDeque::from([root.to_owned()]);
    let mut looked = 0;
    while let Some(folder) = folders.pop_front() {
        let mut children = match client.list_children(&folder).await {
            Ok(children) => children,
            Err(ZkError::NoNode) => continue,
            Err(err) => return Err(Failure::zookeeper("list", &folder, err)),
        };
        children.sort();
        for child in children {
            let path = format!("{}/{child}", folder.trim_end_matches('/'));
            if path == "/zookeeper" {
                continue;
            }
            if looked == FOLDER_LIMIT {
                stderr::warn(&format!("listed the locks among the first {FOLDER_LIMIT} paths under {root} only"));
                return Ok(sorted(locks));
            }
            looked += 1;
            match kinds_present(client, &path).await? {
                kinds if kinds.is_empty() => folders.push_back(path),
                kinds => locks.push((path, kinds)),
            }
        }
    }
    Ok(sorted(locks))
}

fn sorted(mut locks: Vec<(String, BTreeSet<Kind>)>) -> Vec<(String, BTreeSet<Kind>)> {
    locks.sort_by(|(one, _), (other, _)| one.cmp(other));
    locks
}
