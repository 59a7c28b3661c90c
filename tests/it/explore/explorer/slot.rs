//! One task of an actor: it runs the operations given to it one at a time (reentrancy is per
//! task), keeps its holds where the checks can read them, and judges what only it can see: an
//! acquire that answered past its patience, an error no documented case explains, a reentry or
//! a downgrade refused.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use zklock::queue::QueuePosition;
use zklock::{Error, Session};
use zookeeper_client::SessionState;

use super::ops::{Lock, Op, Wait};
use super::world::{Held, Hold, Locks, SessionView, Shared, Started};

/// Slack past an acquire's patience before it counts as "past its patience": a timed-out acquire
/// may spend half a second deleting its node, and this machine is small and shared.
const PATIENCE_SLACK: Duration = Duration::from_millis(2_000);

/// How soon a try on a `Session` with no live session answers: at once, whatever the network.
const NO_SESSION_TRY: Duration = Duration::from_millis(500);

static NEXT_HOLD: AtomicU64 = AtomicU64::new(1);

/// An acquire under way, for the checks.
pub struct Busy {
    pub since: Instant,
    pub bound: Option<Duration>,
    /// Whether a cut connection excuses an answer past `bound`.
    pub excusable: bool,
    pub what: String,
}

/// An acquire under way, as the deadlock and queue-view properties read it: its lock, its queue
/// view (every acquire runs inside `watch_queue`), and every node the view told it queued.
pub struct Waiting {
    pub lock: Lock,
    /// The lock objects it acquires through (one session's), by address.
    pub objects: usize,
    pub view: watch::Receiver<Option<QueuePosition>>,
    pub nodes: Vec<String>,
}

impl Waiting {
    /// The node the view tells now, as a full path.
    pub fn node_now(&self) -> Option<String> {
        self.view.borrow().as_ref().map(|position| position.node_path.clone())
    }
}

#[derive(Default)]
pub struct SlotState {
    pub busy: Option<Busy>,
    pub waiting: Option<Waiting>,
    pub holds: Vec<Hold>,
    /// The actor's proxy was cut at some time since the current operation began.
    pub cut_seen: bool,
}

pub struct Slot {
    commands: mpsc::UnboundedSender<Op>,
    pub state: Arc<Mutex<SlotState>>,
    task: JoinHandle<()>,
}

impl Slot {
    pub fn start(
        actor: usize,
        slot: usize,
        session: Option<Arc<Mutex<SessionView>>>,
        locks: &Arc<Mutex<Arc<Locks>>>,
        record: &Shared,
    ) -> Slot {
        let (commands, mut received) = mpsc::unbounded_channel::<Op>();
        let state = Arc::new(Mutex::new(SlotState::default()));
        let me = Task {
            who: (actor, slot),
            session,
            locks: Arc::clone(locks),
            state: Arc::clone(&state),
            record: Arc::clone(record),
        };
        let task = tokio::spawn(async move {
            while let Some(op) = received.recv().await {
                me.run(op).await;
            }
        });
        Slot { commands, state, task }
    }

    /// Gives `op` to the task, unless it is busy with an acquire (then the op does nothing);
    /// `cut` says whether the actor's proxy is cut as it begins.
    pub fn give(&self, op: Op, cut: bool) -> bool {
        let mut state = self.state.lock().unwrap();
        if state.busy.is_some() {
            return false;
        }
        // Marked busy here, so that a second op in the same instant finds it busy.
        state.busy = Some(Busy { since: Instant::now(), bound: None, excusable: true, what: format!("{op:?}") });
        state.cut_seen = cut;
        drop(state);
        self.commands.send(op).is_ok()
    }

    pub fn is_busy(&self) -> bool {
        self.state.lock().unwrap().busy.is_some()
    }

    /// Releases one of the task's holds (`pick` modulo how many), from outside the task, as a
    /// guard may be released anywhere: a task busy waiting for another lock still lets go.
    /// `false` when it holds nothing.
    pub fn release(&self, pick: usize, who: (usize, usize), record: &Shared) -> bool {
        let hold = {
            let mut state = self.state.lock().unwrap();
            if state.holds.is_empty() {
                return false;
            }
            let at = pick % state.holds.len();
            state.holds.remove(at)
        };
        let (state, record) = (Arc::clone(&self.state), Arc::clone(record));
        let nodes = releasing(&hold.held, &record);
        tokio::spawn(async move {
            let cut = |record: &Shared| record.lock().unwrap().cut.get(&who.0).copied().unwrap_or(false);
            let released = Held::release_shared(hold.held).await;
            if released.is_some() {
                released_all(&nodes, &record);
            }
            match released.unwrap_or(Ok(())) {
                Ok(()) => {}
                Err(Error::LockLost(_) | Error::SessionExpired | Error::SessionClosed) => {}
                Err(Error::ZooKeeper { .. }) if cut(&record) || state.lock().unwrap().cut_seen => {}
                Err(err) => {
                    let what = format!(
                        "actor {} task {}: release of {:?} failed: {}",
                        who.0,
                        who.1,
                        hold.lock,
                        err.with_causes()
                    );
                    record.lock().unwrap().violations.push(what);
                }
            }
        });
        true
    }

    /// Ends the task, dropping an acquire under way (which must leave nothing behind).
    pub fn stop(&self) {
        self.task.abort();
    }
}

/// Marks the nodes of `held` as being let go of (`Record::releasing`), and returns them.
pub fn releasing(held: &Held, record: &Shared) -> Vec<String> {
    let nodes: Vec<String> = held.parts().into_iter().map(|part| part.node).collect();
    record.lock().unwrap().releasing.extend(nodes.iter().cloned());
    nodes
}

/// The release of `nodes` answered: they are gone, or will never go by it.
pub fn released_all(nodes: &[String], record: &Shared) {
    let mut record = record.lock().unwrap();
    for node in nodes {
        record.releasing.remove(node);
    }
}

/// Keeps every node the acquire's view tells of, in the task's `Waiting` and as the task's in
/// `Record::owners`, until the acquire ends (its sender dropped).
async fn follow_view(
    mut view: watch::Receiver<Option<QueuePosition>>,
    who: (usize, usize),
    state: Arc<Mutex<SlotState>>,
    record: Shared,
) {
    while view.changed().await.is_ok() {
        let told = view.borrow_and_update().as_ref().map(|position| position.node_path.clone());
        let Some(node) = told else { continue };
        // Told after the acquire ended (this runs behind it): an ended acquire's node.
        let ended = match state.lock().unwrap().waiting.as_mut() {
            Some(waiting) if !waiting.nodes.contains(&node) => {
                waiting.nodes.push(node.clone());
                false
            }
            Some(_) => false,
            None => true,
        };
        let mut record = record.lock().unwrap();
        if ended {
            record.ended.insert(node.clone());
        }
        record.owners.insert(node, who);
    }
}

struct Task {
    who: (usize, usize),
    /// The actor's `Session`, when it is on one.
    session: Option<Arc<Mutex<SessionView>>>,
    locks: Arc<Mutex<Arc<Locks>>>,
    state: Arc<Mutex<SlotState>>,
    record: Shared,
}

impl Task {
    async fn run(&self, op: Op) {
        match op {
            Op::Acquire { lock, wait, .. } => self.acquire(lock, wait).await,
            Op::Reenter { .. } => self.reenter().await,
            Op::Downgrade { .. } => self.downgrade().await,
            Op::WatchLoss { .. } => self.watch_loss().await,
            other => unreachable!("{other:?} is not a task's"),
        }
        self.state.lock().unwrap().busy = None;
    }

    /// The actor's `Session` now, when it is on one.
    fn session(&self) -> Option<Session> {
        self.session.as_ref().map(|view| view.lock().unwrap().session.clone())
    }

    /// Whether the actor's client was connected from `since` until now, never cut meanwhile.
    fn connected_since(&self, since: Instant) -> bool {
        let cut = self.state.lock().unwrap().cut_seen;
        let connected = self.record.lock().unwrap().connected.get(&self.who.0).copied().flatten();
        !cut && connected.is_some_and(|at| at <= since)
    }

    fn violation(&self, what: String) {
        let (actor, slot) = self.who;
        self.record.lock().unwrap().violations.push(format!("actor {actor} task {slot}: {what}"));
    }

    async fn acquire(&self, lock: Lock, wait: Wait) {
        let locks = Arc::clone(&self.locks.lock().unwrap());
        // A try on a `Session` whose session expired (and is not back yet) must not wait for
        // the next one: it answers at once, cut connection or not.
        let no_session = self
            .session()
            .is_some_and(|session| matches!(session.client().state(), SessionState::Expired | SessionState::Closed));
        let strict = no_session && matches!(wait, Wait::Try);
        let (timeout, bound) = match wait {
            Wait::Try if strict => (Some(Duration::ZERO), Some(NO_SESSION_TRY)),
            Wait::Try => (Some(Duration::ZERO), Some(PATIENCE_SLACK)),
            Wait::Timeout(ms) => (Some(Duration::from_millis(ms)), Some(Duration::from_millis(ms) + PATIENCE_SLACK)),
            Wait::Forever | Wait::CancelAfter(_) => (None, None),
        };
        let started = Instant::now();
        if let Some(busy) = self.state.lock().unwrap().busy.as_mut() {
            busy.bound = bound;
            busy.excusable = !strict;
        }
        let (position, view) = watch::channel(None);
        let objects = Arc::as_ptr(&locks) as usize;
        self.state.lock().unwrap().waiting = Some(Waiting { lock, objects, view: view.clone(), nodes: Vec::new() });
        tokio::spawn(follow_view(view, self.who, Arc::clone(&self.state), Arc::clone(&self.record)));
        let acquire = zklock::queue::watch_queue(position, locks.acquire(lock, timeout));
        let outcome = match wait {
            Wait::CancelAfter(ms) => match tokio::time::timeout(Duration::from_millis(ms), acquire).await {
                Ok(outcome) => outcome,
                Err(_) => {
                    self.wait_ended(&[]);
                    return;
                }
            },
            _ => acquire.await,
        };
        let took = started.elapsed();
        let cut_seen = self.state.lock().unwrap().cut_seen;
        // A wait for the network is no wait for other holders: a cut connection excuses time,
        // except for a try on a `Session` with no live session.
        if let Some(bound) = bound {
            let excused = cut_seen && !strict;
            if took > bound && !excused {
                self.violation(format!("{lock:?} {wait:?} answered after {took:?}, past its patience"));
            }
        }
        let held: Vec<String> = match &outcome {
            Ok(Some(held)) => held.parts().into_iter().map(|part| part.node).collect(),
            _ => Vec::new(),
        };
        match outcome {
            Ok(Some(held)) => self.hold(lock, held, false, &locks),
            Ok(None) => {}
            // A ring's victim: what it says is checked against the model (`deadlocks.rs`).
            Err(Error::Deadlock(ring)) => {
                let mut record = self.record.lock().unwrap();
                record.gave_up += 1;
                record.victims.push((self.who, *ring));
            }
            Err(Error::SessionExpired | Error::SessionClosed) if self.session.is_some() => {
                self.violation(format!("{lock:?} {wait:?} on a Session failed with its session's end"))
            }
            Err(Error::SessionExpired | Error::SessionClosed | Error::LockLost(_) | Error::WouldDeadlock(_)) => {}
            Err(Error::ZooKeeper { .. }) if cut_seen => {}
            Err(err) => self.violation(format!("{lock:?} {wait:?} failed: {}", err.with_causes())),
        }
        self.wait_ended(&held);
    }

    /// The acquire under way ended, holding `held`: every other node it queued is an ended
    /// acquire's, which its cleanup may still be deleting.
    fn wait_ended(&self, held: &[String]) {
        let Some(waiting) = self.state.lock().unwrap().waiting.take() else { return };
        let mut nodes = waiting.nodes.clone();
        nodes.extend(waiting.node_now());
        let mut record = self.record.lock().unwrap();
        for node in nodes.into_iter().filter(|node| !held.contains(node)) {
            record.owners.entry(node.clone()).or_insert(self.who);
            record.ended.insert(node);
        }
    }

    fn hold(&self, lock: Lock, held: Held, reentry: bool, on: &Arc<Locks>) {
        let began = Instant::now();
        // Any acquire of a reentrant lock the task holds re-enters it (its node, its token).
        let nodes: Vec<String> = held.parts().into_iter().map(|part| part.node).collect();
        let reentry = reentry
            || self
                .state
                .lock()
                .unwrap()
                .holds
                .iter()
                .any(|hold| hold.held.parts().iter().any(|part| nodes.contains(&part.node)));
        let handoff = matches!(lock, Lock::HandoffMutex | Lock::Write) && !reentry;
        let started: Vec<Started> = held
            .parts()
            .into_iter()
            .map(|part| {
                let passed_on = handoff && part.token & 0xff != 0;
                Started {
                    who: self.who,
                    began,
                    passed_on,
                    proven_now: lock != Lock::Multi && !passed_on,
                    node: part.node,
                    token: part.token,
                    reentry,
                }
            })
            .collect();
        let id = NEXT_HOLD.fetch_add(1, Ordering::Relaxed);
        for part in &started {
            self.record.lock().unwrap().owners.insert(part.node.clone(), self.who);
        }
        let hold = Hold { id, lock, held: Arc::new(held), began, reentry, watched: None, on: Arc::clone(on) };
        self.state.lock().unwrap().holds.push(hold);
        let mut record = self.record.lock().unwrap();
        record.holds += u64::from(!reentry);
        record.passes += started.iter().filter(|part| part.passed_on).count() as u64;
        record.started.extend(started);
    }

    /// The last hold's lock again, by the same task: held at once while the hold stands.
    async fn reenter(&self) {
        let Some((lock, token, believed, locks)) = self.last(|hold| hold.lock.reentrant()) else { return };
        match locks.acquire(lock, Some(Duration::ZERO)).await {
            Ok(Some(held)) => {
                let again = held.parts().first().map(|part| part.token);
                if believed && again != Some(token) {
                    self.violation(format!("{lock:?} re-entered with token {again:?}, not its hold's {token}"));
                }
                self.hold(lock, held, true, &locks);
            }
            Ok(None) if believed => self.violation(format!("{lock:?}: a reentry of a standing hold was refused")),
            _ => {}
        }
    }

    /// The write holder takes the read lock: at once, beside its write hold.
    async fn downgrade(&self) {
        // Through the lock objects the write hold was taken with: a downgrade is per lock object,
        // and a Session made anew from an expired client has new ones that know nothing of it.
        let Some((_, _, believed, locks)) = self.last(|hold| hold.lock == Lock::Write) else { return };
        let began = Instant::now();
        match locks.acquire(Lock::Read, Some(Duration::ZERO)).await {
            Ok(Some(held)) => self.hold(Lock::Read, held, false, &locks),
            // A try answers at once while its client is not connected (it waits for ZooKeeper
            // only while connected): after a cut, the client reconnects on its own schedule.
            Ok(None) if believed && self.connected_since(began) => {
                self.violation("a downgrade of a standing write hold was refused".to_owned())
            }
            _ => {}
        }
    }

    async fn watch_loss(&self) {
        let held = {
            let mut state = self.state.lock().unwrap();
            let Some(hold) = state.holds.last_mut() else { return };
            hold.watched = Some(Instant::now());
            Arc::clone(&hold.held)
        };
        held.watch_loss().await;
    }

    /// The lock, token, standing and lock objects of the task's last hold that `which` accepts.
    fn last(&self, which: impl Fn(&Hold) -> bool) -> Option<(Lock, i64, bool, Arc<Locks>)> {
        let state = self.state.lock().unwrap();
        let hold = state.holds.iter().rev().find(|hold| which(hold))?;
        let parts = hold.held.parts();
        Some((hold.lock, parts.first()?.token, parts.iter().all(|part| part.believed), Arc::clone(&hold.on)))
    }
}
