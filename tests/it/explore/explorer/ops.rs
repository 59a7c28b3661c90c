//! What the explorer does: the operations over every lock feature and fault, and the seeded
//! generator of their sequences. An operation names who acts and on what, never a node: the node
//! it meets is picked when it runs, so that a sequence with steps removed (shrinking) still
//! means something, and an operation whose moment has not come (nothing held to release, a
//! busy task) does nothing.

use fastrand::Rng;

/// Actors (sessions, each behind its own proxy): the first two on a plain `Client`, the last on a
/// `zklock::Session`.
pub const ACTORS: usize = 3;

/// Tasks per actor, sharing its lock objects (so that local handoff has a line to pass along).
pub const SLOTS: usize = 3;

/// The locks every actor has, one object each, shared by its tasks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Lock {
    Mutex,
    /// A mutex with local handoff.
    HandoffMutex,
    /// The write side of a read-write lock with local handoff.
    Write,
    /// The read side of the same lock.
    Read,
    /// The write side of a read-write lock that is not reentrant (a task's second acquire
    /// queues a node of its own), built to fail on a deadlock.
    NonReentrantWrite,
    /// The read side of the same lock.
    NonReentrantRead,
    /// A semaphore of two leases.
    Semaphore,
    SemaphoreMutex,
    /// A multi-lock over two paths of its own.
    Multi,
    /// Two mutexes that the first two actors take as links of one chain (`owner_chain`), as a
    /// `zklock` and the `zklock` its command runs do, and the last one as a task.
    ChainedFirst,
    ChainedSecond,
    /// A leader latch's election (not acquired by tasks: each actor joins it, `Op::Elect`).
    Latch,
    /// A leader selector's election, with auto-requeue.
    Selector,
}

impl Lock {
    pub const ALL: [Lock; 11] = [
        Lock::Mutex,
        Lock::HandoffMutex,
        Lock::Write,
        Lock::Read,
        Lock::NonReentrantWrite,
        Lock::NonReentrantRead,
        Lock::Semaphore,
        Lock::SemaphoreMutex,
        Lock::Multi,
        Lock::ChainedFirst,
        Lock::ChainedSecond,
    ];

    pub const ELECTIONS: [Lock; 2] = [Lock::Latch, Lock::Selector];

    /// Whether the same task acquiring it again re-enters its hold.
    pub fn reentrant(self) -> bool {
        matches!(
            self,
            Lock::Mutex | Lock::HandoffMutex | Lock::Write | Lock::Read | Lock::ChainedFirst | Lock::ChainedSecond
        )
    }
}

/// How long an acquire may wait.
#[derive(Clone, Copy, Debug)]
pub enum Wait {
    /// `try_acquire()`.
    Try,
    /// `acquire_timeout(ms)`.
    Timeout(u64),
    /// `acquire()`, until it holds (its task is busy meanwhile).
    Forever,
    /// `acquire()` dropped after `ms`, wherever it is then.
    CancelAfter(u64),
}

/// How the operator deletes nodes of a lock's queue.
#[derive(Clone, Copy, Debug)]
pub enum Deletion {
    /// A holder's node.
    Holder,
    /// A waiter's node, in one transaction with a check that the node it waits for exists.
    Waiter,
    /// The node a waiter waits for, then the waiter's, in one transaction (a `deleteall` batch).
    WaiterWithPredecessor,
    /// Every node of the queue and the queue's directory, as `zkCli deleteall` does.
    WholeQueue,
}

/// One operation.
#[derive(Clone, Copy, Debug)]
pub enum Op {
    Acquire {
        actor: usize,
        slot: usize,
        lock: Lock,
        wait: Wait,
    },
    /// Releases one of the task's holds (`pick` modulo how many it has).
    Release {
        actor: usize,
        slot: usize,
        pick: usize,
    },
    /// The task takes the lock of its last hold again, with `try_acquire`.
    Reenter {
        actor: usize,
        slot: usize,
    },
    /// The task holding the write lock takes the read lock (a downgrade).
    Downgrade {
        actor: usize,
        slot: usize,
    },
    /// The task asks its last hold's `lost()`, in the background (which watches the node).
    WatchLoss {
        actor: usize,
        slot: usize,
    },
    Delete {
        lock: Lock,
        how: Deletion,
        pick: usize,
    },
    /// Asks a holder of the lock to let go (Curator's `Revoker`); holders release on request.
    Revoke {
        lock: Lock,
        pick: usize,
    },
    /// Expires the actor's session; then its proxy stays cut for `cut_ms` (a `Session` cannot
    /// connect its next session meanwhile).
    Expire {
        actor: usize,
        cut_ms: u64,
    },
    /// Cuts the actor's proxy for `ms` (or until a `Heal`).
    Cut {
        actor: usize,
        ms: u64,
    },
    Heal {
        actor: usize,
    },
    /// The actor's proxy refuses its session's next two listings of children (`Throttled`): a
    /// queue view's, an acquire's or a deadlock look's, whichever come first.
    Throttle {
        actor: usize,
    },
    /// The actor joins the election (`Lock::Latch` or `Lock::Selector`), unless in it.
    Elect {
        actor: usize,
        election: Lock,
    },
    /// The actor leaves the election (closes its participant); a selector may instead have its
    /// term interrupted (`interrupt`), and queue again.
    Resign {
        actor: usize,
        election: Lock,
        interrupt: bool,
    },
    /// The `Session` actor's session is made anew by `Session::from_client` from a client whose
    /// session the explorer expired first (the actor's lock objects with it).
    FromExpiredClient,
    /// The server is stopped and started again at once, on its port with its data: every
    /// connection drops, and sessions that come back within their timeout live on.
    Restart,
}

/// Restarts in one case, at most: each takes a second or two of the case.
pub const MAX_RESTARTS: usize = 2;

/// An operation and whether the explorer waits for things to settle before the next (else the
/// next runs at once, racing this one).
#[derive(Clone, Copy, Debug)]
pub struct Step {
    pub op: Op,
    pub settle: bool,
}

/// A sequence of `len` steps from `rng`. Each case is about two locks (most operations name
/// one of them; one is a lock with local handoff every other case; one case in six opens with a
/// ring issue 38 found missed, about its locks) and one actor (seven in ten of the tasks' operations are its tasks'), so that its
/// tasks really contend, queue in the process and in ZooKeeper, and pass holds on.
pub fn generate(rng: &mut Rng, len: usize) -> Vec<Step> {
    let any = |rng: &mut Rng| Lock::ALL[rng.usize(..Lock::ALL.len())];
    let first = if rng.bool() { [Lock::HandoffMutex, Lock::Write][rng.usize(..2)] } else { any(rng) };
    let election = (rng.u8(..4) == 0).then(|| Lock::ELECTIONS[rng.usize(..2)]);
    let mut focus = Focus { locks: [first, any(rng)], actor: rng.usize(..ACTORS), election };
    let mut steps: Vec<Step> = Vec::with_capacity(len);
    // One case in six is about a ring issue 38 found missed, and opens with it, before a hold
    // of a lock without owner tags makes its actor a session read whole (of whose rings the
    // deadlock property can ask nothing): the chain's, about the two chained locks, or a
    // reader's behind a writer behind its own read, about the lock that is not reentrant.
    match rng.u8(..12) {
        0 => {
            focus.locks = [Lock::ChainedFirst, Lock::ChainedSecond];
            steps.extend(chain_ring(rng));
        }
        1 => {
            focus.locks = [Lock::NonReentrantRead, Lock::NonReentrantWrite];
            steps.extend(reread_ring(rng, focus.actor));
        }
        _ => {}
    }
    while steps.len() < len {
        if rng.u8(..3) == 0 {
            steps.extend(motif(rng, focus.actor));
        } else {
            let op = op(rng, &focus);
            let restarts = steps.iter().filter(|step| matches!(step.op, Op::Restart)).count();
            if matches!(op, Op::Restart) && restarts >= MAX_RESTARTS {
                continue;
            }
            steps.push(Step { op, settle: rng.u8(..4) != 0 });
        }
    }
    steps.truncate(len);
    steps
}

/// A few steps that set up a meeting of features (two tasks of one actor in a lock's line, a
/// queue of three, a holder asked back, a multi-lock whose first path goes under it...), then
/// let the random steps around them do the rest.
/// Ordinary steps all: a sequence shrinks through them as through any other.
fn motif(rng: &mut Rng, home: usize) -> Vec<Step> {
    let settled = |op| Step { op, settle: true };
    let (first, second) = two_slots(rng);
    let other = (home + 1 + rng.usize(..ACTORS - 1)) % ACTORS;
    let long = Wait::Timeout(3_000);
    let handoff = [Lock::HandoffMutex, Lock::Write][rng.usize(..2)];
    let acquire = |actor, slot, lock| settled(Op::Acquire { actor, slot, lock, wait: long });
    match rng.u8(..13) {
        // Two tasks of one actor in the line of a lock with local handoff; the holder lets go.
        0 => vec![
            acquire(home, first, handoff),
            acquire(home, second, handoff),
            settled(Op::Release { actor: home, slot: first, pick: 0 }),
        ],
        // The same with a downgrade first: the write hold goes, the read stays.
        1 => vec![
            acquire(home, first, Lock::Write),
            acquire(home, second, Lock::Write),
            settled(Op::Downgrade { actor: home, slot: first }),
            settled(Op::Release { actor: home, slot: first, pick: 0 }),
        ],
        // A queue of three across actors, and the operator deletes the next in line with the
        // node it waits for, in one transaction.
        2 => {
            let lock = Lock::ALL[rng.usize(..Lock::ALL.len())];
            let third = (other + 1) % ACTORS;
            vec![
                acquire(home, first, lock),
                acquire(other, first, lock),
                acquire(third, first, lock),
                settled(Op::Delete { lock, how: Deletion::WaiterWithPredecessor, pick: 0 }),
            ]
        }
        // A holder asked back while a task of its actor waits in its line and another actor
        // waits in ZooKeeper.
        3 => vec![
            acquire(home, first, handoff),
            acquire(home, second, handoff),
            acquire(other, first, handoff),
            settled(Op::Revoke { lock: handoff, pick: 0 }),
        ],
        // The held node deleted before any task of its actor waits; one joins the line and the
        // holder lets go at once.
        4 => vec![
            acquire(home, first, handoff),
            settled(Op::Delete { lock: handoff, how: Deletion::Holder, pick: 0 }),
            Step { op: Op::Acquire { actor: home, slot: second, lock: handoff, wait: long }, settle: false },
            settled(Op::Release { actor: home, slot: first, pick: 0 }),
        ],
        // Three multi-lock takers in a row; the first's node on the first path goes, so the
        // second takes that path and waits for the other; then that path's queue goes whole,
        // and the first lets go of the other path.
        5 => {
            let third = (other + 1) % ACTORS;
            vec![
                acquire(home, first, Lock::Multi),
                acquire(other, first, Lock::Multi),
                acquire(third, first, Lock::Multi),
                settled(Op::Delete { lock: Lock::Multi, how: Deletion::Holder, pick: 0 }),
                settled(Op::Delete { lock: Lock::Multi, how: Deletion::WholeQueue, pick: 0 }),
                settled(Op::Release { actor: home, slot: first, pick: 0 }),
            ]
        }
        // Every actor in an election; the leader's node is deleted, then an actor's session
        // expires.
        6 => {
            let election = Lock::ELECTIONS[rng.usize(..2)];
            let elect = |actor| settled(Op::Elect { actor, election });
            vec![
                elect(home),
                elect(other),
                elect((other + 1) % ACTORS),
                settled(Op::Delete { lock: election, how: Deletion::Holder, pick: 0 }),
                settled(Op::Expire { actor: home, cut_ms: 0 }),
            ]
        }
        // A ring of two actors: each holds one lock, then waits for the other's (bounded, so
        // that a ring nobody breaks ends by its timeouts). Two locks built to fail on a
        // deadlock make a certain ring, whose newest wait gives up; one without (local handoff,
        // a semaphore's gate) makes a ring of sessions read whole, possible only, which stands.
        8 => {
            let first_lock = [Lock::Mutex, Lock::NonReentrantWrite, Lock::Multi][rng.usize(..3)];
            let second_lock = match rng.u8(..3) {
                0 => [Lock::HandoffMutex, Lock::Write, Lock::SemaphoreMutex][rng.usize(..3)],
                _ => [Lock::Mutex, Lock::NonReentrantWrite, Lock::Multi]
                    .into_iter()
                    .filter(|lock| *lock != first_lock)
                    .nth(rng.usize(..2))
                    .expect("two others"),
            };
            vec![
                acquire(home, first, first_lock),
                acquire(other, first, second_lock),
                acquire(home, first, second_lock),
                acquire(other, first, first_lock),
            ]
        }
        9 => reread_ring(rng, home),
        // Issue 38 item 1: a selector and a latch under the same root as the locks, their
        // leader waiting on a lock a follower's task holds (no ring: the follower's place in
        // the election is no wait of its task).
        10 => {
            let lock = Lock::ALL[rng.usize(..Lock::ALL.len())];
            let elect = |actor, election| settled(Op::Elect { actor, election });
            vec![
                elect(home, Lock::Selector),
                elect(home, Lock::Latch),
                elect(other, Lock::Selector),
                elect(other, Lock::Latch),
                acquire(other, first, lock),
                acquire(home, first, lock),
            ]
        }
        // Issue 38 item 5: a watched waiter two behind the holder; its session's next listings
        // are refused as the holder lets go (its view's, unless a look of the actor's other
        // waits comes first): its view must say one ahead, and the queue stands still a while
        // (the steps after it touch nothing of it) for the property to judge.
        11 => {
            let lock = [Lock::HandoffMutex, Lock::Write][rng.usize(..2)];
            let third = (other + 1) % ACTORS;
            let third = if third == home { (third + 1) % ACTORS } else { third };
            let mut steps = vec![
                acquire(other, first, lock),
                acquire(third, first, lock),
                acquire(home, first, lock),
                Step { op: Op::Throttle { actor: home }, settle: false },
                settled(Op::Release { actor: other, slot: first, pick: 0 }),
            ];
            steps.extend([settled(Op::Heal { actor: third }); 5]);
            steps
        }
        12 => chain_ring(rng),
        // The `Session` actor waits (or tries) while its session expires and cannot come back
        // for a while, or while it is made anew from an expired client.
        _ => {
            let session = ACTORS - 1;
            let lock = Lock::ALL[rng.usize(..Lock::ALL.len())];
            let holder = (session + 1) % ACTORS;
            let wait = [Wait::Try, Wait::Timeout(4_000)][rng.usize(..2)];
            let fault = match rng.bool() {
                true => Op::Expire { actor: session, cut_ms: rng.u64(1_500..3_000) },
                false => Op::FromExpiredClient,
            };
            vec![
                acquire(holder, first, lock),
                Step {
                    op: Op::Acquire { actor: session, slot: first, lock, wait: Wait::Timeout(4_000) },
                    settle: true,
                },
                settled(fault),
                settled(Op::Acquire { actor: session, slot: second, lock, wait }),
            ]
        }
    }
}

/// Issue 38 item 3: `zklock /a -- zklock /b` beside `zklock /b -- zklock /a`. The chain's first
/// link holds one chained lock, the last actor holds the second and waits for the first, and
/// the chain's second link waits for the second: a ring of the chain and the last actor,
/// though neither link both holds and waits. It stands through two checks (its waits look
/// under another root) before the first link lets go.
fn chain_ring(rng: &mut Rng) -> Vec<Step> {
    let settled = |op| Step { op, settle: true };
    let acquire = |actor, slot, lock| settled(Op::Acquire { actor, slot, lock, wait: Wait::Timeout(3_000) });
    let (slot, still) = two_slots(rng);
    let [first_link, second_link] = super::world::CHAIN_LINKS;
    let outsider = ACTORS - 1;
    vec![
        acquire(first_link, slot, Lock::ChainedFirst),
        acquire(outsider, slot, Lock::ChainedSecond),
        acquire(outsider, slot, Lock::ChainedFirst),
        acquire(second_link, slot, Lock::ChainedSecond),
        settled(Op::WatchLoss { actor: first_link, slot: still }),
        settled(Op::WatchLoss { actor: outsider, slot: still }),
        settled(Op::Release { actor: first_link, slot, pick: 0 }),
    ]
}

/// Issue 38 item 2: a task of `home` holds a read lock that is not reentrant, another actor's
/// writer queues behind it, and the task reads again, behind that writer: a ring of the task
/// and the writer, though the writer holds nothing. It stands through two checks (its victim
/// looks under another root) before the first read goes.
fn reread_ring(rng: &mut Rng, home: usize) -> Vec<Step> {
    let settled = |op| Step { op, settle: true };
    let acquire = |actor, slot, lock| settled(Op::Acquire { actor, slot, lock, wait: Wait::Timeout(3_000) });
    let (first, second) = two_slots(rng);
    let other = (home + 1 + rng.usize(..ACTORS - 1)) % ACTORS;
    vec![
        acquire(home, first, Lock::NonReentrantRead),
        acquire(other, first, Lock::NonReentrantWrite),
        acquire(home, first, Lock::NonReentrantRead),
        settled(Op::WatchLoss { actor: home, slot: second }),
        settled(Op::WatchLoss { actor: other, slot: second }),
        settled(Op::Release { actor: home, slot: first, pick: 0 }),
    ]
}

/// Two slots of an actor, not the same.
fn two_slots(rng: &mut Rng) -> (usize, usize) {
    let (first, second) = (rng.usize(..SLOTS), rng.usize(..SLOTS - 1));
    (first, if second >= first { second + 1 } else { second })
}

/// What a case is about.
struct Focus {
    locks: [Lock; 2],
    actor: usize,
    /// An election the case is also about (one case in four).
    election: Option<Lock>,
}

fn op(rng: &mut Rng, focus: &Focus) -> Op {
    let actor = if rng.u8(..10) < 7 { focus.actor } else { rng.usize(..ACTORS) };
    let elections = match focus.election {
        Some(election) => (rng.u8(..100) < 15).then_some(election),
        None => (rng.u8(..100) < 2).then(|| Lock::ELECTIONS[rng.usize(..2)]),
    };
    if let Some(election) = elections {
        return match rng.u8(..10) {
            0..=4 => Op::Elect { actor, election },
            5..=6 => Op::Resign { actor, election, interrupt: rng.bool() },
            _ => {
                let how = [Deletion::Holder, Deletion::Waiter, Deletion::WaiterWithPredecessor, Deletion::WholeQueue]
                    [rng.usize(..4)];
                Op::Delete { lock: election, how, pick: rng.usize(..8) }
            }
        };
    }
    let slot = rng.usize(..SLOTS);
    let focus = focus.locks;
    let lock = match rng.u8(..20) {
        0 => Lock::ALL[rng.usize(..Lock::ALL.len())],
        _ => focus[rng.usize(..2)],
    };
    match rng.u8(..100) {
        0..=39 => Op::Acquire { actor, slot, lock, wait: wait(rng) },
        40..=57 => Op::Release { actor, slot, pick: rng.usize(..4) },
        58..=61 => Op::Reenter { actor, slot },
        62..=66 => Op::Downgrade { actor, slot },
        67..=70 => Op::WatchLoss { actor, slot },
        71 => Op::Restart,
        72..=87 => {
            let how = [Deletion::Holder, Deletion::Waiter, Deletion::WaiterWithPredecessor, Deletion::WholeQueue]
                [rng.usize(..4)];
            Op::Delete { lock, how, pick: rng.usize(..8) }
        }
        88..=91 => Op::Revoke { lock, pick: rng.usize(..8) },
        92..=93 => Op::Expire { actor, cut_ms: [0, rng.u64(300..3_000)][rng.usize(..2)] },
        94..=95 => Op::Cut { actor, ms: rng.u64(300..3_000) },
        96 => Op::Heal { actor },
        97 => Op::Throttle { actor },
        _ => Op::FromExpiredClient,
    }
}

fn wait(rng: &mut Rng) -> Wait {
    match rng.u8(..10) {
        // Waits long enough to be served by the steps that follow, short enough that tasks
        // waiting on each other (two locks taken in two orders) do not freeze the case.
        0 => Wait::Try,
        1..=2 => Wait::Timeout(rng.u64(20..400)),
        3..=7 => Wait::Timeout(rng.u64(1_000..4_000)),
        8 => Wait::Forever,
        _ => Wait::CancelAfter(rng.u64(0..60)),
    }
}
