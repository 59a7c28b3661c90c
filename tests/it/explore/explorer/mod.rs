//! The parts of the explorer (`tests/it/explore.rs`), one concept per file: the operations and
//! their generator (`ops.rs`), the world they act on (`world.rs`), an actor's task
//! (`slot.rs`), its places in the elections (`election.rs`), the operator and the faults
//! (`operator.rs`), the invariants (`check.rs`), the model's wait-for graph (`wait_for.rs`)
//! and the deadlock property checked against it (`deadlocks.rs`), the queue views' property
//! (`view.rs`); here,
//! one case run from its steps, and the shrinking of a failing one.

pub mod check;
pub mod deadlocks;
pub mod election;
pub mod operator;
pub mod ops;
pub mod slot;
pub mod view;
pub mod wait_for;
pub mod world;

use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use zklock_testcontainers::{ServerOptions, ZooKeeperServer};
use zookeeper_client::Client;

use crate::common::{children, connect_to};
use check::Memory;
use ops::{Op, Step, ACTORS};
use world::{Actor, Paths, Record, Shared};

/// How long a settled step lets things happen before the checks.
const SETTLE: Duration = Duration::from_millis(150);

/// How long a step or a check may take before the case counts as stuck (a step waits for at most
/// a restart's return, a check for a few reads): a hang is a finding with its seed, not a CI
/// run that never ends.
const STUCK: Duration = Duration::from_secs(60);

/// How long the end of a case may take to see every node gone.
const DRAINED_WITHIN: Duration = Duration::from_secs(15);

/// One case's world, on `server`.
pub struct World<'s> {
    pub server: &'s ZooKeeperServer,
    pub paths: Arc<Paths>,
    /// A session of its own straight to the server: the operator, and the checks' eyes.
    pub observer: Client,
    pub actors: Vec<Actor>,
    pub record: Shared,
}

/// What a case did, for the summary.
#[derive(Debug, Default)]
pub struct Tally {
    pub steps: u64,
    pub holds: u64,
    pub passes: u64,
    pub passes_forgiven: u64,
    pub holds_forgiven: u64,
    pub terms: u64,
    /// Rings `find_deadlocks` reported (each time it was asked, after a settled step), certain
    /// ones among them, those forgiven (a wait through a hold being let go or an acquire that
    /// ended), and the acquires that gave up as a ring's victim.
    pub rings: u64,
    pub rings_certain: u64,
    pub rings_forgiven: u64,
    pub gave_up: u64,
    pub deletions: u64,
    pub expiries: u64,
    pub restarts: u64,
    pub restart_expiries: u64,
}

/// A case that broke an invariant: at which step, and how.
#[derive(Debug)]
pub struct Failure {
    pub step: usize,
    pub violations: Vec<String>,
}

/// A server of the explorer's own: the random cases restart it (`Op::Restart`), and no other
/// test of the binary is on it to be disconnected.
pub fn restartable_server() -> &'static ZooKeeperServer {
    static SERVER: OnceLock<ZooKeeperServer> = OnceLock::new();
    SERVER.get_or_init(|| ZooKeeperServer::start_blocking(&ServerOptions::default()).expect("start ZooKeeper"))
}

impl<'s> World<'s> {
    async fn start(server: &'s ZooKeeperServer) -> World<'s> {
        let paths = Arc::new(Paths::unique());
        let record: Shared = Arc::new(Mutex::new(Record::default()));
        let mut actors = Vec::with_capacity(ACTORS);
        for index in 0..ACTORS {
            actors.push(Actor::start(index, index == ACTORS - 1, server.address(), &paths, &record).await);
        }
        World { server, paths, observer: connect_to(&server.connect_string()).await, actors, record }
    }

    async fn run(&self, op: Op) {
        match op {
            Op::Acquire { actor, slot, .. }
            | Op::Release { actor, slot, .. }
            | Op::Reenter { actor, slot }
            | Op::Downgrade { actor, slot }
            | Op::WatchLoss { actor, slot } => {
                let actor = &self.actors[actor];
                // What a task does to its holds goes, when it has none, to the next task of the
                // actor that has some (an operation is never wasted on an empty task).
                let slot = match op {
                    Op::Acquire { .. } => slot,
                    _ => (0..actor.slots.len())
                        .map(|offset| (slot + offset) % actor.slots.len())
                        .find(|at| !actor.slots[*at].state.lock().unwrap().holds.is_empty())
                        .unwrap_or(slot),
                };
                if let Op::Release { pick, .. } = op {
                    actor.slots[slot].release(pick, (actor.index, slot), &self.record);
                    return;
                }
                let cut = self.record.lock().unwrap().cut.get(&actor.index).copied().unwrap_or(false);
                if !actor.slots[slot].is_busy() && !cut {
                    actor.renew_if_ended(&self.paths).await;
                }
                actor.slots[slot].give(op, cut);
            }
            Op::Elect { actor, election } => {
                let actor = &self.actors[actor];
                let cut = self.record.lock().unwrap().cut.get(&actor.index).copied().unwrap_or(false);
                if !cut {
                    actor.renew_if_ended(&self.paths).await;
                }
                let who = (actor.index, ops::SLOTS + usize::from(election == ops::Lock::Selector));
                actor.seat(election).join(actor.connection(), &self.paths, who, &self.record).await;
            }
            Op::Resign { actor, election, interrupt } => self.actors[actor].seat(election).leave(interrupt),
            Op::Delete { lock, how, pick } => self.delete(lock, how, pick).await,
            Op::Revoke { lock, pick } => self.revoke(lock, pick).await,
            Op::Expire { actor, cut_ms } => self.expire(&self.actors[actor], cut_ms).await,
            Op::Cut { actor, ms } => self.cut(&self.actors[actor], ms),
            Op::Heal { actor } => self.heal(&self.actors[actor]),
            Op::Throttle { actor } => {
                for _ in 0..2 {
                    self.actors[actor].proxy.throttle_next(zklock_testcontainers::ThrottledOperation::GetChildren);
                }
            }
            Op::FromExpiredClient => self.session_anew_from_expired_client().await,
            Op::Restart => self.restart().await,
        }
    }

    /// Heals every proxy, drops every acquire under way and releases every hold; then every node
    /// must be gone.
    async fn finish(&self) -> Vec<String> {
        for actor in &self.actors {
            self.heal(actor);
        }
        for seat in self.actors.iter().flat_map(|actor| &actor.seats) {
            let _ = tokio::time::timeout(DRAINED_WITHIN, seat.close()).await;
        }
        let mut holds = Vec::new();
        for slot in self.actors.iter().flat_map(|actor| &actor.slots) {
            slot.stop();
            holds.extend(std::mem::take(&mut slot.state.lock().unwrap().holds));
        }
        for hold in holds {
            let _ = tokio::time::timeout(DRAINED_WITHIN, world::Held::release_shared(hold.held)).await;
        }
        let give_up = Instant::now() + DRAINED_WITHIN;
        // What the tasks found since the last check (an acquire that answered late, at last).
        let mut found = std::mem::take(&mut self.record.lock().unwrap().violations);
        loop {
            let mut left = Vec::new();
            for dir in self.paths.all_dirs() {
                left.extend(children(&self.observer, &dir).await.into_iter().map(|child| format!("{dir}/{child}")));
            }
            if left.is_empty() {
                return found;
            }
            if Instant::now() > give_up {
                found.push(format!("nodes left once everything was dropped: {left:?}"));
                return found;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// Runs `steps` in a new world on `server`, checking the invariants after every settled step and
/// at the end. A case that restarts the server needs one no other test is on
/// ([`restartable_server`]), and so does any case run beside one that restarts it: a restart
/// cuts every session on the server, the observer's too, which the case's record knows nothing
/// of.
pub async fn run_case(server: &ZooKeeperServer, steps: &[Step]) -> Result<Tally, Failure> {
    run_case_until(server, steps, 0).await
}

/// [`run_case`], which before the case's end (everything dropped) also waits, within [`STUCK`],
/// until `holds` holds have begun: for a case written by hand whose last step serves a waiter,
/// whose hold would otherwise have to begin within the last check's [`SETTLE`].
pub async fn run_case_until(server: &ZooKeeperServer, steps: &[Step], holds: u64) -> Result<Tally, Failure> {
    let world = World::start(server).await;
    let mut memory = Memory::default();
    let mut outcome = Ok(());
    for (index, step) in steps.iter().enumerate() {
        if tokio::time::timeout(STUCK, world.run(step.op)).await.is_err() {
            outcome = Err(Failure {
                step: index,
                violations: vec![format!("{:?} did not return within {STUCK:?}", step.op)],
            });
            break;
        }
        if !step.settle && index + 1 < steps.len() {
            // Racing the next step, but after the tasks given work have run to their first
            // wait (an acquire in its line, say), as two threads of a service would.
            for _ in 0..4 {
                tokio::task::yield_now().await;
            }
            continue;
        }
        tokio::time::sleep(SETTLE).await;
        let violations = match tokio::time::timeout(STUCK, world.check(&mut memory)).await {
            Ok(violations) => violations,
            Err(_) => vec![format!("the checks did not return within {STUCK:?}")],
        };
        if !violations.is_empty() {
            outcome = Err(Failure { step: index, violations });
            break;
        }
    }
    if outcome.is_ok() {
        let begun = async {
            while world.record.lock().unwrap().holds < holds {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        };
        let _ = tokio::time::timeout(STUCK, begun).await;
    }
    let left = world.finish().await;
    let record = world.record.lock().unwrap();
    let tally = Tally {
        steps: steps.len() as u64,
        holds: record.holds,
        passes: record.passes,
        passes_forgiven: memory.passes_forgiven,
        holds_forgiven: memory.holds_forgiven,
        terms: record.terms,
        rings: memory.rings,
        rings_certain: memory.rings_certain,
        rings_forgiven: memory.rings_forgiven,
        gave_up: record.gave_up,
        deletions: record.deletions,
        expiries: record.expiries,
        restarts: record.restarts,
        restart_expiries: record.restart_expiries,
    };
    drop(record);
    outcome?;
    if !left.is_empty() {
        return Err(Failure { step: steps.len(), violations: left });
    }
    Ok(tally)
}

/// Makes a failing sequence shorter: drops runs of steps (halves, then quarters, down to single
/// steps) while the rest still fails, within `budget` reruns. Timing varies, so each candidate
/// is tried twice before it counts as passing.
pub async fn shrink(server: &ZooKeeperServer, mut steps: Vec<Step>, mut budget: usize) -> (Vec<Step>, Failure) {
    let mut failure = match run_case(server, &steps).await {
        Err(failure) => failure,
        Ok(_) => return (steps, Failure { step: 0, violations: vec!["did not fail again on replay".into()] }),
    };
    steps.truncate(failure.step + 1);
    let mut chunk = steps.len().div_ceil(2);
    while chunk >= 1 && budget > 0 {
        let mut at = 0;
        while at < steps.len() && budget > 0 {
            let mut candidate = steps.clone();
            candidate.drain(at..(at + chunk).min(candidate.len()));
            let mut failed = None;
            for _ in 0..2 {
                budget = budget.saturating_sub(1);
                if let Err(found) = run_case(server, &candidate).await {
                    failed = Some(found);
                    break;
                }
            }
            match failed {
                Some(found) => {
                    candidate.truncate(found.step + 1);
                    steps = candidate;
                    failure = found;
                }
                None => at += chunk,
            }
        }
        if chunk == 1 {
            break;
        }
        chunk = chunk.div_ceil(2);
    }
    (steps, failure)
}
