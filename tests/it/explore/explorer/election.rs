//! The actors' places in two leader elections, a latch's and a selector's (auto-requeue): each
//! actor joins and leaves them on its session (a `Client`, or the `Session`, which rejoins after
//! an expiry), and the terms they lead are kept where the checks read them as holds: one leader
//! at a time, epochs rising term to term, no term on a node deleted before it began, a leader
//! whose node went told within its bound, and no fenced write of a stale leader accepted.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio::sync::watch;
use tokio::task::JoinHandle;
use zklock::election::{ElectionState, Leadership};
use zklock::hold::Hold;
use zklock::session::Connection;
use zklock::{LeaderLatch, LeaderSelector, Result};

use super::ops::Lock;
use super::world::{Paths, Shared, Started};

pub enum Participant {
    Latch(LeaderLatch),
    Selector(LeaderSelector),
}

impl Participant {
    fn subscribe(&self) -> watch::Receiver<ElectionState> {
        match self {
            Participant::Latch(latch) => latch.subscribe(),
            Participant::Selector(selector) => selector.subscribe(),
        }
    }

    async fn close(&self) -> Result<()> {
        match self {
            Participant::Latch(latch) => latch.close().await,
            Participant::Selector(selector) => selector.close().await,
        }
    }
}

/// An actor's place in one election.
pub struct Seat {
    pub election: Lock,
    participant: Mutex<Option<(Arc<Participant>, JoinHandle<()>)>>,
    /// The last term led, and when this process saw it begin.
    pub term: Arc<Mutex<Option<(Leadership, Instant)>>>,
}

impl Seat {
    pub fn new(election: Lock) -> Seat {
        Seat { election, participant: Mutex::new(None), term: Arc::new(Mutex::new(None)) }
    }

    /// Joins the election, unless in it already (a participant that left for good, its
    /// session ended, is replaced).
    pub async fn join(&self, on: Connection, paths: &Paths, who: (usize, usize), record: &Shared) {
        if let Some((participant, _)) = &*self.participant.lock().unwrap() {
            if !matches!(*participant.subscribe().borrow(), ElectionState::Left) {
                return;
            }
        }
        let path = paths.election(self.election);
        let id = format!("actor-{}", who.0);
        let participant = Arc::new(match self.election {
            Lock::Latch => Participant::Latch(LeaderLatch::new(on, &path, &id).unwrap()),
            _ => Participant::Selector(LeaderSelector::builder(on, &path, &id).auto_requeue(true).build().unwrap()),
        });
        let follower = tokio::spawn(follow(participant.subscribe(), Arc::clone(&self.term), who, Arc::clone(record)));
        let started = match &*participant {
            Participant::Latch(latch) => latch.start().await,
            // The work lasts the term: it ends when the term is lost, interrupted or closed.
            Participant::Selector(selector) => {
                selector
                    .start(|leadership: Leadership| async move {
                        leadership.ended().await;
                    })
                    .await
            }
        };
        let previous = self.participant.lock().unwrap().replace((participant, follower));
        if let Some((_, follower)) = previous {
            follower.abort();
        }
        if started.is_err() {
            self.leave_in_background();
        }
    }

    /// Leaves the election: a selector leading is interrupted instead when `interrupt` (it
    /// queues again).
    pub fn leave(&self, interrupt: bool) {
        if interrupt && self.election == Lock::Selector {
            if let Some((Participant::Selector(selector), _)) =
                self.participant.lock().unwrap().as_ref().map(|(participant, follower)| (&**participant, follower))
            {
                selector.interrupt_leadership();
                return;
            }
        }
        self.leave_in_background();
    }

    fn leave_in_background(&self) {
        if let Some((participant, follower)) = self.participant.lock().unwrap().take() {
            tokio::spawn(async move {
                let _ = participant.close().await;
                follower.abort();
            });
        }
    }

    /// Leaves for good, and returns once the participant's node is gone (the case's end).
    pub async fn close(&self) {
        let taken = self.participant.lock().unwrap().take();
        if let Some((participant, follower)) = taken {
            let _ = participant.close().await;
            follower.abort();
        }
    }
}

/// Records each term the participant begins to lead, as a hold begun.
async fn follow(
    mut states: watch::Receiver<ElectionState>,
    term: Arc<Mutex<Option<(Leadership, Instant)>>>,
    who: (usize, usize),
    record: Shared,
) {
    loop {
        let leading = states.borrow_and_update().leadership().cloned();
        if let Some(leadership) = leading {
            let began = Instant::now();
            let mut term = term.lock().unwrap();
            if term.as_ref().is_none_or(|(last, _)| last.node_path() != leadership.node_path()) {
                let started = Started {
                    who,
                    began,
                    node: leadership.node_path().to_owned(),
                    token: leadership.fencing_token(),
                    reentry: false,
                    passed_on: false,
                    // Seen through the election's state channel, later than its proof: no
                    // forgiveness for a term that began after its node's delete was sent.
                    proven_now: false,
                };
                let mut record = record.lock().unwrap();
                record.terms += 1;
                record.started.push(started);
                *term = Some((leadership, began));
            }
        }
        if states.changed().await.is_err() {
            return;
        }
    }
}
