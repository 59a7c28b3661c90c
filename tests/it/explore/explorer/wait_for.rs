//! The model's wait-for graph: who waits behind whom among the explorer's tasks (and the chain
//! two of its actors are links of, one owner for the chained locks), from what the
//! tasks themselves know (their holds, and the nodes their queue views told them they queued)
//! and the order of each queue as the observer lists it, by each lock's rule written again for
//! the model (`QueueKind`), never by asking the library's graph. Its vertices are tasks; its
//! queues are the case's locks by what each lock is (`Paths::queue_kind`), so an election's
//! queue (a latch's or a selector's) and a semaphore's leases are none: a participant's place
//! is no task's wait, and a lease taker goes on when any lease goes.
//!
//! Decided here: a task waiting in a lock object's local line (local handoff) has no node, and
//! the model gives it no edge; such a lock's nodes carry no owner tag, so the library reads the
//! session whole and a ring through it is possible at most (the deadlock property then asks
//! only that a ring of the model across actors be reported at all). A guard let go of from
//! outside its task (a release, a revocation answered) is no task's hold while its delete is
//! under way (`Record::releasing`).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use super::ops::Lock;
use super::world::Paths;
use super::World;

/// A task: its actor and its slot.
pub type Task = (usize, usize);

/// A vertex of the model's graph: a task, or the chain (every node of a chained lock that a
/// link of it queued, whichever task: the links are one owner, `MutexBuilder::owner_chain`). A
/// task with nodes of both kinds is two vertices, as it is to the library.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Vertex {
    Task(Task),
    Chain,
}

impl Vertex {
    /// The vertex of `task`'s node `node`.
    pub fn of(paths: &Paths, task: Task, node: &str) -> Vertex {
        if paths.chained(task.0, dir(node)) {
            Vertex::Chain
        } else {
            Vertex::Task(task)
        }
    }

    /// The actors it stands for.
    pub fn actors(self) -> Vec<usize> {
        match self {
            Vertex::Task(task) => vec![task.0],
            Vertex::Chain => super::world::CHAIN_LINKS.to_vec(),
        }
    }
}

/// The locks whose nodes carry no owner tag, or whose acquire queues such a node (a semaphore's
/// gate, a plain mutex): an actor with one is a session the library reads whole.
const UNTAGGED: [Lock; 5] = [Lock::HandoffMutex, Lock::Write, Lock::Read, Lock::Semaphore, Lock::SemaphoreMutex];

/// What the model knows of the tasks at one moment, read from their states (no server).
#[derive(Default)]
pub struct Snapshot {
    /// Task -> every node its acquire under way queued (full paths).
    pub waiting: HashMap<Task, Vec<String>>,
    /// Node -> the task whose hold stands on it.
    pub held: HashMap<String, Task>,
    /// Actors holding or acquiring a lock whose nodes carry no owner tag, or letting go of one.
    pub untagged: HashSet<usize>,
    pub releasing: HashSet<String>,
    pub ended: HashSet<String>,
    /// Task -> the lock its acquire under way is for.
    pub acquiring: HashMap<Task, Lock>,
    /// Session id -> the actor on it now.
    pub sessions: HashMap<i64, usize>,
    /// Node -> the lock objects (one session's, by address) its hold or acquire is through.
    pub objects: HashMap<String, usize>,
}

impl Snapshot {
    pub fn take(world: &World) -> Snapshot {
        let mut snapshot = Snapshot::default();
        for actor in &world.actors {
            snapshot.sessions.insert(actor.client().session_id().0, actor.index);
            for (slot, task) in actor.slots.iter().enumerate() {
                let state = task.state.lock().unwrap();
                if let Some(waiting) = &state.waiting {
                    let mut nodes = waiting.nodes.clone();
                    nodes.extend(waiting.node_now().filter(|node| !waiting.nodes.contains(node)));
                    snapshot.objects.extend(nodes.iter().map(|node| (node.clone(), waiting.objects)));
                    snapshot.waiting.insert((actor.index, slot), nodes);
                    snapshot.acquiring.insert((actor.index, slot), waiting.lock);
                    if UNTAGGED.contains(&waiting.lock) {
                        snapshot.untagged.insert(actor.index);
                    }
                }
                for hold in &state.holds {
                    if UNTAGGED.contains(&hold.lock) {
                        snapshot.untagged.insert(actor.index);
                    }
                    for part in hold.held.parts() {
                        snapshot.objects.insert(part.node.clone(), std::sync::Arc::as_ptr(&hold.on) as usize);
                        snapshot.held.insert(part.node, (actor.index, slot));
                    }
                }
            }
        }
        let record = world.record.lock().unwrap();
        snapshot.releasing = record.releasing.clone();
        snapshot.ended = record.ended.clone();
        for node in &record.releasing {
            let dir = dir(node);
            if world.paths.queue_kind(dir).is_some() && !world.paths.tagged(dir) {
                snapshot.untagged.extend(record.owners.get(node).map(|task| task.0));
            }
        }
        snapshot
    }

    /// The task whose node `node` is now: its hold's, or its acquire's under way.
    pub fn owner(&self, node: &str) -> Option<Task> {
        self.held.get(node).copied().or_else(|| {
            self.waiting.iter().find(|(_, nodes)| nodes.iter().any(|queued| queued == node)).map(|(task, _)| *task)
        })
    }

    /// The task of `node`, of session `session`, that the tasks were not told of: the one task
    /// of the session's actor acquiring a lock with a queue there (a multi-lock's first lock,
    /// taken at once while the next one waits, is told to no view).
    pub fn untold_owner(&self, paths: &Paths, node: &str, session: i64) -> Option<Task> {
        let actor = *self.sessions.get(&session)?;
        let mut acquiring = self
            .acquiring
            .iter()
            .filter(|((of, _), lock)| *of == actor && paths.queues(**lock).iter().any(|queue| queue == dir(node)));
        match (acquiring.next(), acquiring.next()) {
            (Some((task, _)), None) => Some(*task),
            _ => None,
        }
    }

    /// For a node with no owner tag, whose session the library reads whole (one vertex,
    /// whichever task): a task of its actor acquiring a lock with a queue there, the first when
    /// several are (two tasks of one session in a semaphore mutex's gate, say, which
    /// [`untold_owner`](Self::untold_owner) cannot tell apart, and need not).
    pub fn untold_session_task(&self, paths: &Paths, node: &str, session: i64) -> Option<Task> {
        let actor = *self.sessions.get(&session)?;
        self.acquiring
            .iter()
            .filter(|((of, _), lock)| *of == actor && paths.queues(**lock).iter().any(|queue| queue == dir(node)))
            .map(|(task, _)| *task)
            .min()
    }

    /// Whether `actor`, a session read whole, waits on `node` now: a task of it queued it, or
    /// acquires the lock it is in (a local handoff's line waits through one node, whichever
    /// task queued it).
    pub fn actor_waits_on(&self, paths: &Paths, actor: usize, node: &str) -> bool {
        let through = |(task, lock): (&Task, &Lock)| {
            task.0 == actor
                && (self.waits_on(*task, node) || paths.queues(*lock).iter().any(|queue| queue == dir(node)))
        };
        self.acquiring.iter().any(through)
    }

    /// Whether `task` waits on `node` now (its acquire under way queued it).
    pub fn waits_on(&self, task: Task, node: &str) -> bool {
        self.waiting.get(&task).is_some_and(|nodes| nodes.iter().any(|queued| queued == node))
    }

    /// The directories of the nodes the acquires under way queued: what the graph and the
    /// queue views need listed.
    pub fn queues(&self) -> BTreeSet<String> {
        self.waiting.values().flatten().map(|node| dir(node).to_owned()).collect()
    }
}

/// The directory a node is in.
pub fn dir(node: &str) -> &str {
    node.rsplit_once('/').map_or("", |(dir, _)| dir)
}

/// A queue's children in queue order (by their sequence number).
pub fn in_queue_order(mut children: Vec<String>) -> Vec<String> {
    children.sort_by_key(|child| child[child.len().saturating_sub(10)..].to_owned());
    children
}

/// waiter -> holder -> the waits (waiting node, node it waits behind) that make the edge.
pub type Graph = BTreeMap<Vertex, BTreeMap<Vertex, BTreeSet<(String, String)>>>;

/// The model's graph at `snapshot`, `listed` holding each queue's children in queue order: an
/// edge from the vertex of each node an acquire queued to the vertex of every node that node
/// waits behind by its lock's rule (held or queued itself), but none from a vertex to itself.
pub fn graph(snapshot: &Snapshot, paths: &Paths, listed: &HashMap<String, Vec<String>>) -> Graph {
    let mut graph = Graph::new();
    for (&task, nodes) in &snapshot.waiting {
        for node in nodes {
            let dir = dir(node);
            let (Some(kind), Some(queue)) = (paths.queue_kind(dir), listed.get(dir)) else { continue };
            let name = &node[dir.len() + 1..];
            let Some(at) = queue.iter().position(|child| child == name) else { continue };
            let waiter = Vertex::of(paths, task, node);
            for ahead in queue[..at].iter().filter(|ahead| kind.waits_behind(name, ahead)) {
                let ahead = format!("{dir}/{ahead}");
                let Some(holder) = snapshot.owner(&ahead).map(|holder| Vertex::of(paths, holder, &ahead)) else {
                    continue;
                };
                if holder != waiter {
                    graph.entry(waiter).or_default().entry(holder).or_default().insert((node.clone(), ahead));
                }
            }
        }
    }
    graph
}

/// A ring of the model: its vertices from the smallest, and its waits.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Ring {
    pub vertices: Vec<Vertex>,
    pub waits: BTreeSet<(String, String)>,
}

impl Ring {
    /// Whether some task of the ring holds or waits on it through two sessions' lock objects
    /// (the `Session` actor made anew from an expired client, its earlier holds kept): the
    /// library's vertices are sessions' tasks, so that task is two of them, and the ring is one
    /// it cannot see (`docs/deadlocks.md`).
    pub fn spans_sessions(&self, snapshot: &Snapshot) -> bool {
        let mut through: HashMap<Task, HashSet<usize>> = HashMap::new();
        for node in self.waits.iter().flat_map(|(waiter, holder)| [waiter, holder]) {
            if let (Some(task), Some(objects)) = (snapshot.owner(node), snapshot.objects.get(node)) {
                through.entry(task).or_default().insert(*objects);
            }
        }
        through.values().any(|objects| objects.len() > 1)
    }
}

/// The graph's elementary cycles.
pub fn rings(graph: &Graph) -> Vec<Ring> {
    fn search(graph: &Graph, path: &mut Vec<Vertex>, found: &mut Vec<Ring>) {
        let (start, last) = (path[0], *path.last().expect("a path starts at a task"));
        for &next in graph.get(&last).into_iter().flat_map(BTreeMap::keys) {
            if next == start {
                let hops = path.iter().zip(path.iter().skip(1).chain([&start]));
                let waits = hops.flat_map(|(waiter, holder)| graph[waiter][holder].iter().cloned()).collect();
                found.push(Ring { vertices: path.clone(), waits });
            } else if next > start && !path.contains(&next) {
                path.push(next);
                search(graph, path, found);
                path.pop();
            }
        }
    }
    let mut found = Vec::new();
    for &start in graph.keys() {
        search(graph, &mut vec![start], &mut found);
    }
    found
}
