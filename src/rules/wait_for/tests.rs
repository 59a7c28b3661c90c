//! The wait-for graph's unit tests, with its rings'.
//!
//! For `wait_for.rs` and `rings.rs`: hand-made queues of sessions, tasks and chains, and random
//! acyclic waits with a ring added.

use std::collections::BTreeSet;

use super::*;
use crate::error::{Deadlock, DeadlockHop};
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
    let owner = Some(Tag::Task(OwnerTag::from_hash(tag)));
    Node { path: format!("s{session}o{tag}n{n}"), owner, ..node(session, 0, holds) }
}

/// A node of chain `chain`, created in `session` by one of its processes.
fn chained(session: Session, chain: u64, n: usize, holds: bool) -> Node {
    let owner = Some(Tag::Chain(ChainTag::new(chain).expect("under 2^48")));
    Node { path: format!("s{session}c{chain}n{n}"), owner, ..node(session, 0, holds) }
}

/// The vertex of one side of a hop, from what the hop says of it.
fn vertex_of(session: Session, owner: Option<u64>, chain: Option<u64>) -> Vertex {
    match (owner, chain) {
        (_, Some(chain)) => Vertex::Chain(ChainTag::new(chain).expect("under 2^48")),
        (Some(owner), None) => Vertex::Task(session, OwnerTag::from_hash(owner)),
        (None, None) => Vertex::Session(session),
    }
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
    let hops: Vec<(Session, Session, &str)> =
        cycles[0].hops.iter().map(|hop| (hop.waiter_session, hop.holder_session, hop.waits[0].lock.as_str())).collect();
    assert_eq!(hops, [(1, 2, "/l1"), (2, 1, "/l0")]);
    assert_eq!(cycles[0].hops[0].waits[0].waiter_node_path, "s1t0");
    assert_eq!(cycles[0].hops[0].waits[0].holder_node_path, "s2t0");
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
    let edges: Vec<(Vertex, Vec<Vertex>)> = graph([("/l", queue.as_slice())], &BTreeSet::new())
        .into_iter()
        .map(|(waiter, holders)| (waiter, holders.into_keys().collect()))
        .collect();
    assert_eq!(edges, [(Vertex::Session(2), vec![Vertex::Session(1)])], "only the other session's wait is an edge");
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
    assert_eq!(victim(&cycles[0]).waiter_node_path, "s2t1");
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
    let locks = [vec![node(1, 0, true), tagged(2, 3, 1, false)], vec![tagged(2, 3, 2, true), tagged(1, 2, 3, false)]];
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

/// Issue 38, item 3: `zklock /a -- zklock /b -- …` beside `zklock /b -- zklock /a -- …`,
/// four sessions. The outer link of chain 1 (session 1) holds /a, its inner link (session
/// 2) waits on /b, held by chain 2's outer link (session 3), whose inner link (session 4)
/// waits on /a. As sessions, nobody that waits holds anything: no ring. As chains, one
/// certain ring, each hop naming its chains and the sessions of its wait.
#[test]
fn two_chains_across_four_sessions_are_a_certain_ring() {
    let (one, two) = (0xc1, 0xc2);
    let a = vec![chained(1, one, 0, true), chained(4, two, 1, false)];
    let b = vec![chained(3, two, 2, true), chained(2, one, 3, false)];
    let cycles = found(&[a.clone(), b.clone()]);
    assert_eq!(cycles.len(), 1, "{cycles:?}");
    assert!(cycles[0].is_certain(), "{cycles:?}");
    let hops: Vec<(Option<u64>, Option<u64>, Session, Session)> = cycles[0]
        .hops
        .iter()
        .map(|hop| (hop.waiter_chain, hop.holder_chain, hop.waiter_session, hop.holder_session))
        .collect();
    assert_eq!(hops, [(Some(one), Some(two), 2, 3), (Some(two), Some(one), 4, 1)]);
    assert!(cycles[0].hops.iter().all(|hop| hop.waiter_owner.is_none()), "a chain is no task");
    let sessions: Vec<(Session, Session)> =
        cycles[0].waits().map(|wait| (wait.waiter_session, wait.holder_session)).collect();
    assert_eq!(sessions, [(2, 3), (4, 1)]);
    // The same nodes as tasks, each of one tag per pair: equal tags of different sessions
    // are different tasks, and nobody that waits holds.
    let as_tasks = |queue: &[Node]| -> Vec<Node> {
        let task = |node: &Node| match node.owner {
            Some(Tag::Chain(chain)) => Some(Tag::Task(OwnerTag::from_hash(chain.value()))),
            other => other,
        };
        queue.iter().map(|node| Node { owner: task(node), ..node.clone() }).collect()
    };
    assert!(found(&[as_tasks(&a), as_tasks(&b)]).is_empty(), "task tags never join sessions");
    // Chain 1's outer link in a session read whole (it has an untagged node too): that node is
    // the session's, which waits on nothing, and the ring is missed, never a false one made.
    let elsewhere = vec![node(1, 9, true)];
    assert!(found(&[a, b, elsewhere]).is_empty());
}

/// A queue as its rules read it (`lock_kind.rs`): each node named `name` (queue order), of
/// `session`, tagged `tag` when given.
fn ruled(kind: LockKind, nodes: &[(&str, Session, Option<u64>)]) -> Vec<Node> {
    let names: Vec<String> = nodes.iter().map(|(name, _, _)| (*name).to_owned()).collect();
    let behind = kind.waits_behind(&names);
    let nodes = nodes.iter().zip(behind).zip(1..).map(|((&(name, session, tag), behind), czxid)| Node {
        path: name.to_owned(),
        owner: tag.map(|tag| Tag::Task(OwnerTag::from_hash(tag))),
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
        .map(|wait| (wait.waiter_node_path.as_str(), wait.holder_node_path.as_str(), wait.holder_waiting))
        .collect();
    assert_eq!(
        waits,
        [("__READ__0000000003", "__WRIT__0000000002", true), ("__WRIT__0000000002", "__READ__0000000001", false)]
    );
    assert_eq!(victim(&cycles[0]).waiter_node_path, "__READ__0000000003", "T's wait is the newest");
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
    let m = ruled(LockKind::Mutex, &[("lock-0000000001", 3, h), ("lock-0000000002", 2, y), ("lock-0000000003", 1, x)]);
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
/// holding through two clients has one tag in both), or a chain whose nodes are in any of
/// the sessions, its id equal to some tasks' tags: rings of sessions there are, often.
/// Untagged, a participant is a whole session, its nodes from several tasks.
fn acyclic(rng: &mut fastrand::Rng, tagged: bool) -> (Vec<Vec<Node>>, Vec<Vertex>) {
    let sessions: Vec<Session> =
        (1..=if tagged { rng.i64(1..=4) } else { rng.i64(2..=8) }).map(|s| 0x1000_0000 + s).collect();
    let mut order = Vec::new();
    for &session in &sessions {
        if tagged {
            order.extend((0..rng.u64(1..=4)).map(|tag| Vertex::Task(session, OwnerTag::from_hash(tag))));
        } else {
            order.push(Vertex::Session(session));
        }
    }
    if tagged {
        order.extend((0..rng.u64(0..=2)).map(|id| Vertex::Chain(ChainTag::new(id).expect("small"))));
    }
    rng.shuffle(&mut order);
    let mut n = 0;
    let mut locks = Vec::new();
    for _ in 0..rng.usize(1..=8) {
        // Holders: one (a mutex, a writer) or several (readers), of any participants.
        let holders: Vec<usize> = (0..rng.usize(1..=3)).map(|_| rng.usize(..order.len())).collect();
        let first_holder = *holders.iter().min().expect("one holder at least");
        let mut queue: Vec<Node> = Vec::new();
        for &rank in &holders {
            n += 1;
            queue.push(node_at(order[rank], Vec::new(), n, &sessions, rng));
        }
        // Waiters: participants no later than the first holder (that one waits on itself),
        // each behind every node ahead, the later in the order ahead of the earlier.
        let mut waiters: Vec<usize> = (0..rng.usize(0..=4)).map(|_| rng.usize(..=first_holder)).collect();
        waiters.sort_unstable_by(|a, b| b.cmp(a));
        for rank in waiters {
            n += 1;
            let ahead = (0..queue.len()).collect();
            queue.push(node_at(order[rank], ahead, n, &sessions, rng));
        }
        locks.push(queue);
    }
    (locks, order)
}

/// A node of `at` behind `behind` (`n` tells it apart): a chain's in any of `sessions`.
fn node_at(at: Vertex, behind: Vec<usize>, n: usize, sessions: &[Session], rng: &mut fastrand::Rng) -> Node {
    let (session, owner) = match at {
        Vertex::Session(session) => (session, None),
        Vertex::Task(session, owner) => (session, Some(Tag::Task(owner))),
        Vertex::Chain(chain) => (sessions[rng.usize(..sessions.len())], Some(Tag::Chain(chain))),
    };
    Node { path: format!("{at:?}n{n}"), session, owner, czxid: 0, data: Vec::new(), behind }
}

#[test]
fn random_acyclic_waits_of_tasks_chains_and_sessions_have_no_cycle_and_a_ring_added_is_found() {
    let base =
        std::env::var("WAIT_FOR_SEED").ok().and_then(|seed| seed.parse().ok()).unwrap_or_else(|| fastrand::u64(..));
    let mut session_rings = 0;
    for case in 0..2_000u64 {
        let seed = base.wrapping_add(case);
        let mut rng = fastrand::Rng::with_seed(seed);
        for tagged in [true, false] {
            let (mut locks, order) = acyclic(&mut rng, tagged);
            assert!(found(&locks).is_empty(), "seed {seed} (WAIT_FOR_SEED={seed}), {tagged}: a cycle in {locks:#?}");
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
                let sessions: Vec<Session> = locks.iter().flatten().map(|node| node.session).collect();
                let holds = node_at(holder, Vec::new(), 1_000_000 + 2 * i, &sessions, &mut rng);
                let waits = node_at(waiter, vec![0], 1_000_001 + 2 * i, &sessions, &mut rng);
                locks.push(vec![holds, waits]);
            }
            let cycles = found(&locks);
            let waiter = |hop: &DeadlockHop| vertex_of(hop.waiter_session, hop.waiter_owner, hop.waiter_chain);
            let holder = |hop: &DeadlockHop| vertex_of(hop.holder_session, hop.holder_owner, hop.holder_chain);
            let vertices = |cycle: &Deadlock| -> BTreeSet<Vertex> { cycle.hops.iter().map(waiter).collect() };
            let wanted: BTreeSet<Vertex> = ring.iter().copied().collect();
            assert!(cycles.iter().any(|cycle| vertices(cycle) == wanted), "seed {seed}: {ring:?} not in {cycles:?}");
            for cycle in &cycles {
                for (hop, next) in cycle.hops.iter().zip(cycle.hops.iter().cycle().skip(1)) {
                    assert_eq!(holder(hop), waiter(next), "seed {seed}: {cycle:?}");
                    assert!(!hop.waits.is_empty() && waiter(hop) != holder(hop), "seed {seed}: {cycle:?}");
                }
            }
        }
    }
    assert!(session_rings > 200, "{session_rings} of 2,000 cases had a ring of sessions: the test proves little");
}

/// kazoo's layout by the recipe's rule: T's second read (`__rlock__`) waits behind W's
/// `__lock__`, which waits behind T's first read: the same certain ring as Curator's layout.
/// A kazoo reader with no writer ahead waits on nothing, whatever writer queues behind it.
#[test]
fn a_kazoo_reader_waits_on_the_writers_ahead_of_it_only() {
    let (t, w) = (Some(1), Some(2));
    let queue = [("a__rlock__0000000001", 1, t), ("b__lock__0000000002", 2, w), ("a__rlock__0000000003", 1, t)];
    let cycles = found(&[ruled(LockKind::KazooReadWrite, &queue)]);
    assert_eq!(cycles.len(), 1, "{cycles:?}");
    assert!(cycles[0].is_certain());
    assert_eq!(victim(&cycles[0]).waiter_node_path, "a__rlock__0000000003");
    let reader_first = ruled(LockKind::KazooReadWrite, &[queue[0], queue[1]]);
    assert!(reader_first[0].behind.is_empty() && reader_first[1].behind == [0], "{reader_first:?}");
}
