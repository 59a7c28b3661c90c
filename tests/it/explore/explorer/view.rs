//! The queue views' property (issue 38 item 5): every acquire runs inside `watch_queue`, and a
//! waiting acquire's view, once its queue has stood still, tells how many nodes are ahead of
//! its node as the observer lists the queue. A view that disagrees with the same listing at
//! checks `VIEW_BOUND` apart has stopped following its queue (a view is told at each change
//! within a notification and a listing). Not judged: a view whose node is gone (its session
//! may have ended, and its listings with it), or whose actor's connection was cut since its
//! acquire began.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use super::check::Memory;
use super::wait_for::Snapshot;
use super::World;

/// How long a view may disagree with a queue that stood still.
const VIEW_BOUND: Duration = Duration::from_millis(500);

impl World<'_> {
    pub fn check_views(
        &self,
        memory: &mut Memory,
        _snapshot: &Snapshot,
        listed: &HashMap<String, Vec<String>>,
        violations: &mut Vec<String>,
    ) {
        let now = Instant::now();
        let cut = self.record.lock().unwrap().cut.clone();
        let mut judged = Vec::new();
        for actor in &self.actors {
            for (slot, task) in actor.slots.iter().enumerate() {
                let state = task.state.lock().unwrap();
                let Some(position) = state.waiting.as_ref().and_then(|waiting| waiting.view.borrow().clone()) else {
                    continue;
                };
                let Some(told) = position.ahead else { continue };
                let queue = listed.get(&position.lock_path);
                let name = position.node_path.rsplit('/').next().unwrap_or_default();
                let Some(truth) = queue.and_then(|queue| queue.iter().position(|child| child == name)) else {
                    continue;
                };
                if state.cut_seen || cut.get(&actor.index).copied().unwrap_or(false) || told == truth {
                    continue;
                }
                let node = position.node_path.clone();
                let queue = queue.cloned().unwrap_or_default();
                judged.push(node.clone());
                let since = memory.views_off.entry(node.clone()).or_insert((queue.clone(), told, now));
                if since.0 != queue || since.1 != told {
                    *since = (queue, told, now);
                } else if now.duration_since(since.2) >= VIEW_BOUND {
                    violations.push(format!(
                        "actor {} task {slot}: its queue view says {told} ahead of {node}, the queue has {truth}, unchanged for {:?}",
                        actor.index,
                        now.duration_since(since.2)
                    ));
                }
            }
        }
        memory.views_off.retain(|node, _| judged.contains(node));
    }
}
