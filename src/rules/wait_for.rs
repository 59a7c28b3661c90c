//! The wait-for graph of tasks (or whole sessions) over lock queues (its rings, the deadlocks,
//! are `rings.rs`'s). Pure: the queues come in read, each node with its session, its owner tag,
//! its czxid and what it waits behind (`queue/deadlock.rs` reads them; `zklock deadlocks` and the
//! acquires built with
//! [`MutexBuilder::fail_on_deadlock`](crate::MutexBuilder::fail_on_deadlock) ask it).
//!
//! A vertex is a task where the nodes tell it, else a session. The tasks of one process share
//! its session, so ZooKeeper alone cannot tell them apart; a lock built with `fail_on_deadlock`
//! writes its task's [`OwnerTag`] into each node's uuid (`owner_tag.rs`), and a session whose
//! every node read carries a tag is read as its tasks, one vertex each. A session with a node
//! that carries none (a lock without the opt-in, local handoff, Curator, kazoo) is read whole,
//! one vertex, as before: which of its tasks holds or waits is unknown, so none is told apart.
//! An edge runs from a waiting node's vertex to the vertex of each node it waits behind, by its
//! rule (`lock_kind.rs`): the holders, and the nodes queued ahead of it that must hold and go
//! first, which wait themselves (a reader behind a writer that waits behind the reader's own
//! task's read hold is a ring of that task and the writer's). A vertex waiting on itself (a
//! task behind its own node, a downgrade's read node behind its own write node; for a session
//! read whole, any two of its tasks) is left out: it is no deadlock of the graph's kind.
//!
//! Why whole sessions and never a mix: a session's untagged vertex would stand for any of its
//! tasks, the tagged ones included, so an edge between it and one of its own tagged tasks
//! could close a ring no task is on. Reading the session whole keeps what the graph reports
//! for it exactly what a session-level graph would.

use std::collections::{BTreeMap, BTreeSet};

use crate::error::LockWait;

use super::owner_tag::OwnerTag;

/// A ZooKeeper session id, a node's `ephemeralOwner`.
pub(crate) type Session = i64;

/// One node of a lock's queue, as read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Node {
    /// The full path.
    pub(crate) path: String,
    pub(crate) session: Session,
    /// The tag its uuid carries (see `owner_tag.rs`).
    pub(crate) owner: Option<OwnerTag>,
    pub(crate) czxid: i64,
    pub(crate) data: Vec<u8>,
    /// The indices, in its queue, of the nodes it waits behind (`LockKind::waits_behind`):
    /// none when it holds.
    pub(crate) behind: Vec<usize>,
}

/// A vertex of the graph: a task (its session and owner tag), or a session read whole.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Vertex {
    pub(crate) session: Session,
    /// `None` for a session read whole.
    pub(crate) owner: Option<OwnerTag>,
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
    let vertex = |node: &Node| Vertex {
        session: node.session,
        owner: if whole.contains(&node.session) { None } else { node.owner },
    };
    let mut graph = Graph::new();
    for (lock, nodes) in locks {
        for waiter in nodes {
            let ahead = waiter.behind.iter().filter_map(|&i| nodes.get(i));
            for holder in ahead.filter(|node| vertex(node) != vertex(waiter)) {
                let wait = LockWait {
                    lock: lock.to_owned(),
                    waiter_node: waiter.path.clone(),
                    waiter_czxid: waiter.czxid,
                    waiter_data: waiter.data.clone(),
                    holder_node: holder.path.clone(),
                    holder_waiting: !holder.behind.is_empty(),
                };
                graph.entry(vertex(waiter)).or_default().entry(vertex(holder)).or_default().push(wait);
            }
        }
    }
    graph
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::error::Deadlock;
    use crate::rules::lock_kind::LockKind;
    use crate::rules::rings::{common, cycles, victim};

    /// What a node that holds, or waits behind the first node of its queue, waits behind.
    fn behind(holds: bool) -> Vec<usize> {
        if holds {
            Vec::new()
        } else {
            vec![0]
        }
    }

    /// A node without an owner tag: its session is read whole. One that does not hold waits
    /// behind the first node of its queue.
    fn node(session: Session, task: usize, holds: bool) -> Node {
        let path = format!("s{session}t{task}");
        Node { path, session, owner: None, czxid: 0, data: Vec::new(), behind: behind(holds) }
    }

    /// A node of task `tag` of `session`, tagged (`n` tells its nodes apart).
    fn tagged(session: Session, tag: u64, n: usize, holds: bool) -> Node {
        let owner = Some(OwnerTag::from_hash(tag));
        Node { path: format!("s{session}o{tag}n{n}"), owner, ..node(session, 0, holds) }
    }

    /// A lock where `holder` holds and `waiter` waits.
    fn lock(holder: Session, waiter: Session) -> Vec<Node> {
        vec![node(holder, 0, true), node(waiter, 0, false)]
    }

    fn found(locks: &[Vec<Node>]) -> Vec<Deadlock> {
        let named: Vec<(String, &[Node])> =
            locks.iter().enumerate().map(|(i, nodes)| (format!("/l{i}"), nodes.as_slice())).collect();
        cycles(&graph(named.iter().map(|(name, nodes)| (name.as_str(), *nodes)), &BTreeSet::new()), usize::MAX)
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
        let edges: Vec<(Session, Vec<Session>)> = graph([("/l", queue.as_slice())], &BTreeSet::new())
            .into_iter()
            .map(|(waiter, holders)| (waiter.session, holders.into_keys().map(|holder| holder.session).collect()))
            .collect();
        assert_eq!(edges, [(2, vec![1])], "only the other session's wait is an edge");
        // Readers of one session beside each other's writer-in-waiting: no self-loop either.
        assert!(found(&[vec![node(1, 0, true), node(1, 1, true), node(1, 2, false)]]).is_empty());
    }

    #[test]
    fn a_wait_not_seen_twice_is_dropped() {
        let none = BTreeSet::new();
        let first = graph([("/a", lock(1, 2).as_slice()), ("/b", lock(2, 1).as_slice())], &none);
        let second = graph([("/a", lock(1, 2).as_slice()), ("/b", lock(2, 3).as_slice())], &none);
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

    /// The case: process P (session 1) has task A holding L1 and waiting on nothing,
    /// and task B waiting on L2; process Q (session 2) holds L2 and waits on L1. Sessions make
    /// a ring (1 -> 2 -> 1); tasks do not: A lets go, then Q goes on, then B.
    #[test]
    fn a_session_ring_through_a_task_that_does_not_wait_is_no_cycle() {
        let (a, b, q) = (1, 2, 3);
        let l1 = vec![tagged(1, a, 0, true), tagged(2, q, 1, false)];
        let l2 = vec![tagged(2, q, 2, true), tagged(1, b, 3, false)];
        assert!(found(&[l1.clone(), l2.clone()]).is_empty(), "no ring of tasks");
        // Untagged, the same waits are the ring that session-level vertices see.
        assert_eq!(found(&untagged(&[l1, l2])).len(), 1);
    }

    /// A real ring through two tasks of one session: task A of session 1 holds L1 and waits on
    /// L2, held by its sibling B, which waits on L3, held by Q of session 2, which waits on L1.
    /// And two tasks of one session alone in a ring are one too.
    #[test]
    fn a_ring_through_two_tasks_of_one_session_and_another_session_is_found() {
        let (a, b, q) = (1, 2, 3);
        let locks = [
            vec![tagged(1, a, 0, true), tagged(2, q, 1, false)],
            vec![tagged(1, b, 2, true), tagged(1, a, 3, false)],
            vec![tagged(2, q, 4, true), tagged(1, b, 5, false)],
        ];
        let cycles = found(&locks);
        assert_eq!(cycles.len(), 1, "{cycles:?}");
        let hops: Vec<(Session, Option<u64>, Session, Option<u64>)> = cycles[0]
            .hops
            .iter()
            .map(|hop| (hop.waiter_session, hop.waiter_owner, hop.holder_session, hop.holder_owner))
            .collect();
        let tag = |t| Some(OwnerTag::from_hash(t).value());
        assert_eq!(hops, [(1, tag(a), 1, tag(b)), (1, tag(b), 2, tag(q)), (2, tag(q), 1, tag(a))]);
        let siblings =
            [vec![tagged(1, a, 0, true), tagged(1, b, 1, false)], vec![tagged(1, b, 2, true), tagged(1, a, 3, false)]];
        assert_eq!(found(&siblings).len(), 1, "two tasks of one process in a ring");
    }

    /// A session with a node that carries no tag is read whole: none of its tasks is told
    /// apart (an edge between its untagged vertex and a tagged task of its own could close a
    /// ring no task is on), so it is what a session-level graph makes of it.
    #[test]
    fn a_session_with_an_untagged_node_is_read_whole() {
        // Task A (session 1) holds L1 through a lock without the opt-in; its sibling B waits on
        // L2, held by Q (session 2), which waits on L1: the session-level ring, as before.
        let locks =
            [vec![node(1, 0, true), tagged(2, 3, 1, false)], vec![tagged(2, 3, 2, true), tagged(1, 2, 3, false)]];
        let cycles = found(&locks);
        assert_eq!(cycles.len(), 1, "{cycles:?}");
        assert_eq!(cycles[0].hops[0].waiter_owner, None, "session 1 is one vertex");
        assert!(cycles[0].hops[1].waiter_owner.is_some(), "session 2 is told as its task");
        // An untagged task U holds L1 and waits on nothing; an untagged W waits on L3, held by
        // tagged T, which waits on L1. All of session 1: no edge, as before.
        let one = [vec![node(1, 0, true), tagged(1, 5, 1, false)], vec![tagged(1, 5, 2, true), node(1, 1, false)]];
        assert!(found(&one).is_empty(), "{:?}", found(&one));
        // The second read, of the ring's locks only, keeps the first read's whole sessions.
        let elsewhere = vec![node(1, 7, true)];
        let mut first_read: Vec<(&str, &[Node])> = vec![("/a", &locks[1]), ("/other", &elsewhere)];
        let tagged_l1 = vec![tagged(1, 4, 0, true), tagged(2, 3, 1, false)];
        first_read.insert(0, ("/l1", &tagged_l1));
        let second_read: Vec<(&str, &[Node])> = vec![("/l1", &tagged_l1), ("/a", &locks[1])];
        let whole = whole_sessions(first_read.iter().copied());
        assert_eq!(whole, BTreeSet::from([1]));
        let both = common(&graph(first_read.iter().copied(), &whole), &graph(second_read.iter().copied(), &whole));
        assert_eq!(crate::rules::rings::cycles(&both, 10).len(), 1, "the ring seen in both reads");
    }

    /// A queue as its rules read it (`lock_kind.rs`): each node named `name` (queue order), of
    /// `session`, tagged `tag` when given.
    fn ruled(kind: LockKind, nodes: &[(&str, Session, Option<u64>)]) -> Vec<Node> {
        let names: Vec<String> = nodes.iter().map(|(name, _, _)| (*name).to_owned()).collect();
        let behind = kind.waits_behind(&names);
        let nodes = nodes.iter().zip(behind).zip(1..).map(|((&(name, session, tag), behind), czxid)| Node {
            path: name.to_owned(),
            owner: tag.map(OwnerTag::from_hash),
            czxid,
            behind,
            ..node(session, 0, true)
        });
        nodes.collect()
    }

    /// The case: task T (session 1) holds a read lock, a writer W of session 2 queues
    /// behind it, and T reads again (not reentrant): its new read node waits behind W, which
    /// waits behind T's first read. A ring of T and W, though T only waits on a waiting node
    /// and W only on T itself; certain, both tagged.
    #[test]
    fn a_reader_behind_a_writer_that_waits_behind_its_own_read_is_a_certain_ring() {
        let (t, w) = (Some(1), Some(2));
        let queue = [("__READ__0000000001", 1, t), ("__WRIT__0000000002", 2, w), ("__READ__0000000003", 1, t)];
        let cycles = found(&[ruled(LockKind::ReadWrite, &queue)]);
        assert_eq!(cycles.len(), 1, "{cycles:?}");
        assert!(cycles[0].is_certain());
        let waits: Vec<(&str, &str, bool)> = cycles[0]
            .waits()
            .map(|wait| (wait.waiter_node.as_str(), wait.holder_node.as_str(), wait.holder_waiting))
            .collect();
        assert_eq!(
            waits,
            [("__READ__0000000003", "__WRIT__0000000002", true), ("__WRIT__0000000002", "__READ__0000000001", false)]
        );
        assert_eq!(victim(&cycles[0]).waiter_node, "__READ__0000000003", "T's wait is the newest");
        // Without the writer, T's second read holds beside its first: nothing waits.
        assert!(found(&[ruled(LockKind::ReadWrite, &[queue[0], queue[2]])]).is_empty());
        // Untagged, the same ring is one of sessions: only possible.
        let untagged_queue = queue.map(|(name, session, _)| (name, session, None));
        assert!(!found(&[ruled(LockKind::ReadWrite, &untagged_queue)])[0].is_certain());
    }

    /// A mutex's waiter waits on every node ahead, waiting ones too: H (session 3) holds M and
    /// waits on nothing; Y (session 2) waits on M behind H, and X (session 1) behind Y; X holds
    /// N, which Y waits on too. A ring of X and Y, though Y only waits on X and X waits on a
    /// node that waits: once H lets go, Y holds M and still waits on N, and X waits behind Y.
    #[test]
    fn a_waiter_waits_on_the_waiting_nodes_ahead_of_it() {
        let (x, y, h) = (Some(1), Some(2), Some(3));
        let m =
            ruled(LockKind::Mutex, &[("lock-0000000001", 3, h), ("lock-0000000002", 2, y), ("lock-0000000003", 1, x)]);
        let n = ruled(LockKind::Mutex, &[("lock-0000000004", 1, x), ("lock-0000000005", 2, y)]);
        let cycles = found(&[m.clone(), n]);
        assert_eq!(cycles.len(), 1, "{cycles:?}");
        let ring: Vec<(Session, Session)> =
            cycles[0].hops.iter().map(|hop| (hop.waiter_session, hop.holder_session)).collect();
        assert_eq!(ring, [(1, 2), (2, 1)]);
        assert!(cycles[0].hops[0].waits[0].holder_waiting, "X waits on Y's waiting node");
        // Without N, everyone waits on H, which waits on nothing.
        assert!(found(&[m]).is_empty());
    }

    #[test]
    fn a_ring_is_certain_only_when_every_vertex_on_it_is_a_task() {
        let tagged_ring =
            [vec![tagged(1, 1, 0, true), tagged(2, 2, 1, false)], vec![tagged(2, 2, 2, true), tagged(1, 1, 3, false)]];
        assert!(found(&tagged_ring)[0].is_certain());
        let half = [vec![tagged(1, 1, 0, true), node(2, 1, false)], vec![node(2, 2, true), tagged(1, 1, 3, false)]];
        let cycles = found(&half);
        assert_eq!(cycles.len(), 1);
        assert!(!cycles[0].is_certain(), "session 2 is read whole");
    }

    /// `locks` with every owner tag taken off: what session-level vertices see.
    fn untagged(locks: &[Vec<Node>]) -> Vec<Vec<Node>> {
        locks.iter().map(|queue| queue.iter().map(|n| Node { owner: None, ..n.clone() }).collect()).collect()
    }

    /// Participants on random locks: each waits only on locks held by participants later in a
    /// random order (or by itself), so there is no ring of them by construction. Tagged, a
    /// participant is a task, several to a session, whose tags repeat across sessions (one task
    /// holding through two clients has one tag in both): rings of sessions there are, often.
    /// Untagged, a participant is a whole session, its nodes from several tasks.
    fn acyclic(rng: &mut fastrand::Rng, tagged: bool) -> (Vec<Vec<Node>>, Vec<Vertex>) {
        let mut order = Vec::new();
        for session in (1..=if tagged { rng.i64(1..=4) } else { rng.i64(2..=8) }).map(|s| 0x1000_0000 + s) {
            let owners: Vec<Option<OwnerTag>> = if tagged {
                (0..rng.u64(1..=4)).map(|tag| Some(OwnerTag::from_hash(tag))).collect()
            } else {
                vec![None]
            };
            order.extend(owners.into_iter().map(|owner| Vertex { session, owner }));
        }
        rng.shuffle(&mut order);
        let mut n = 0;
        let mut node_of = |Vertex { session, owner }: Vertex, behind| {
            n += 1;
            Node { path: format!("s{session}o{owner:?}n{n}"), session, owner, czxid: 0, data: Vec::new(), behind }
        };
        let mut locks = Vec::new();
        for _ in 0..rng.usize(1..=8) {
            // Holders: one (a mutex, a writer) or several (readers), of any participants.
            let holders: Vec<usize> = (0..rng.usize(1..=3)).map(|_| rng.usize(..order.len())).collect();
            let first_holder = *holders.iter().min().expect("one holder at least");
            let mut queue: Vec<Node> = holders.iter().map(|&rank| node_of(order[rank], Vec::new())).collect();
            // Waiters: participants no later than the first holder (that one waits on itself),
            // each behind every node ahead, the later in the order ahead of the earlier.
            let mut waiters: Vec<usize> = (0..rng.usize(0..=4)).map(|_| rng.usize(..=first_holder)).collect();
            waiters.sort_unstable_by(|a, b| b.cmp(a));
            for rank in waiters {
                let ahead = (0..queue.len()).collect();
                queue.push(node_of(order[rank], ahead));
            }
            locks.push(queue);
        }
        (locks, order)
    }

    #[test]
    fn random_acyclic_waits_of_tasks_and_sessions_have_no_cycle_and_a_ring_added_is_found() {
        let base =
            std::env::var("WAIT_FOR_SEED").ok().and_then(|seed| seed.parse().ok()).unwrap_or_else(|| fastrand::u64(..));
        let mut session_rings = 0;
        for case in 0..2_000u64 {
            let seed = base.wrapping_add(case);
            let mut rng = fastrand::Rng::with_seed(seed);
            for tagged in [true, false] {
                let (mut locks, order) = acyclic(&mut rng, tagged);
                assert!(
                    found(&locks).is_empty(),
                    "seed {seed} (WAIT_FOR_SEED={seed}), {tagged}: a cycle in {locks:#?}"
                );
                session_rings += usize::from(tagged && !found(&untagged(&locks)).is_empty());
                if order.len() < 2 {
                    continue;
                }
                // A ring of 2 or more participants (tasks of one session or of several), each
                // waiting on a lock the next one holds.
                let mut ring = order.clone();
                rng.shuffle(&mut ring);
                ring.truncate(rng.usize(2..=order.len()));
                for (i, &waiter) in ring.iter().enumerate() {
                    let holder = ring[(i + 1) % ring.len()];
                    let node = |at: Vertex, holds| Node {
                        path: format!("ring{i}{holds}"),
                        owner: at.owner,
                        ..node(at.session, 0, holds)
                    };
                    locks.push(vec![node(holder, true), node(waiter, false)]);
                }
                let cycles = found(&locks);
                let vertex = |session, owner: Option<u64>| Vertex { session, owner: owner.map(OwnerTag::from_hash) };
                let vertices = |cycle: &Deadlock| -> BTreeSet<Vertex> {
                    cycle.hops.iter().map(|hop| vertex(hop.waiter_session, hop.waiter_owner)).collect()
                };
                let wanted: BTreeSet<Vertex> = ring.iter().copied().collect();
                assert!(
                    cycles.iter().any(|cycle| vertices(cycle) == wanted),
                    "seed {seed}: {ring:?} not in {cycles:?}"
                );
                for cycle in &cycles {
                    for (hop, next) in cycle.hops.iter().zip(cycle.hops.iter().cycle().skip(1)) {
                        let waiter = vertex(hop.waiter_session, hop.waiter_owner);
                        let holder = vertex(hop.holder_session, hop.holder_owner);
                        assert_eq!(holder, vertex(next.waiter_session, next.waiter_owner), "seed {seed}: {cycle:?}");
                        assert!(!hop.waits.is_empty() && waiter != holder, "seed {seed}: {cycle:?}");
                    }
                }
            }
        }
        assert!(session_rings > 200, "{session_rings} of 2,000 cases had a ring of sessions: the test proves little");
    }
}
