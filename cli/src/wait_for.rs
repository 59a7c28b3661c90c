//! The wait-for graph of sessions over lock queues, and its cycles (what `zklock deadlocks`
//! reports). Pure: the queues come in read, with each node's session and whether it holds.
//!
//! A session is one vertex: the tasks of one process that share a session cannot be told apart
//! from ZooKeeper. So a session waiting on a lock it holds through another node (a second task,
//! a read node behind its own write node after a downgrade) waits on itself, which is no
//! deadlock: the other task lets go when its work is done. Those waits are left out.

use std::collections::BTreeMap;

/// A ZooKeeper session id, a node's `ephemeralOwner`.
pub type Session = i64;

/// One node of a lock's queue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    pub path: String,
    pub session: Session,
    pub holds: bool,
}

/// Why one session waits on another: its node on `lock` is queued while `holder_node` holds.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Wait {
    pub lock: String,
    pub waiter_node: String,
    pub holder_node: String,
}

/// waiter -> holder -> the waits that make the edge.
pub type Graph = BTreeMap<Session, BTreeMap<Session, Vec<Wait>>>;

/// One step of a cycle: `waiter` waits on `holder`, for each of `waits`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hop {
    pub waiter: Session,
    pub holder: Session,
    pub waits: Vec<Wait>,
}

/// A cycle of sessions, each waiting on the next; the last waits on the first.
pub type Cycle = Vec<Hop>;

/// The graph of `locks` (each a lock path and its queue): an edge from every session with a
/// queued node to every other session holding on that lock.
pub fn graph<'a>(locks: impl IntoIterator<Item = (&'a str, &'a [Node])>) -> Graph {
    let mut graph = Graph::new();
    for (lock, nodes) in locks {
        for waiter in nodes.iter().filter(|node| !node.holds) {
            for holder in nodes.iter().filter(|node| node.holds && node.session != waiter.session) {
                let wait =
                    Wait { lock: lock.to_owned(), waiter_node: waiter.path.clone(), holder_node: holder.path.clone() };
                graph.entry(waiter.session).or_default().entry(holder.session).or_default().push(wait);
            }
        }
    }
    graph
}

/// The waits seen in both graphs. A node that holds holds until it is deleted, and one that
/// waits waits until it holds or is deleted; so a wait seen in a first read and again in a
/// second stood all along between them, and waits that each stood through two reads made one
/// after the other all stood at once, when the first read ended. A cycle of them is no artefact
/// of reading one lock after another.
pub fn common(first: &Graph, second: &Graph) -> Graph {
    let mut graph = Graph::new();
    for (waiter, holders) in first {
        for (holder, waits) in holders {
            let again = second.get(waiter).and_then(|holders| holders.get(holder));
            let kept: Vec<Wait> =
                waits.iter().filter(|wait| again.is_some_and(|again| again.contains(wait))).cloned().collect();
            if !kept.is_empty() {
                graph.entry(*waiter).or_default().insert(*holder, kept);
            }
        }
    }
    graph
}

/// The graph's elementary cycles, at most `limit` of them, each once: it starts at its smallest
/// session.
pub fn cycles(graph: &Graph, limit: usize) -> Vec<Cycle> {
    let mut found = Vec::new();
    for &start in graph.keys() {
        let mut path = vec![start];
        search(graph, start, &mut path, &mut found, limit);
    }
    found
}

/// Extends `path` (from `start`, every other session above it) by each edge of its last session.
fn search(graph: &Graph, start: Session, path: &mut Vec<Session>, found: &mut Vec<Cycle>, limit: usize) {
    let last = *path.last().expect("a path starts at a session");
    for &next in graph.get(&last).into_iter().flat_map(BTreeMap::keys) {
        if found.len() >= limit {
            return;
        }
        if next == start {
            found.push(hops(graph, path));
        } else if next > start && !path.contains(&next) {
            path.push(next);
            search(graph, start, path, found, limit);
            path.pop();
        }
    }
}

fn hops(graph: &Graph, sessions: &[Session]) -> Cycle {
    let next = sessions.iter().skip(1).chain(sessions.first());
    let pairs = sessions.iter().zip(next);
    pairs.map(|(&waiter, &holder)| Hop { waiter, holder, waits: graph[&waiter][&holder].clone() }).collect()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    fn sessions(cycle: &Cycle) -> BTreeSet<Session> {
        cycle.iter().map(|hop| hop.waiter).collect()
    }

    fn node(session: Session, task: usize, holds: bool) -> Node {
        Node { path: format!("s{session}t{task}"), session, holds }
    }

    /// A lock where `holder` holds and `waiter` waits.
    fn lock(holder: Session, waiter: Session) -> Vec<Node> {
        vec![node(holder, 0, true), node(waiter, 0, false)]
    }

    fn found(locks: &[Vec<Node>]) -> Vec<Cycle> {
        let named: Vec<(String, &[Node])> =
            locks.iter().enumerate().map(|(i, nodes)| (format!("/l{i}"), nodes.as_slice())).collect();
        cycles(&graph(named.iter().map(|(name, nodes)| (name.as_str(), *nodes))), usize::MAX)
    }

    #[test]
    fn two_sessions_holding_what_the_other_waits_on_are_a_cycle() {
        let cycles = found(&[lock(1, 2), lock(2, 1)]);
        assert_eq!(cycles.len(), 1, "{cycles:?}");
        let hops: Vec<(Session, Session, &str)> =
            cycles[0].iter().map(|hop| (hop.waiter, hop.holder, hop.waits[0].lock.as_str())).collect();
        assert_eq!(hops, [(1, 2, "/l1"), (2, 1, "/l0")]);
        assert_eq!(cycles[0][0].waits[0].waiter_node, "s1t0");
        assert_eq!(cycles[0][0].waits[0].holder_node, "s2t0");
    }

    #[test]
    fn three_sessions_in_a_ring_are_one_cycle() {
        let cycles = found(&[lock(1, 2), lock(2, 3), lock(3, 1), lock(3, 4)]);
        assert_eq!(cycles.len(), 1, "{cycles:?}");
        let ring: Vec<(Session, Session)> = cycles[0].iter().map(|hop| (hop.waiter, hop.holder)).collect();
        assert_eq!(ring, [(1, 3), (3, 2), (2, 1)]);
    }

    #[test]
    fn a_session_waiting_behind_itself_is_no_cycle() {
        let queue = vec![node(1, 0, true), node(2, 0, false), node(1, 1, false)];
        assert!(found(std::slice::from_ref(&queue)).is_empty());
        let edges: Vec<(Session, Vec<Session>)> = graph([("/l", queue.as_slice())])
            .into_iter()
            .map(|(waiter, holders)| (waiter, holders.into_keys().collect()))
            .collect();
        assert_eq!(edges, [(2, vec![1])], "only the other session's wait is an edge");
        // Readers of one session beside each other's writer-in-waiting: no self-loop either.
        assert!(found(&[vec![node(1, 0, true), node(1, 1, true), node(1, 2, false)]]).is_empty());
    }

    #[test]
    fn a_wait_not_seen_twice_is_dropped() {
        let first = graph([("/a", lock(1, 2).as_slice()), ("/b", lock(2, 1).as_slice())]);
        let second = graph([("/a", lock(1, 2).as_slice()), ("/b", lock(2, 3).as_slice())]);
        assert_eq!(cycles(&common(&first, &first), 10).len(), 1);
        assert!(cycles(&common(&first, &second), 10).is_empty());
    }

    /// Sessions, several tasks each, on random locks: a session waits only on sessions later
    /// in a random order (or on itself), so the graph has no cycle by construction.
    fn acyclic(rng: &mut fastrand::Rng) -> (Vec<Vec<Node>>, Vec<Session>) {
        let mut order: Vec<Session> = (1..=rng.i64(2..=8)).map(|s| 0x1000_0000 + s).collect();
        rng.shuffle(&mut order);
        let tasks = rng.usize(1..=4);
        let mut locks = Vec::new();
        for _ in 0..rng.usize(1..=8) {
            // Holders: one (a mutex, a writer) or several (readers), of any sessions.
            let holders: Vec<usize> = (0..rng.usize(1..=3)).map(|_| rng.usize(..order.len())).collect();
            let first_holder = *holders.iter().min().expect("one holder at least");
            let mut queue: Vec<Node> =
                holders.iter().map(|&rank| node(order[rank], rng.usize(..tasks), true)).collect();
            // Waiters: sessions no later than the first holder (that one waits on itself).
            for _ in 0..rng.usize(0..=4) {
                queue.push(node(order[rng.usize(..=first_holder)], rng.usize(..tasks), false));
            }
            locks.push(queue);
        }
        (locks, order)
    }

    #[test]
    fn random_acyclic_waits_have_no_cycle_and_a_ring_added_is_found() {
        let base =
            std::env::var("WAIT_FOR_SEED").ok().and_then(|seed| seed.parse().ok()).unwrap_or_else(|| fastrand::u64(..));
        for case in 0..2_000u64 {
            let seed = base.wrapping_add(case);
            let mut rng = fastrand::Rng::with_seed(seed);
            let (mut locks, order) = acyclic(&mut rng);
            assert!(found(&locks).is_empty(), "seed {seed} (WAIT_FOR_SEED={seed}): a cycle in {locks:#?}");
            // A ring of 2 or more sessions, each waiting on a lock the next holds.
            let mut ring = order.clone();
            rng.shuffle(&mut ring);
            ring.truncate(rng.usize(2..=order.len()));
            for (i, &waiter) in ring.iter().enumerate() {
                let holder = ring[(i + 1) % ring.len()];
                locks.push(vec![node(holder, 0, true), node(waiter, 1, false)]);
            }
            let cycles = found(&locks);
            let wanted: BTreeSet<Session> = ring.iter().copied().collect();
            assert!(
                cycles.iter().any(|cycle| sessions(cycle) == wanted),
                "seed {seed}: ring {ring:?} not in {cycles:?}"
            );
            for cycle in &cycles {
                for (hop, next) in cycle.iter().zip(cycle.iter().cycle().skip(1)) {
                    assert_eq!(hop.holder, next.waiter, "seed {seed}: a broken cycle {cycle:?}");
                    assert!(!hop.waits.is_empty() && hop.waiter != hop.holder, "seed {seed}: {cycle:?}");
                }
            }
        }
    }
}
