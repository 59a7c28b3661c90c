//! The wait-for graph of tasks, chains or sessions over lock queues.
//!
//! Its rings, the deadlocks, are `rings.rs`'s. Pure: the queues come in read, each node with its
//! session, its owner tag, its czxid and what it waits behind (`queue/deadlock.rs` reads them;
//! `zklock deadlocks` and the acquires built with
//! [`MutexBuilder::fail_on_deadlock`](crate::MutexBuilder::fail_on_deadlock) ask it).
//!
//! A vertex is a task or a chain where the nodes tell it, else a session. The tasks of one
//! process share its session, so ZooKeeper alone cannot tell them apart; a lock built with
//! `fail_on_deadlock` writes its task's [`OwnerTag`] into each node's uuid (`owner_tag.rs`),
//! and a session whose every node read carries a tag is read as its tasks, one vertex each. A
//! chain is the other way round: processes, each with a session of its own, that form one
//! owner (a `zklock` holds its lock until its command, a `zklock` that waits, ends); a lock
//! built with [`MutexBuilder::owner_chain`](crate::MutexBuilder::owner_chain) writes the
//! chain's [`ChainTag`] instead, and every node that carries one chain's tag is that one
//! vertex, whatever its session. A task's tag is only ever compared within its session: two
//! processes' tasks whose tags are equal stay two vertices. A session with a node that carries
//! none (a lock without the opt-in, local handoff, Curator, kazoo) is read whole, one vertex,
//! its chain's nodes too: which of its tasks holds or waits is unknown, so none is told apart.
//! An edge runs from a waiting node's vertex to the vertex of each node it waits behind, by its
//! rule (`lock_kind.rs`): the holders, and the nodes queued ahead of it that must hold and go
//! first, which wait themselves (a reader behind a writer that waits behind the reader's own
//! task's read hold is a ring of that task and the writer's). A vertex waiting on itself (a
//! task behind its own node, a downgrade's read node behind its own write node; for a session
//! read whole, any two of its tasks; for a chain, any two of its links) is left out: it is no
//! deadlock of the graph's kind.
//!
//! Why whole sessions and never a mix: a session's untagged vertex would stand for any of its
//! tasks, the tagged ones and the chain's included, so an edge between it and one of its own
//! tagged tasks could close a ring no task is on. Reading the session whole keeps what the
//! graph reports for it exactly what a session-level graph would.

use std::collections::{BTreeMap, BTreeSet};

use crate::error::LockWait;

use super::owner_tag::{ChainTag, OwnerTag, Tag};

/// A ZooKeeper session id, a node's `ephemeralOwner`.
pub(crate) type Session = i64;

/// One node of a lock's queue, as read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Node {
    /// The full path.
    pub(crate) path: String,
    pub(crate) session: Session,
    /// The tag its uuid carries (see `owner_tag.rs`).
    pub(crate) owner: Option<Tag>,
    pub(crate) czxid: i64,
    pub(crate) data: Vec<u8>,
    /// The indices, in its queue, of the nodes it waits behind (`LockKind::waits_behind`):
    /// none when it holds.
    pub(crate) behind: Vec<usize>,
}

/// A vertex of the graph, in this order: a session read whole, a task (its session and owner
/// tag), or a chain (whatever the sessions of its nodes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Vertex {
    Session(Session),
    Task(Session, OwnerTag),
    Chain(ChainTag),
}

/// waiter -> holder -> the waits that make the edge.
pub(crate) type Graph = BTreeMap<Vertex, BTreeMap<Vertex, Vec<LockWait>>>;

/// The sessions of `locks` that are read whole: those with a node that carries no owner tag.
pub(crate) fn whole_sessions<'a>(locks: impl IntoIterator<Item = (&'a str, &'a [Node])>) -> BTreeSet<Session> {
    let nodes = locks.into_iter().flat_map(|(_, nodes)| nodes);
    nodes.filter(|node| node.owner.is_none()).map(|node| node.session).collect()
}

/// The graph of `locks` (each a lock path and its queue): an edge from the vertex of every
/// waiting node to the vertex of every node it waits behind (holding, or waiting ahead of it),
/// but none from a vertex to itself.
/// The sessions of `whole`, and those with an untagged node in `locks`, are read whole (a second
/// read passes the first one's, so that a session is the same vertex in both).
pub(crate) fn graph<'a>(locks: impl IntoIterator<Item = (&'a str, &'a [Node])>, whole: &BTreeSet<Session>) -> Graph {
    let locks: Vec<(&str, &[Node])> = locks.into_iter().collect();
    let mut whole = whole.clone();
    whole.extend(whole_sessions(locks.iter().copied()));
    let vertex = |node: &Node| match node.owner {
        _ if whole.contains(&node.session) => Vertex::Session(node.session),
        Some(Tag::Task(owner)) => Vertex::Task(node.session, owner),
        Some(Tag::Chain(chain)) => Vertex::Chain(chain),
        None => Vertex::Session(node.session),
    };
    let mut graph = Graph::new();
    for (lock, nodes) in locks {
        for waiter in nodes {
            let ahead = waiter.behind.iter().filter_map(|&i| nodes.get(i));
            for holder in ahead.filter(|node| vertex(node) != vertex(waiter)) {
                let wait = LockWait {
                    lock: lock.to_owned(),
                    waiter_node_path: waiter.path.clone(),
                    waiter_czxid: waiter.czxid,
                    waiter_data: waiter.data.clone(),
                    waiter_session: waiter.session,
                    holder_node_path: holder.path.clone(),
                    holder_session: holder.session,
                    holder_waiting: !holder.behind.is_empty(),
                };
                graph.entry(vertex(waiter)).or_default().entry(vertex(holder)).or_default().push(wait);
            }
        }
    }
    graph
}

#[cfg(test)]
mod tests;
