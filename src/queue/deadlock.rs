//! Deadlocks across processes, read from ZooKeeper: the lock folders under a root read as a
//! wait-for graph of tasks and sessions (`rules/wait_for.rs`), its rings found
//! ([`find_deadlocks`], what `zklock deadlocks` prints), and the look a waiting acquire takes at
//! them when it was built to fail on a deadlock ([`DeadlockWatch`]).

use std::collections::BTreeSet;
use std::time::Instant;

use zookeeper_client::Client;

use super::listing::{children_or_none, in_queue_order, read_nodes};
use crate::client::retry::retry_transient;
use crate::error::{Deadlock, Error, Result};
use crate::options::DeadlockCheck;
use crate::rules::lock_kind::LockKind;
use crate::rules::naming::{Schema, KAZOO_MUTEX, LATCH, LEASE, MUTEX, READ};
use crate::rules::owner_tag::OwnerTag;
use crate::rules::wait_for::{common, cycles, graph, victim, whole_sessions, Graph, Node, Session};

/// The most deadlocks one read reports: a few tell an operator where to start, and an acquire
/// needs only the ones it is on.
const MOST_DEADLOCKS: usize = 100;

/// Every schema whose nodes are queue nodes, not folders to walk into (an ephemeral node has no
/// children): the locks', an election's and a semaphore's leases.
const QUEUE_NODES: [Schema; 5] = [MUTEX, KAZOO_MUTEX, READ, LATCH, LEASE];

/// What [`find_deadlocks`] found under a root.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct DeadlockReport {
    /// How many locks were read: each lock path once per kind of lock with nodes in it (a
    /// mutex, a read-write lock, a kazoo lock).
    pub locks_read: usize,
    /// The deadlocks, each once (at most 100).
    pub deadlocks: Vec<Deadlock>,
}

/// Finds the deadlocks among the locks under `root`: rings of tasks (or sessions), each queued
/// on a lock (a mutex, either side of a read-write lock, a kazoo lock, a semaphore's `locks`
/// gate) that the next one holds, so that none can go on until one of them gives up. `root`
/// itself may be a lock; every folder under it is read.
///
/// A task is told by the owner tag that a lock built with
/// [`fail_on_deadlock`](crate::MutexBuilder::fail_on_deadlock) writes into the uuid of each
/// node it creates; a session with a node that carries none is one vertex, read whole (see
/// [`Deadlock`]). A task (or session) waiting on a lock it holds itself through another node
/// is no edge. A semaphore's leases and an election's participants are left out: a waiter
/// there goes on when any holder lets go, or waits for leadership, not for a lock.
///
/// It costs a `sync`, one listing per folder and one multi-read per lock; when a ring is
/// suspected, the locks on it are read once more, and a ring is reported only if each of its
/// waits was seen both times: then they all stood at one moment (a holder holds until its node
/// goes, a waiter waits until it holds or goes), and no ring is made up of reads taken at
/// different times. At most 100 rings are reported.
///
/// # Errors
/// [`Error::SessionExpired`], [`Error::SessionClosed`], or [`Error::ZooKeeper`] (for example
/// `NoAuth` on a folder the session may not list).
///
/// # Examples
///
/// ```no_run
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let client = zklock::zookeeper_client::Client::connect("127.0.0.1:2181").await?;
/// for deadlock in zklock::find_deadlocks(&client, "/app/locks").await?.deadlocks {
///     for hop in &deadlock.hops {
///         for wait in &hop.waits {
///             eprintln!("{:#x} waits on {} held by {:#x}", hop.waiter_session, wait.lock, hop.holder_session);
///         }
///     }
/// }
/// # Ok(())
/// # }
/// ```
///
/// # Cancel safety
/// Cancel safe: it only reads.
pub async fn find_deadlocks(client: &Client, root: &str) -> Result<DeadlockReport> {
    let first = Read::locks(client, &lock_folders(client, root).await?).await?;
    let locks_read = first.read.len();
    let whole = first.whole_sessions();
    let first_graph = first.graph(&whole);
    let suspects = cycles(&first_graph, MOST_DEADLOCKS);
    if suspects.is_empty() {
        return Ok(DeadlockReport { locks_read, deadlocks: suspects });
    }
    let on_a_ring = |lock: &&(String, LockKind)| suspects.iter().flat_map(Deadlock::waits).any(|w| w.lock == lock.0);
    let again: Vec<(String, LockKind)> = first.read.iter().filter(on_a_ring).cloned().collect();
    let second = Read::locks(client, &again).await?;
    Ok(DeadlockReport { locks_read, deadlocks: cycles(&common(&first_graph, &second.graph(&whole)), MOST_DEADLOCKS) })
}

/// Every lock under `root` (itself included) with its kind, walking every child that is not a
/// queue node; a folder with several kinds of nodes is one lock of each.
async fn lock_folders(client: &Client, root: &str) -> Result<Vec<(String, LockKind)>> {
    retry_transient(|| client.sync(root)).await.or_else(|err| match err {
        zookeeper_client::Error::NoNode => Ok(()),
        err => Err(Error::zookeeper("sync", root, err)),
    })?;
    let mut found = Vec::new();
    let mut pending = vec![root.to_owned()];
    while let Some(path) = pending.pop() {
        let children = children_or_none(client, &path).await?;
        for kind in LockKind::ALL {
            if !kind.schema().contenders(children.clone()).is_empty() {
                found.push((path.clone(), kind));
            }
        }
        let is_queue_node = |child: &String| QUEUE_NODES.iter().any(|schema| schema.is_queue_node(child));
        let folders = children.iter().filter(|child| !is_queue_node(child));
        pending.extend(folders.map(|child| format!("{}/{child}", path.trim_end_matches('/'))));
    }
    found.sort();
    Ok(found)
}

/// The queues of some locks as read, each node with its session and whether it holds.
struct Read {
    read: Vec<(String, LockKind)>,
    queues: Vec<(String, Vec<Node>)>,
}

impl Read {
    /// Reads each of `locks`: a listing, then one multi-read of its nodes' data and stats. A
    /// node gone between the two neither holds nor waits any more; one that is not ephemeral
    /// (session 0) is nobody's.
    async fn locks(client: &Client, locks: &[(String, LockKind)]) -> Result<Read> {
        let mut queues = Vec::with_capacity(locks.len());
        for (path, kind) in locks {
            let order = in_queue_order(path, kind.schema(), children_or_none(client, path).await?);
            let nodes = read_nodes(client, path, order).await?;
            let names: Vec<String> = nodes.iter().map(|(node, _)| node.path.clone()).collect();
            let holds = kind.holders(&names);
            let nodes = nodes.into_iter().zip(holds).filter(|((_, stat), _)| stat.ephemeral_owner != 0);
            let nodes = nodes.map(|((node, stat), holds)| Node {
                owner: OwnerTag::of_node(&node.path),
                path: node.path,
                session: stat.ephemeral_owner,
                czxid: stat.czxid,
                data: node.data,
                holds,
            });
            queues.push((path.clone(), nodes.collect()));
        }
        Ok(Read { read: locks.to_vec(), queues })
    }

    fn queues(&self) -> impl Iterator<Item = (&str, &[Node])> {
        self.queues.iter().map(|(lock, nodes)| (lock.as_str(), nodes.as_slice()))
    }

    /// The sessions this read shows a node without an owner tag of: read whole, in this read
    /// and in the one that confirms it.
    fn whole_sessions(&self) -> BTreeSet<Session> {
        whole_sessions(self.queues())
    }

    fn graph(&self, whole: &BTreeSet<Session>) -> Graph {
        graph(self.queues(), whole)
    }
}

/// A waiting acquire's look for a deadlock it is part of: [`find_deadlocks`] under the
/// check's root when the wait starts, then once a period while it waits.
#[derive(Debug)]
pub(crate) struct DeadlockWatch<'a> {
    check: &'a DeadlockCheck,
    next: Instant,
}

impl<'a> DeadlockWatch<'a> {
    /// A watch whose first look is due at once (it is made when the acquire starts waiting).
    pub(crate) fn new(check: &'a DeadlockCheck) -> Self {
        DeadlockWatch { check, next: Instant::now() }
    }

    /// Looks, as often as the check says, until a deadlock is found whose victim is our node
    /// `node` (a full path: tasks of one process share a session, so the node tells which wait
    /// is ours), and returns [`Error::Deadlock`] with it. A deadlock we are on but whose victim
    /// is another wait is left to that one. A failed look is logged and tried again a period
    /// later: the wait itself learns of its session's end.
    ///
    /// # Cancel safety
    /// Cancel safe, and dropping it stops the looking: a look under way is cut short, and the
    /// next one is due a period after it began.
    pub(crate) async fn until_victim(&mut self, client: &Client, node: &str) -> Error {
        loop {
            tokio::time::sleep_until(self.next.into()).await;
            // Due a period after this one began, even if it is cut short: a queue that moves
            // ends a wait after wait, and must not start a look at each.
            self.next = Instant::now() + self.check.period;
            let found = find_deadlocks(client, &self.check.root).await;
            match found {
                Ok(report) => {
                    if let Some(ours) =
                        report.deadlocks.into_iter().find(|deadlock| victim(deadlock).waiter_node == node)
                    {
                        tracing::info!(node, root = %self.check.root, sessions = ours.hops.len(), "in a deadlock; giving up to break it");
                        return Error::Deadlock(Box::new(ours));
                    }
                }
                Err(err) => {
                    tracing::debug!(root = %self.check.root, error = %err.with_causes(), "looking for deadlocks failed");
                }
            }
        }
    }
}
