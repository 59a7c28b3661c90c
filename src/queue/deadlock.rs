//! Deadlocks across processes, read from ZooKeeper: `find_deadlocks` and the wait's look.
//!
//! The lock folders under a root are read as a wait-for graph of tasks and sessions
//! (`rules/wait_for.rs`), its rings found ([`find_deadlocks`], what `zklock deadlocks` prints), and
//! the look a waiting acquire takes at them when it was built to fail on a deadlock
//! ([`DeadlockWatch`]).

use std::collections::BTreeSet;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::time::Instant;

use zookeeper_client::Client;

use super::listing::{children_or_none, in_queue_order, read_nodes};
use super::node::list_children;
use crate::client::retry::{retry_transient, RetryPolicy};
use crate::client::session::Connection;
use crate::error::{Deadlock, Error, Result};
use crate::options::DeadlockCheck;
use crate::rules::lock_kind::LockKind;
use crate::rules::naming::{Schema, KAZOO_MUTEX, KAZOO_READ, LATCH, LEASE, MUTEX, READ};
use crate::rules::owner_tag::{NodeMark, Tag};
use crate::rules::rings::{common, cycles, victim};
use crate::rules::wait_for::{graph, whole_sessions, Graph, Node, Session};

/// The most deadlocks one read reports: a few tell an operator where to start, and an acquire
/// needs only the ones it is on.
const MOST_DEADLOCKS: usize = 100;

/// Every schema whose nodes are queue nodes, not folders to walk into (an ephemeral node has no
/// children): the locks', an election's and a semaphore's leases.
const QUEUE_NODES: [Schema; 6] = [MUTEX, KAZOO_MUTEX, KAZOO_READ, READ, LATCH, LEASE];

/// What [`find_deadlocks`] found under a root.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct DeadlockReport {
    /// Whether the root exists. When it does not, nothing was read: a mistyped root says so
    /// here instead of looking like a healthy tree.
    pub root_exists: bool,
    /// How many locks were read: each lock path once per kind of lock with nodes in it (a
    /// mutex, a read-write lock, a kazoo lock). 0 for a root that holds no lock (a typo, or a
    /// tree of elections, semaphores' leases or data only).
    pub locks_read: usize,
    /// The deadlocks, each once (at most 100), certain and possible alike (see
    /// [`Deadlock::is_certain`]).
    pub deadlocks: Vec<Deadlock>,
}

impl DeadlockReport {
    /// The deadlocks that are certain: every vertex on the ring a task told by its owner tag.
    pub fn certain(&self) -> impl Iterator<Item = &Deadlock> {
        self.deadlocks.iter().filter(|deadlock| deadlock.is_certain())
    }
}

/// Finds the deadlocks among the locks under `root`: rings of tasks (or sessions), each queued
/// on a lock (a mutex, either side of a read-write lock, a kazoo lock, a semaphore's `locks`
/// gate) behind a node of the next one, holding or itself waiting ahead, so that none can go on
/// until one of them gives up. `root` itself may be a lock; every folder under it is read.
///
/// A task is told by the owner tag that a lock built with
/// [`fail_on_deadlock`](crate::MutexBuilder::fail_on_deadlock) writes into the uuid of each
/// node it creates; a session with a node that carries none is one vertex, read whole (see
/// [`Deadlock`]), and a ring through it is only possible, not certain
/// ([`Deadlock::is_certain`]). A task (or session) waiting on a lock it holds itself through
/// another node is no edge.
///
/// What is not read: a semaphore's leases (a waiter goes on when any lease is let go, whoever
/// holds the others) and elections. A participant of an election waits in a task of its own
/// that holds nothing but its place (zklock's election task, the executor thread of Curator's
/// `LeaderSelector`), so only later participants of the same election wait on it, and no ring
/// of tasks passes through an election: its waits can only make false rings of sessions. A
/// `LeaderLatch`'s nodes are named `latch-`, never a lock's; a zklock `LeaderSelector`'s are
/// named like a mutex's (as Curator's) but carry an election mark in their uuid, and a queue
/// with such a node is not read, in either schema. A queue of Curator's `LeaderSelector`
/// alone, or of kazoo's `Election` (a kazoo `Lock`), cannot be told from a mutex: it is read as
/// one, and its sessions, untagged, are read whole, so a ring through it is at most possible,
/// never certain.
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
/// for deadlock in zklock::deadlock::find_deadlocks(&client, "/app/locks").await?.deadlocks {
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
///
/// `on` is what every builder takes: a `&Client`, or a `&Session` (its current client, and its
/// [`RetryPolicy`](crate::session::RetryPolicy) for the reads).
pub async fn find_deadlocks(on: impl Into<Connection>, root: &str) -> Result<DeadlockReport> {
    let connection = on.into();
    // Boxed: the walk's state is large, and a caller's future that holds this one stays small.
    Box::pin(deadlocks_under(&connection.client(), connection.retry_policy(), root)).await
}

/// [`find_deadlocks`] through `client`, its reads retried as `retry` says.
async fn deadlocks_under(client: &Client, retry: RetryPolicy, root: &str) -> Result<DeadlockReport> {
    let Some(folders) = lock_folders(client, retry, root).await? else {
        return Ok(DeadlockReport { root_exists: false, locks_read: 0, deadlocks: Vec::new() });
    };
    let first = Read::locks(client, retry, &folders).await?;
    let locks_read = first.read.len();
    let whole = first.whole_sessions();
    let first_graph = first.graph(&whole);
    let suspects = cycles(&first_graph, MOST_DEADLOCKS);
    if suspects.is_empty() {
        return Ok(DeadlockReport { root_exists: true, locks_read, deadlocks: suspects });
    }
    let on_a_ring = |lock: &&(String, LockKind)| suspects.iter().flat_map(Deadlock::waits).any(|w| w.lock == lock.0);
    let again: Vec<(String, LockKind)> = first.read.iter().filter(on_a_ring).cloned().collect();
    let second = Read::locks(client, retry, &again).await?;
    let deadlocks = cycles(&common(&first_graph, &second.graph(&whole)), MOST_DEADLOCKS);
    Ok(DeadlockReport { root_exists: true, locks_read, deadlocks })
}

/// Every lock under `root` (itself included) with its kind, walking every child that is not a
/// queue node; a folder with several kinds of nodes is one lock of each. A queue with a node
/// that carries the election mark is an election, not a lock (see [`find_deadlocks`]). `None`
/// when `root` does not exist.
async fn lock_folders(client: &Client, retry: RetryPolicy, root: &str) -> Result<Option<Vec<(String, LockKind)>>> {
    retry_transient(retry, || client.sync(root)).await.or_else(|err| match err {
        zookeeper_client::Error::NoNode => Ok(()),
        err => Err(Error::zookeeper("sync", root, err)),
    })?;
    let mut found = Vec::new();
    let mut pending = vec![root.to_owned()];
    while let Some(path) = pending.pop() {
        let children = match list_children(client, retry, &path).await {
            Err(Error::ZooKeeper { source: zookeeper_client::Error::NoNode, .. }) if path == root => return Ok(None),
            Err(Error::ZooKeeper { source: zookeeper_client::Error::NoNode, .. }) => Vec::new(),
            other => other?,
        };
        for kind in LockKind::present(&children) {
            let contenders = kind.schema().contenders(children.clone());
            if !contenders.iter().any(|node| NodeMark::of_node(node) == Some(NodeMark::Election)) {
                found.push((path.clone(), kind));
            }
        }
        let is_queue_node = |child: &String| QUEUE_NODES.iter().any(|schema| schema.is_queue_node(child));
        let folders = children.iter().filter(|child| !is_queue_node(child));
        pending.extend(folders.map(|child| format!("{}/{child}", path.trim_end_matches('/'))));
    }
    found.sort();
    Ok(Some(found))
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
    async fn locks(client: &Client, retry: RetryPolicy, locks: &[(String, LockKind)]) -> Result<Read> {
        let mut queues = Vec::with_capacity(locks.len());
        for (path, kind) in locks {
            let order = in_queue_order(path, kind.schema(), children_or_none(client, retry, path).await?);
            let nodes = read_nodes(client, retry, path, order).await?;
            let names: Vec<String> = nodes.iter().map(|node| node.node_path.clone()).collect();
            let behind = kind.waits_behind(&names);
            // A node that is nobody's (not ephemeral: session 0) still keeps those behind it
            // waiting, as it would keep Curator's waiters, but it is no vertex: left out, and
            // with it the waits behind it (stuck, but on no one).
            let kept: Vec<Option<usize>> = nodes
                .iter()
                .scan(0, |next, node| {
                    Some((node.session_id != 0).then(|| {
                        *next += 1;
                        *next - 1
                    }))
                })
                .collect();
            let behind = behind.into_iter().map(|ahead| ahead.into_iter().filter_map(|i| kept[i]).collect());
            let nodes = nodes.into_iter().zip(behind).filter(|(node, _)| node.session_id != 0);
            let nodes = nodes.map(|(node, behind): (_, Vec<usize>)| Node {
                owner: Tag::of_node(&node.node_path),
                path: node.node_path,
                session: node.session_id,
                czxid: node.fencing_token,
                data: node.data,
                behind,
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
pub(crate) struct DeadlockWatch<'a> {
    check: &'a DeadlockCheck,
    next: Instant,
    /// The look under way, kept across the waits it spans: each change of the node ahead (its
    /// data rewritten, a revocation request) or of the connection ends one wait and starts the
    /// next, and a look cut short at each would never end where they come faster than a look
    /// takes (a ring nobody gave up on).
    look: Option<Pin<Box<dyn Future<Output = Result<DeadlockReport>> + Send>>>,
}

impl fmt::Debug for DeadlockWatch<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeadlockWatch")
            .field("check", self.check)
            .field("next", &self.next)
            .field("looking", &self.look.is_some())
            .finish()
    }
}

impl<'a> DeadlockWatch<'a> {
    /// A watch whose first look is due at once (it is made when the acquire starts waiting).
    pub(crate) fn new(check: &'a DeadlockCheck) -> Self {
        DeadlockWatch { check, next: Instant::now(), look: None }
    }

    /// Looks, as often as the check says, until a certain deadlock is found whose victim is our
    /// node `node` (a full path: tasks of one process share a session, so the node tells which
    /// wait is ours), and returns [`Error::Deadlock`] with it. A deadlock we are on but whose
    /// victim is another wait is left to that one; a possible one (through a session read
    /// whole) fails nothing: it may dissolve by itself, and a false alarm fails a healthy wait.
    /// A failed look is logged and tried again a period later: the wait itself learns of its
    /// session's end.
    ///
    /// # Cancel safety
    /// Cancel safe: a look under way stays in the watch, and the next call goes on with it (a
    /// new one is due a period after it began); dropping the watch stops the looking.
    pub(crate) async fn until_victim(&mut self, client: &Client, retry: RetryPolicy, node: &str) -> Error {
        loop {
            let look = match &mut self.look {
                Some(look) => look,
                None => {
                    tokio::time::sleep_until(self.next.into()).await;
                    // Due a period after this one began: a queue that moves ends a wait after
                    // wait, and must not start a look at each.
                    self.next = Instant::now() + self.check.period;
                    let (client, root) = (client.clone(), self.check.root.clone());
                    self.look.insert(Box::pin(async move { deadlocks_under(&client, retry, &root).await }))
                }
            };
            let found = look.await;
            self.look = None;
            match found {
                Ok(report) => {
                    let certain = report.deadlocks.into_iter().filter(Deadlock::is_certain);
                    if let Some(ours) = certain.into_iter().find(|deadlock| victim(deadlock).waiter_node_path == node) {
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
