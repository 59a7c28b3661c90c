//! The rings of a wait-for graph: its deadlocks, and each one's victim.
//!
//! Its elementary cycles (`wait_for.rs`'s graph), the waits seen in two reads of it, and each
//! ring's victim, the one wait that gives up to break it. Pure.

use std::collections::BTreeMap;

use crate::error::{Deadlock, DeadlockHop, LockWait};

use super::wait_for::{Graph, Session, Vertex};

/// The wait that gives up to break `ring`, the same for every process that sees it: the newest
/// waiting node (highest czxid) among the hops of one wait, whose going breaks the ring; when
/// every hop has several waits, the newest of all (the ring then stands until each wait of one
/// hop has gone, and the next read picks the next).
pub(crate) fn victim(ring: &Deadlock) -> &LockWait {
    let of_one_node =
        |hop: &&DeadlockHop| hop.waits.iter().all(|wait| wait.waiter_node_path == hop.waits[0].waiter_node_path);
    let single = ring.hops.iter().filter(of_one_node).flat_map(|hop| &hop.waits);
    single.max_by_key(|wait| wait.waiter_czxid).unwrap_or_else(|| {
        ring.waits().max_by_key(|wait| wait.waiter_czxid).expect("a deadlock has a wait on each hop")
    })
}

/// What tells a wait from another, read again: its lock and its two nodes.
fn key(wait: &LockWait) -> (&str, &str, &str) {
    (&wait.lock, &wait.waiter_node_path, &wait.holder_node_path)
}

/// The waits seen in both graphs. A node that holds holds until it is deleted, and one that
/// waits waits until it holds or is deleted; so a wait seen in a first read and again in a
/// second stood all along between them, and waits that each stood through two reads made one
/// after the other all stood at once, when the first read ended. A cycle of them is no artefact
/// of reading one lock after another. A wait counts only between the same two vertices both
/// times (a session read whole in one read and as its tasks in the other is not matched: a
/// ring missed for one look, never one made up).
pub(crate) fn common(first: &Graph, second: &Graph) -> Graph {
    let mut graph = Graph::new();
    for (waiter, holders) in first {
        for (holder, waits) in holders {
            let again = second.get(waiter).and_then(|holders| holders.get(holder));
            let seen_again = |wait: &&LockWait| again.is_some_and(|again| again.iter().any(|w| key(w) == key(wait)));
            let kept: Vec<LockWait> = waits.iter().filter(seen_again).cloned().collect();
            if !kept.is_empty() {
                graph.entry(*waiter).or_default().insert(*holder, kept);
            }
        }
    }
    graph
}

/// The graph's elementary cycles, at most `limit` of them, each once: it starts at its smallest
/// vertex (sessions read whole by id, then tasks by session and tag, then chains by id).
pub(crate) fn cycles(graph: &Graph, limit: usize) -> Vec<Deadlock> {
    let mut found = Vec::new();
    for &start in graph.keys() {
        let mut path = vec![start];
        search(graph, start, &mut path, &mut found, limit);
    }
    found
}

/// Extends `path` (from `start`, every other vertex above it) by each edge of its last vertex.
fn search(graph: &Graph, start: Vertex, path: &mut Vec<Vertex>, found: &mut Vec<Deadlock>, limit: usize) {
    let last = *path.last().expect("a path starts at a vertex");
    for &next in graph.get(&last).into_iter().flat_map(BTreeMap::keys) {
        if found.len() >= limit {
            return;
        }
        if next == start {
            found.push(ring(graph, path));
        } else if next > start && !path.contains(&next) {
            path.push(next);
            search(graph, start, path, found, limit);
            path.pop();
        }
    }
}

fn ring(graph: &Graph, vertices: &[Vertex]) -> Deadlock {
    let next = vertices.iter().skip(1).chain(vertices.first());
    let pairs = vertices.iter().zip(next);
    let hops = pairs.map(|(&waiter, &holder)| {
        let waits = graph[&waiter][&holder].clone();
        // A chain's nodes are in the sessions of its processes: the hop names those of its
        // first wait, and each wait its own.
        let session = |vertex: Vertex, of_wait: fn(&LockWait) -> Session| match vertex {
            Vertex::Session(session) | Vertex::Task(session, _) => session,
            Vertex::Chain(_) => of_wait(&waits[0]),
        };
        let owner = |vertex: Vertex| match vertex {
            Vertex::Task(_, owner) => Some(owner.value()),
            Vertex::Session(_) | Vertex::Chain(_) => None,
        };
        let chain = |vertex: Vertex| match vertex {
            Vertex::Chain(chain) => Some(chain.value()),
            Vertex::Session(_) | Vertex::Task(..) => None,
        };
        DeadlockHop {
            waiter_session: session(waiter, |wait| wait.waiter_session),
            holder_session: session(holder, |wait| wait.holder_session),
            waiter_owner: owner(waiter),
            holder_owner: owner(holder),
            waiter_chain: chain(waiter),
            holder_chain: chain(holder),
            waits,
        }
    });
    Deadlock { hops: hops.collect() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wait(waiter: &str, czxid: i64, holder: &str) -> LockWait {
        LockWait {
            lock: "/l".to_owned(),
            waiter_node_path: waiter.to_owned(),
            waiter_czxid: czxid,
            waiter_data: Vec::new(),
            waiter_session: 1,
            holder_node_path: holder.to_owned(),
            holder_session: 2,
            holder_waiting: false,
        }
    }

    fn hop(waits: Vec<LockWait>) -> DeadlockHop {
        let (waiter_session, holder_session) = (1, 2);
        let (waiter_owner, holder_owner, waiter_chain, holder_chain) = (None, None, None, None);
        DeadlockHop { waiter_session, holder_session, waiter_owner, holder_owner, waiter_chain, holder_chain, waits }
    }

    /// A mutex's waiter waits behind every node ahead of it: one node, several waits on one
    /// hop. Its going breaks the hop as surely as a hop's only wait, so it counts as one.
    #[test]
    fn a_hop_whose_waits_are_one_nodes_is_broken_by_that_node() {
        let ring = Deadlock {
            hops: vec![
                hop(vec![wait("a", 5, "h1"), wait("a", 5, "h2")]),
                hop(vec![wait("b", 9, "x"), wait("c", 7, "y")]),
            ],
        };
        assert_eq!(victim(&ring).waiter_node_path, "a", "the one node of its hop, not the newest of all");
        let ring = Deadlock { hops: vec![hop(vec![wait("a", 5, "h1")]), hop(vec![wait("b", 9, "x")])] };
        assert_eq!(victim(&ring).waiter_node_path, "b", "the newest of the single waits");
    }
}
