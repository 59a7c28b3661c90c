//! Local handoff: this process's line of tasks behind its one queue node.
//!
//! Lock cohorting: how a hold passes from task to task within the bound of a [`LocalHandoff`].
//!
//! The invariant: at most one task of the line is *busy* (holds, queues in ZooKeeper, or has
//! been given the turn and not yet taken it); every other waits here. So no two tasks of one
//! mutex object hold at once, and the process has at most one node in the queue.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use tokio::sync::Notify;
use zookeeper_client::Client;

use crate::client::deadline::{within, Patience};
use crate::client::session_end::wait_session_ended;
use crate::error::Result;
use crate::hold::held_node::HeldNode;
use crate::options::LocalHandoff;
use crate::rules::opening::Opening;

/// The line of one mutex object's tasks; see the module docs.
#[derive(Debug)]
pub(crate) struct Cohort {
    bound: LocalHandoff,
    line: Mutex<Line>,
}

#[derive(Debug, Default)]
struct Line {
    busy: bool,
    /// The node a task of ours holds: how many holders it has had, and since when.
    held: Option<NodeTerm>,
    waiting: VecDeque<Waiter>,
    /// The turn given to the waiter with this id, not taken yet.
    given: Option<(u64, Given)>,
    next_waiter: u64,
}

#[derive(Debug)]
struct NodeTerm {
    node: Arc<HeldNode>,
    holders: u32,
    since: Instant,
}

impl Line {
    /// Sets the held node's watch once a task of ours waits for it. A hold passed on makes no
    /// request, so only the watch can tell the line that the node was deleted (by an operator,
    /// or with the session) before it is passed: without it, a hold shorter than the second
    /// after which every hold watches its node would be passed on past a deletion.
    fn watch_if_awaited(&self) {
        if let (Some(term), false) = (&self.held, self.waiting.is_empty()) {
            term.node.watch_for_deletion();
        }
    }
}

#[derive(Debug)]
struct Waiter {
    id: u64,
    wake: Arc<Notify>,
}

#[derive(Debug)]
enum Given {
    Hold(Handoff),
    /// Nothing to pass on: the waiter queues in ZooKeeper.
    Queue,
}

/// A hold passed on: the node, what the acquire after its deletion may open with, and the new
/// holder's fencing token.
#[derive(Debug)]
pub(crate) struct Handoff {
    pub(crate) node: Arc<HeldNode>,
    pub(crate) next_opening: Opening,
    pub(crate) fencing_token: i64,
}

/// What a task of the line does next.
#[derive(Debug)]
pub(crate) enum Turn {
    /// Hold the node passed on to it.
    Hold(Handoff),
    /// Queue in ZooKeeper, as the one busy task.
    Queue(QueueTurn),
}

impl Cohort {
    pub(crate) fn new(bound: LocalHandoff) -> Arc<Self> {
        Arc::new(Cohort { bound, line: Mutex::new(Line::default()) })
    }

    /// Takes the current task's turn: at once when no task of ours is busy, else after waiting
    /// here (within `patience`; never under `NoWait`, since a task of ours is ahead). `None`:
    /// out of time.
    ///
    /// # Errors
    /// [`SessionExpired`](crate::Error::SessionExpired) or
    /// [`SessionClosed`](crate::Error::SessionClosed) once `client`'s session ends while waiting
    /// here: promptly, as a waiter in ZooKeeper's queue would, whatever the holder does.
    ///
    /// # Cancel safety
    /// Cancel safe: a waiter dropped with a turn given to it passes the turn on.
    pub(crate) async fn take_turn(self: &Arc<Self>, client: &Client, patience: Patience) -> Result<Option<Turn>> {
        let wait = {
            let mut line = self.lock();
            if !line.busy {
                line.busy = true;
                return Ok(Some(Turn::Queue(QueueTurn { cohort: Arc::clone(self), holding: false })));
            }
            if patience == Patience::NoWait {
                return Ok(None);
            }
            let id = line.next_waiter;
            line.next_waiter += 1;
            let wake = Arc::new(Notify::new());
            line.waiting.push_back(Waiter { id, wake: Arc::clone(&wake) });
            line.watch_if_awaited();
            LocalWait { cohort: Arc::clone(self), id, wake, done: false }
        };
        tokio::select! {
            turn = wait.turn(patience.deadline()) => Ok(turn),
            ended = wait_session_ended(client) => Err(ended),
        }
    }

    /// The busy task's hold of `node` ended (its owner's last guard gone): passes the node, with
    /// what the acquire after its deletion may open with, to the first task waiting here, within
    /// the bound; else returns them, the node to be deleted, and gives the turn to queue anew to
    /// the first waiter, if any.
    pub(crate) fn pass_on(&self, node: Arc<HeldNode>, next_opening: Opening) -> Option<(Arc<HeldNode>, Opening)> {
        self.pass_node(&mut self.lock(), node, next_opening)
    }

    /// Passes `node` to the first waiter while the bound allows; else lets it go (returned) and
    /// gives the next waiter the turn to queue.
    fn pass_node(
        &self,
        line: &mut Line,
        node: Arc<HeldNode>,
        next_opening: Opening,
    ) -> Option<(Arc<HeldNode>, Opening)> {
        let term = line.held.take();
        let passable = term.filter(|term| {
            term.holders < self.bound.holders() && term.since.elapsed() < self.bound.time() && may_pass(&node)
        });
        let token = passable.as_ref().and_then(|term| fencing_token(node.czxid(), term.holders));
        match (passable, token, line.waiting.pop_front()) {
            (Some(term), Some(fencing_token), Some(waiter)) => {
                line.held = Some(NodeTerm { node: Arc::clone(&node), holders: term.holders + 1, since: term.since });
                line.given = Some((waiter.id, Given::Hold(Handoff { node, next_opening, fencing_token })));
                waiter.wake.notify_one();
                None
            }
            (_, _, waiter) => {
                if let Some(waiter) = waiter {
                    line.waiting.push_front(waiter);
                }
                give_queue_turn(line);
                Some((node, next_opening))
            }
        }
    }

    fn lock(&self) -> MutexGuard<'_, Line> {
        // No code under this lock panics; a poisoned line is still consistent.
        self.line.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Whether a hold of `node` may go on in another task of ours: not when it is known lost, when
/// someone asked for it back (a revocation: the asker waits for the node to go), or when a read
/// hold of its owner stands level with it (a downgrade: another writer would hold beside that
/// reader). The waiter it is passed to checks again once the node's watch is set.
fn may_pass(node: &HeldNode) -> bool {
    node.is_held() && !node.is_revocation_requested() && !node.is_downgraded()
}

/// Whether the waiter given `node` may hold on it: the one decision that lets a task hold with
/// no request of its own, so it carries the invariant of every pass.
///
/// **Invariant.** A task of ours takes a node passed on only if the node is known to exist
/// since the last moment its deletion could have gone unheard (`known_to_exist`, from
/// [`HeldNode::known_to_exist`]), and [`may_pass`] still holds. Known to exist means the server
/// answered a read of the node (the watch's getData, or one exists-read) with the node's watch
/// armed, and since that answer the watch has not been spent and the connection has not
/// changed. Then a deletion before the take is told already (the hold is lost: no take) or its
/// notification is on its way (the notification window, `tests/it/handoff_window.rs`); without
/// it, a node deleted by an operator before the watch was answered, or while the connection
/// was down, would be held beside the holder that the deletion let in. When it is not known,
/// the check is made now, and when the check fails the waiter queues in ZooKeeper.
fn may_take(known_to_exist: Option<bool>, node: &HeldNode) -> bool {
    known_to_exist == Some(true) && may_pass(node)
}

/// Nothing to pass on: the first waiter queues in ZooKeeper, or the line is idle.
fn give_queue_turn(line: &mut Line) {
    match line.waiting.pop_front() {
        Some(waiter) => {
            line.given = Some((waiter.id, Given::Queue));
            waiter.wake.notify_one();
        }
        None => line.busy = false,
    }
}

/// A task waiting in the line; dropped before it took its turn, it leaves the line and passes
/// on whatever it was given.
#[derive(Debug)]
struct LocalWait {
    cohort: Arc<Cohort>,
    id: u64,
    wake: Arc<Notify>,
    done: bool,
}

impl LocalWait {
    async fn turn(mut self, deadline: Option<Instant>) -> Option<Turn> {
        loop {
            // See `may_take`. Nobody else takes what was given to this waiter; dropped
            // meanwhile, it passes the hold on.
            let known_to_exist = match self.node_given() {
                Some(node) => Some(within(deadline, node.known_to_exist()).await?),
                None => None,
            };
            if let Some(given) = self.take_given(known_to_exist.is_some()) {
                self.done = true;
                return Some(match given {
                    Given::Hold(handoff) if may_take(known_to_exist, &handoff.node) => Turn::Hold(handoff),
                    // Lost, unwatchable or asked back since it was passed on: nobody may hold on
                    // it; queue anew instead.
                    Given::Hold(handoff) => {
                        self.cohort.lock().held = None;
                        handoff.node.release_in_background();
                        Turn::Queue(self.queue_turn())
                    }
                    Given::Queue => Turn::Queue(self.queue_turn()),
                });
            }
            // `notify_one` keeps a permit for a waiter not yet listening: no wake-up is missed.
            within(deadline, self.wake.notified()).await?;
        }
    }

    fn queue_turn(&self) -> QueueTurn {
        QueueTurn { cohort: Arc::clone(&self.cohort), holding: false }
    }

    /// The node passed on to this waiter, if one was.
    fn node_given(&self) -> Option<Arc<HeldNode>> {
        match &self.cohort.lock().given {
            Some((id, Given::Hold(handoff))) if *id == self.id => Some(Arc::clone(&handoff.node)),
            _ => None,
        }
    }

    /// Takes what was given to this waiter; a hold only once its node's watch was looked at
    /// (`hold_looked_at`): one given after the look stays for the next round, whose wake-up is
    /// already due.
    fn take_given(&self, hold_looked_at: bool) -> Option<Given> {
        let mut line = self.cohort.lock();
        match line.given {
            Some((id, Given::Hold(_))) if id == self.id && !hold_looked_at => None,
            Some((id, _)) if id == self.id => line.given.take().map(|(_, given)| given),
            _ => None,
        }
    }
}

impl Drop for LocalWait {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let cohort = &self.cohort;
        let mut line = cohort.lock();
        line.waiting.retain(|waiter| waiter.id != self.id);
        let let_go = match line.given.take() {
            Some((id, given)) if id == self.id => match given {
                Given::Hold(handoff) => {
                    // The holders count already has this waiter: put it back.
                    if let Some(term) = &mut line.held {
                        term.holders -= 1;
                    }
                    cohort.pass_node(&mut line, handoff.node, handoff.next_opening)
                }
                Given::Queue => {
                    give_queue_turn(&mut line);
                    None
                }
            },
            other => {
                line.given = other;
                None
            }
        };
        drop(line);
        if let Some((node, _)) = let_go {
            node.release_in_background();
        }
    }
}

/// The busy task's turn to queue in ZooKeeper; dropped without a hold (out of time, failed,
/// cancelled), it gives the turn to the next waiter.
#[derive(Debug)]
pub(crate) struct QueueTurn {
    cohort: Arc<Cohort>,
    holding: bool,
}

impl QueueTurn {
    /// Our queue node is held now, by its first holder.
    pub(crate) fn hold(mut self, node: &Arc<HeldNode>) {
        self.holding = true;
        let mut line = self.cohort.lock();
        line.held = Some(NodeTerm { node: Arc::clone(node), holders: 1, since: Instant::now() });
        line.watch_if_awaited();
    }
}

impl Drop for QueueTurn {
    fn drop(&mut self) {
        if !self.holding {
            give_queue_turn(&mut self.cohort.lock());
        }
    }
}

/// Bits of a token below the czxid.
const TOKEN_SHIFT: u32 = LocalHandoff::MAX_HOLDERS.trailing_zeros();

/// The fencing token of the holder that `earlier` holders preceded on the node created at
/// `czxid`: `czxid × 256 + earlier` (see [`LocalHandoff`]); `None` past what an `i64` holds.
pub(crate) fn fencing_token(czxid: i64, earlier: u32) -> Option<i64> {
    if !(0..1 << (63 - TOKEN_SHIFT)).contains(&czxid) || earlier >= LocalHandoff::MAX_HOLDERS {
        return None;
    }
    Some(czxid << TOKEN_SHIFT | i64::from(earlier))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_rise_holder_to_holder_and_node_to_node() {
        let last_on_first_node = fencing_token(100, LocalHandoff::MAX_HOLDERS - 1).unwrap();
        assert!(fencing_token(100, 0).unwrap() < fencing_token(100, 1).unwrap());
        assert!(last_on_first_node < fencing_token(101, 0).unwrap());
        assert_eq!(fencing_token(1, 3), Some(259));
    }

    #[test]
    fn tokens_past_an_i64_are_refused() {
        let largest = (1 << 55) - 1;
        assert_eq!(fencing_token(largest, 255), Some(i64::MAX));
        assert_eq!(fencing_token(largest + 1, 0), None);
        assert_eq!(fencing_token(5, 256), None);
        assert_eq!(fencing_token(-1, 0), None);
    }
}
