//! The deadlock property, checked after every settled step: `find_deadlocks` on the case's root
//! (every lock of the case, and both elections, under it) against the model's wait-for graph
//! (`wait_for.rs`).
//!
//! - No false ring. Every ring reported, and every ring an acquire gave up on as its victim
//!   (`Error::Deadlock`), is one of the model: each wait is in a lock's queue (never an
//!   election's), its node waits behind the other by the lock's rule, both nodes are nodes the
//!   tasks were told of, each hop's waits go from one vertex to one vertex (a task where the
//!   ring names tags, the chain where it names the chain, else a session read whole) and each hop's holder is the next
//!   hop's waiter. A reported ring must also stand in the model within the call: each waiter
//!   waited on its node, and each node waited behind was its task's (held or queued), as the
//!   model saw it just before the call or just after it (for a session read whole: any of its
//!   tasks', or any acquire of it under way for that lock, since a local handoff's line waits
//!   through one node whichever task queued it). Forgiven, and counted: a wait whose
//!   node waited behind is a hold being let go of (its guard left its task, its delete not
//!   answered yet: the guard moved across tasks that the docs name), or whose waiting node is
//!   an acquire's that had ended (its cleanup deleting it), in either snapshot; and a ring
//!   through a multi-lock's node that no view told (its first lock, taken at once) whose task
//!   neither its owner tag nor a lone multi-lock acquire of its actor tells.
//! - No ring missed. Every ring of the model that stands in the snapshots before and after the
//!   call, with the same waits, and stood so at the check before, must be reported: as
//!   certain when none of its actors held, acquired or let go of a lock without owner tags at
//!   either check (the library would read them whole), else (across actors) at all, unless it
//!   goes through the chain (a link read whole is its session, whose other link's waits are
//!   not its own: the ring is then no ring of the library's vertices). Not asked:
//!   a ring through a task that holds through one session and waits through another (the
//!   `Session` actor made anew from an expired client, its earlier holds kept): the library's
//!   vertices are a session's tasks, and that task is two of them (`docs/deadlocks.md`).

use std::collections::{HashMap, HashSet};

use zklock::deadlock::{find_deadlocks, Deadlock};

use super::check::Memory;
use super::wait_for::{graph, in_queue_order, rings, Ring, Snapshot, Task, Vertex};
use super::World;
use crate::common::children;

/// How long a look may take: a few reads, retried while the observer reconnects (a restart is
/// back within seconds); past it, a look that hangs is a finding, not a stuck case.
const LOOK_BOUND: std::time::Duration = std::time::Duration::from_secs(15);

/// The owner tag a node's name carries (the first 12 hex digits of a version 8 uuid, as
/// `docs/deadlocks.md` shows it), as text: used only to tell which told node an untold one
/// goes with.
fn owner_tag(node: &str) -> Option<String> {
    let uuid = node.rsplit('/').next()?.strip_prefix("_c_")?.get(..36)?;
    (uuid.get(14..15) == Some("8")).then(|| uuid[..13].to_owned())
}

/// A vertex of a reported ring, as the model reads it: one of the model's (a task, the chain),
/// or a session read whole (an actor's, though an actor may have two: the `Session` actor made
/// anew from an expired client keeps its earlier holds on the old one).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Reported {
    Model(Vertex),
    Session(i64),
}

/// What the model says of a reported ring.
enum Judgement {
    Stands,
    Forgiven,
    Broken(String),
}

impl World<'_> {
    pub async fn check_deadlocks(&self, memory: &mut Memory, violations: &mut Vec<String>) {
        let before = Snapshot::take(self);
        let listed_before = self.listed(&before).await;
        let found = match tokio::time::timeout(LOOK_BOUND, find_deadlocks(&self.observer, &self.paths.root)).await {
            Ok(found) => found,
            Err(_) => {
                violations.push(format!("find_deadlocks did not answer within {LOOK_BOUND:?}"));
                memory.standing.clear();
                return;
            }
        };
        let after = Snapshot::take(self);
        let listed_after = self.listed(&after).await;
        self.check_views(memory, &after, &listed_after, violations);
        let (victims, mut owners) = {
            let mut record = self.record.lock().unwrap();
            (std::mem::take(&mut record.victims), record.owners.clone())
        };
        // What the snapshots read from the views themselves, ahead of `follow_view`'s copy.
        for snapshot in [&before, &after] {
            for (task, nodes) in &snapshot.waiting {
                owners.extend(nodes.iter().map(|node| (node.clone(), *task)));
            }
            owners.extend(snapshot.held.iter().map(|(node, task)| (node.clone(), *task)));
        }
        let rings_seen = victims.iter().map(|(_, ring)| ring).chain(found.iter().flat_map(|report| &report.deadlocks));
        let ends: Vec<(&String, i64)> = rings_seen
            .flat_map(|ring| &ring.hops)
            .flat_map(|hop| {
                hop.waits.iter().flat_map(|wait| {
                    [(&wait.waiter_node_path, hop.waiter_session), (&wait.holder_node_path, hop.holder_session)]
                })
            })
            .collect();
        // A node no view told (a multi-lock's first lock, taken at once) is the task's whose
        // told node of the same session carries the same owner tag, else the one task of its
        // actor acquiring a lock with a queue there.
        let by_tag: HashMap<(i64, String), Task> = ends
            .iter()
            .filter_map(|(node, session)| Some(((*session, owner_tag(node)?), *owners.get(*node)?)))
            .collect();
        for (node, session) in ends {
            if !owners.contains_key(node) {
                let sibling = owner_tag(node).and_then(|tag| by_tag.get(&(session, tag)).copied());
                let untold = || [&before, &after].iter().find_map(|at| at.untold_owner(&self.paths, node, session));
                // Untagged, its session is one vertex to the library: any of its tasks there.
                let of_session = || {
                    let untagged = owner_tag(node).is_none();
                    let at = |at: &&Snapshot| at.untold_session_task(&self.paths, node, session);
                    untagged.then(|| [&before, &after].iter().find_map(at)).flatten()
                };
                owners.extend(sibling.or_else(untold).or_else(of_session).map(|task| (node.clone(), task)));
            }
        }
        for (task, ring) in &victims {
            if let Err(why) = self.structure(ring, &owners) {
                violations.push(format!(
                    "actor {} task {} gave up on a ring the model lacks: {why}: {ring:?}",
                    task.0, task.1
                ));
            } else if !ring.waits().any(|wait| owners.get(&wait.waiter_node_path) == Some(task)) {
                violations.push(format!("actor {} task {} gave up on a ring it is not on: {ring:?}", task.0, task.1));
            }
        }
        // A failed look (a restart under way) checks nothing, and breaks the run of checks.
        let Ok(report) = found else {
            memory.standing.clear();
            return;
        };
        let multi = self.paths.queues(super::ops::Lock::Multi);
        let untold_multi = |ring: &Deadlock| {
            let nodes = ring.waits().flat_map(|wait| [&wait.waiter_node_path, &wait.holder_node_path]);
            nodes
                .filter(|node| !owners.contains_key(*node))
                .any(|node| multi.iter().any(|dir| node.starts_with(&format!("{dir}/"))))
        };
        for ring in &report.deadlocks {
            memory.rings += 1;
            memory.rings_certain += u64::from(ring.is_certain());
            // A multi-lock's lock taken at once is told to no view; when neither its tag nor a
            // lone acquire of its actor tells whose it is, the model cannot judge the ring.
            if untold_multi(ring) {
                memory.rings_forgiven += 1;
                continue;
            }
            match self.judge(ring, &owners, [&before, &after]) {
                Judgement::Stands => {}
                Judgement::Forgiven => memory.rings_forgiven += 1,
                Judgement::Broken(why) => {
                    violations.push(format!("a ring the model lacks was reported: {why}: {ring:?}"))
                }
            }
        }
        let model = |snapshot: &Snapshot, listed| rings(&graph(snapshot, &self.paths, listed));
        let now: Vec<Ring> = model(&before, &listed_before);
        let after_rings = model(&after, &listed_after);
        let standing: Vec<Ring> = now.into_iter().filter(|ring| after_rings.contains(ring)).collect();
        let untagged: HashSet<usize> = before.untagged.union(&after.untagged).copied().collect();
        let seen_by_the_library = |ring: &&Ring| !ring.spans_sessions(&before) && !ring.spans_sessions(&after);
        for ring in standing.iter().filter(|ring| memory.standing.contains(ring)).filter(seen_by_the_library) {
            let actors: HashSet<usize> = ring.vertices.iter().flat_map(|vertex| vertex.actors()).collect();
            let sure = actors.is_disjoint(&untagged) && actors.is_disjoint(&memory.untagged);
            let certain = report.deadlocks.iter().filter(|reported| reported.is_certain()).any(|reported| {
                let vertices: HashSet<Option<Vertex>> = reported
                    .waits()
                    .map(|wait| {
                        owners
                            .get(&wait.waiter_node_path)
                            .map(|task| Vertex::of(&self.paths, *task, &wait.waiter_node_path))
                    })
                    .collect();
                vertices == ring.vertices.iter().copied().map(Some).collect()
            });
            let seen = report.deadlocks.iter().any(|reported| {
                reported
                    .waits()
                    .any(|wait| ring.waits.contains(&(wait.waiter_node_path.clone(), wait.holder_node_path.clone())))
            });
            if sure && !certain {
                violations.push(format!(
                    "a certain ring of the model stood for two checks, not reported as certain: {ring:?}"
                ));
            } else if actors.len() > 1 && !seen && (sure || !ring.vertices.contains(&Vertex::Chain)) {
                violations.push(format!("a ring of the model stood for two checks, not reported: {ring:?}"));
            }
        }
        memory.standing = standing;
        memory.untagged = untagged;
    }

    /// The queues the acquires under way are in, each in queue order (an empty one when gone).
    async fn listed(&self, snapshot: &Snapshot) -> HashMap<String, Vec<String>> {
        let mut listed = HashMap::new();
        for dir in snapshot.queues() {
            let children = tokio::time::timeout(LOOK_BOUND, children(&self.observer, &dir)).await.unwrap_or_default();
            listed.insert(dir, in_queue_order(children));
        }
        listed
    }

    /// A reported ring against the model at the snapshots around the call.
    fn judge(&self, ring: &Deadlock, owners: &HashMap<String, Task>, around: [&Snapshot; 2]) -> Judgement {
        if let Err(why) = self.structure(ring, owners) {
            return Judgement::Broken(why);
        }
        let mut forgiven = false;
        for (hop, wait) in ring.hops.iter().flat_map(|hop| hop.waits.iter().map(move |wait| (hop, wait))) {
            let (waiter, holder) = (owners[&wait.waiter_node_path], owners[&wait.holder_node_path]);
            // A session read whole waits (or holds) through any of its tasks.
            // A task or the chain waits (or holds) through the task the node is the model's.
            let waits = around.iter().any(|snapshot| match hop.waiter_owner.or(hop.waiter_chain) {
                Some(_) => snapshot.waits_on(waiter, &wait.waiter_node_path),
                None => snapshot.actor_waits_on(&self.paths, waiter.0, &wait.waiter_node_path),
            });
            let stands = around.iter().any(|snapshot| {
                let untold = || snapshot.untold_owner(&self.paths, &wait.holder_node_path, hop.holder_session);
                let task = snapshot.owner(&wait.holder_node_path).or_else(untold);
                // An untold node (told by its tag) of a task acquiring that lock now.
                let acquiring = snapshot.owner(&wait.holder_node_path).is_none()
                    && snapshot
                        .acquiring
                        .get(&holder)
                        .is_some_and(|lock| self.paths.queues(*lock).iter().any(|queue| queue == &wait.lock));
                match hop.holder_owner.or(hop.holder_chain) {
                    Some(_) => task == Some(holder) || acquiring,
                    None => {
                        task.map(|task| task.0) == Some(holder.0)
                            || snapshot.actor_waits_on(&self.paths, holder.0, &wait.holder_node_path)
                    }
                }
            });
            let ended = around.iter().any(|snapshot| snapshot.ended.contains(&wait.waiter_node_path));
            let let_go = around.iter().any(|snapshot| {
                snapshot.releasing.contains(&wait.holder_node_path) || snapshot.ended.contains(&wait.holder_node_path)
            });
            match (waits || ended, stands || let_go) {
                (true, true) => forgiven |= !waits || !stands,
                (false, _) => {
                    return Judgement::Broken(format!(
                        "actor {} task {} was not waiting on {}",
                        waiter.0, waiter.1, wait.waiter_node_path
                    ))
                }
                (_, false) => {
                    return Judgement::Broken(format!(
                        "{} was not actor {} task {}'s",
                        wait.holder_node_path, holder.0, holder.1
                    ))
                }
            }
        }
        if forgiven {
            Judgement::Forgiven
        } else {
            Judgement::Stands
        }
    }

    /// What a ring must be whenever it was seen: waits in locks' queues by their rules, between
    /// nodes the tasks were told of, one vertex to one vertex per hop, hop to hop.
    fn structure(&self, ring: &Deadlock, owners: &HashMap<String, Task>) -> Result<(), String> {
        let mut ends = Vec::new();
        for hop in &ring.hops {
            let (mut waiters, mut holders) = (HashSet::new(), HashSet::new());
            for wait in &hop.waits {
                let Some(kind) = self.paths.queue_kind(&wait.lock) else {
                    return Err(format!("a wait in {}, which is no lock's queue", wait.lock));
                };
                if !kind.waits_behind(&wait.waiter_node_path, &wait.holder_node_path) {
                    return Err(format!("{} does not wait behind {}", wait.waiter_node_path, wait.holder_node_path));
                }
                let (Some(waiter), Some(holder)) =
                    (owners.get(&wait.waiter_node_path), owners.get(&wait.holder_node_path))
                else {
                    return Err(format!("{} or {} is no task's", wait.waiter_node_path, wait.holder_node_path));
                };
                waiters.insert(self.reported(
                    &wait.waiter_node_path,
                    *waiter,
                    hop.waiter_owner,
                    hop.waiter_chain,
                    hop.waiter_session,
                )?);
                holders.insert(self.reported(
                    &wait.holder_node_path,
                    *holder,
                    hop.holder_owner,
                    hop.holder_chain,
                    hop.holder_session,
                )?);
            }
            let (Some(waiter), Some(holder)) = (waiters.iter().next(), holders.iter().next()) else {
                return Err("a hop without waits".to_owned());
            };
            if waiters.len() > 1 || holders.len() > 1 || waiter == holder {
                return Err(format!("a hop from {waiters:?} to {holders:?}"));
            }
            ends.push((*waiter, *holder));
        }
        let next = ends.iter().skip(1).chain(ends.first());
        if ends.iter().zip(next).any(|((_, holder), (waiter, _))| holder != waiter) {
            return Err(format!("its hops do not chain: {ends:?}"));
        }
        Ok(())
    }

    /// The vertex a ring reports `task`'s node `node` as (by its `owner` tag, its `chain`, else
    /// its `session` read whole), which must be the model's vertex of the node when the ring
    /// names one: a chain's node is no task's, and a task's no chain's.
    fn reported(
        &self,
        node: &str,
        task: Task,
        owner: Option<u64>,
        chain: Option<u64>,
        session: i64,
    ) -> Result<Reported, String> {
        let model = Vertex::of(&self.paths, task, node);
        let reported = match (owner, chain) {
            (Some(_), _) => Vertex::Task(task),
            (None, Some(_)) => Vertex::Chain,
            (None, None) => return Ok(Reported::Session(session)),
        };
        if reported != model {
            return Err(format!("{node} is reported as {reported:?}'s, which the model says is {model:?}"));
        }
        Ok(Reported::Model(model))
    }
}
