//! The wait-for graph of sessions over lock queues, its cycles (deadlocks) and each cycle's
//! victim. Pure: the queues come in read, each node with its session, its czxid and whether it
//! holds (`queue/deadlock.rs` reads them; `zklock deadlocks` and the acquires built with
//! [`MutexBuilder::fail_on_deadlock`](crate::MutexBuilder::fail_on_deadlock) ask it).
//!
//! A session is one vertex: the tasks of one process that share a session cannot be told apart
//! from ZooKeeper. So a session waiting on a lock it holds through another node (a second task,
//! a read node behind its own write node after a downgrade) waits on itself, which is no
//! deadlock: the other task lets go when its work is done. Those waits are left out.

use std::collections::BTreeMap;

use crate::error::{Deadlock, DeadlockHop, LockWait};

use super::decide::{decide, Decision, Rule};
use super::naming::{Schema, KAZOO_MUTEX, MUTEX, READ, WRITE_NAME};

/// A ZooKeeper session id, a node's `ephemeralOwner`.
pub(crate) type Session = i64;

/// The kinds of lock whose waits make the graph, each told by its nodes' names. A semaphore's
/// waiter goes on when any one lease is let go, so a ring through it is no deadlock unless
/// every lease holder is stuck (its `locks/` folder, a plain mutex, is read as one); an
/// election's participants wait for leadership, not for a lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum LockKind {
    /// Curator's `InterProcessMutex` (zklock's default schema).
    Mutex,
    /// kazoo's `Lock` (zklock's kazoo schema).
    Kazoo,
    /// Curator's read-write layout.
    ReadWrite,
}

impl LockKind {
    /// Every kind, in the order a folder's kinds are read.
    pub(crate) const ALL: [LockKind; 3] = [LockKind::Mutex, LockKind::Kazoo, LockKind::ReadWrite];

    /// How its nodes are named and ordered (a read-write lock's two sides share one order).
    pub(crate) fn schema(self) -> Schema {
        match self {
            LockKind::Mutex => MUTEX,
            LockKind::Kazoo => KAZOO_MUTEX,
            LockKind::ReadWrite => READ,
        }
    }

    /// Which nodes of `sorted` (queue order, as [`Schema::contenders`] gives it) hold, as each
    /// node's own rule decides: the first of a mutex; a writer when first, a reader when no
    /// writer is ahead (a downgrade's read node, level with its owner's write node, may show
    /// waiting behind it: a wait on its own session, left out of the graph).
    pub(crate) fn holders(self, sorted: &[String]) -> Vec<bool> {
        let rule = |node: &str| match self {
            LockKind::Mutex | LockKind::Kazoo => Rule::First,
            LockKind::ReadWrite if node.contains(WRITE_NAME) => Rule::Writer { writer_name: WRITE_NAME },
            LockKind::ReadWrite => Rule::Reader { writer_name: WRITE_NAME },
        };
        sorted.iter().map(|node| decide(sorted, node, rule(node)) == Decision::Hold).collect()
    }
}

/// One node of a lock's queue, as read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Node {
    /// The full path.
    pub(crate) path: String,
    pub(crate) session: Session,
    pub(crate) czxid: i64,
    pub(crate) data: Vec<u8>,
    pub(crate) holds: bool,
}

/// The wait that gives up to break `ring`, the same for every process that sees it: the newest
/// waiting node (highest czxid) among the hops of one wait, whose going breaks the ring; when
/// every hop has several waits, the newest of all (the ring then stands until each wait of one
/// hop has gone, and the next read picks the next).
pub(crate) fn victim(ring: &Deadlock) -> &LockWait {
    let single = ring.hops.iter().filter(|hop| hop.waits.len() == 1).flat_map(|hop| &hop.waits);
    single.max_by_key(|wait| wait.waiter_czxid).unwrap_or_else(|| {
        ring.waits().max_by_key(|wait| wait.waiter_czxid).expect("a deadlock has a wait on each hop")
    })
}

/// What tells a wait from another, read again: its lock and its two nodes.
fn key(wait: &LockWait) -> (&str, &str, &str) {
    (&wait.lock, &wait.waiter_node, &wait.holder_node)
}

/// waiter -> holder -> the waits that make the edge.
pub(crate) type Graph = BTreeMap<Session, BTreeMap<Session, Vec<LockWait>>>;

/// The graph of `locks` (each a lock path and its queue): an edge from every session with a
/// queued node to every other session holding on that lock.
pub(crate) fn graph<'a>(locks: impl IntoIterator<Item = (&'a str, &'a [Node])>) -> Graph {
    let mut graph = Graph::new();
    for (lock, nodes) in locks {
        for waiter in nodes.iter().filter(|node| !node.holds) {
            for holder in nodes.iter().filter(|node| node.holds && node.session != waiter.session) {
                let wait = LockWait {
                    lock: lock.to_owned(),
                    waiter_node: waiter.path.clone(),
                    waiter_czxid: waiter.czxid,
                    waiter_data: waiter.data.clone(),
                    holder_node: holder.path.clone(),
                };
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
/// session.
pub(crate) fn cycles(graph: &Graph, limit: usize) -> Vec<Deadlock> {
    let mut found = Vec::new();
    for &start in graph.keys() {
        let mut path = vec![start];
        search(graph, start, &mut path, &mut found, limit);
    }
    found
}

/// Extends `path` (from `start`, every other session above it) by each edge of its last session.
fn search(graph: &Graph, start: Session, path: &mut Vec<Session>, found: &mut Vec<Deadlock>, limit: usize) {
    let last = *path.last().expect("a path starts at a session");
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

fn ring(graph: &Graph, sessions: &[Session]) -> Deadlock {
    let next = sessions.iter().skip(1).chain(sessions.first());
    let pairs = sessions.iter().zip(next);
    let hops = pairs.map(|(&waiter, &holder)| DeadlockHop {
        waiter_session: waiter,
        holder_session: holder,
        waits: graph[&waiter][&holder].clone(),
    });
    Deadlock { hops: hops.collect() }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    fn sessions(cycle: &Deadlock) -> BTreeSet<Session> {
        cycle.hops.iter().map(|hop| hop.waiter_session).collect()
    }

    fn node(session: Session, task: usize, holds: bool) -> Node {
        Node { path: format!("s{session}t{task}"), session, czxid: 0, data: Vec::new(), holds }
    }

    /// A lock where `holder` holds and `waiter` waits.
    fn lock(holder: Session, waiter: Session) -> Vec<Node> {
        vec![node(holder, 0, true), node(waiter, 0, false)]
    }

    fn found(locks: &[Vec<Node>]) -> Vec<Deadlock> {
        let named: Vec<(String, &[Node])> =
            locks.iter().enumerate().map(|(i, nodes)| (format!("/l{i}"), nodes.as_slice())).collect();
        cycles(&graph(named.iter().map(|(name, nodes)| (name.as_str(), *nodes))), usize::MAX)
    }

    #[test]
    fn two_sessions_holding_what_the_other_waits_on_are_a_cycle() {
        let cycles = found(&[lock(1, 2), lock(2, 1)]);
        assert_eq!(cycles.len(), 1, "{cycles:?}");
        let hops: Vec<(Session, Session, &str)> = cycles[0]
            .hops
            .iter()
            .map(|hop| (hop.waiter_session, hop.holder_session, hop.waits[0].lock.as_str()))
            .collect();
        assert_eq!(hops, [(1, 2, "/l1"), (2, 1, "/l0")]);
        assert_eq!(cycles[0].hops[0].waits[0].waiter_node, "s1t0");
        assert_eq!(cycles[0].hops[0].waits[0].holder_node, "s2t0");
    }

    #[test]
    fn three_sessions_in_a_ring_are_one_cycle() {
        let cycles = found(&[lock(1, 2), lock(2, 3), lock(3, 1), lock(3, 4)]);
        assert_eq!(cycles.len(), 1, "{cycles:?}");
        let ring: Vec<(Session, Session)> =
            cycles[0].hops.iter().map(|hop| (hop.waiter_session, hop.holder_session)).collect();
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

    #[test]
    fn the_victim_is_the_newest_wait_whose_going_breaks_the_ring() {
        let waiting = |session, task, czxid| Node { czxid, ..node(session, task, false) };
        // Session 1 waits on 2 through one node (czxid 5); 2 waits on 1 through two (7 and 9).
        let locks = [
            vec![node(2, 0, true), waiting(1, 1, 5)],
            vec![node(1, 0, true), waiting(2, 1, 7)],
            vec![node(1, 2, true), waiting(2, 2, 9)],
        ];
        let cycles = found(&locks);
        assert_eq!(cycles.len(), 1, "{cycles:?}");
        assert_eq!(victim(&cycles[0]).waiter_czxid, 5, "the one wait of its hop, not the newest of all");
        // One wait per hop: the newest of them.
        let cycles = found(&[vec![node(2, 0, true), waiting(1, 1, 5)], vec![node(1, 0, true), waiting(2, 1, 7)]]);
        assert_eq!(victim(&cycles[0]).waiter_node, "s2t1");
        // Several on every hop: the newest of all.
        let mut both = locks.to_vec();
        both.push(vec![node(2, 3, true), waiting(1, 3, 8)]);
        assert_eq!(victim(&found(&both)[0]).waiter_czxid, 9);
    }

    #[test]
    fn holders_follow_each_nodes_rule() {
        let queue = |names: &[&str]| names.iter().map(|name| (*name).to_owned()).collect::<Vec<_>>();
        let mutex = queue(&["_c_a-lock-0000000001", "_c_b-lock-0000000002"]);
        assert_eq!(LockKind::Mutex.holders(&mutex), [true, false]);
        let read_write = queue(&[
            "_c_a-__READ__0000000001",
            "_c_b-__READ__0000000002",
            "_c_c-__WRIT__0000000003",
            "_c_d-__READ__0000000004",
        ]);
        assert_eq!(LockKind::ReadWrite.holders(&read_write), [true, true, false, false]);
        let writers = queue(&["_c_a-__WRIT__0000000001", "_c_b-__WRIT__0000000002", "_c_c-__READ__0000000003"]);
        assert_eq!(LockKind::ReadWrite.holders(&writers), [true, false, false]);
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
                for (hop, next) in cycle.hops.iter().zip(cycle.hops.iter().cycle().skip(1)) {
                    assert_eq!(hop.holder_session, next.waiter_session, "seed {seed}: a broken cycle {cycle:?}");
                    assert!(
                        !hop.waits.is_empty() && hop.waiter_session != hop.holder_session,
                        "seed {seed}: {cycle:?}"
                    );
                }
            }
        }
    }
}
