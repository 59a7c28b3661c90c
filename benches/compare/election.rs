//! The failover rows that run in this process, a session per participant. They differ only in
//! how their participants join, give up and are told they lead ([`Candidates`]), so the
//! failover scenario runs them alike.

use std::error::Error;
use std::marker::PhantomData;
use std::time::{Duration, Instant};

use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};
use zookeeper_client::Client;

use crate::failover::Failover;
use crate::row::{Part, Pending, Row, Scenario};
use crate::zookeeper::prepare;
use crate::{session, Bench, Plan};

/// Longer than any term can take on a live server: a participant that is never told it leads
/// fails the run instead of hanging it.
const TERM_DEADLINE: Duration = Duration::from_secs(60);

/// The participants of one election, made by one row.
pub trait Candidates: Sized + 'static {
    /// The row's name in the tables.
    const NAME: &'static str;
    /// The last part of its election paths.
    const TAG: &'static str;
    /// Whether it is the raw floor that the failover table divides by.
    const IS_FLOOR: bool = false;

    /// How many sessions it takes part with.
    fn sessions(plan: &Plan) -> usize {
        plan.participants
    }

    /// A participant on each of `clients` in the election at `path`; returns once one of them
    /// has been told it leads.
    async fn join(clients: &[Client], path: &str) -> Result<Self, Box<dyn Error>>;

    /// One term: the leader gives up and joins again at the back. Returns the time from its
    /// give-up to the moment the next participant was told it leads.
    async fn term(&mut self) -> Result<Duration, Box<dyn Error>>;

    /// Every participant leaves the election.
    async fn leave(self) -> Result<(), Box<dyn Error>>;
}

/// The row of the participants `C`.
pub fn row<C: Candidates>() -> Box<dyn Row> {
    Box::new(InProcess::<C>(PhantomData))
}

struct InProcess<C>(PhantomData<fn() -> C>);

impl<C: Candidates> Row for InProcess<C> {
    fn name(&self) -> &str {
        C::NAME
    }

    fn label(&self, _scenario: Scenario, plan: &Plan) -> String {
        format!("{} ({} sessions)", C::NAME, C::sessions(plan))
    }

    fn tag(&self) -> &str {
        C::TAG
    }

    fn part(&self, scenario: Scenario) -> Part {
        match scenario {
            Scenario::Failover => Part::Runs,
            _ => Part::NoLine,
        }
    }

    fn is_floor(&self) -> bool {
        C::IS_FLOOR
    }

    fn failover<'a>(&'a self, bench: &'a Bench<'a>, path: String) -> Pending<'a, Failover> {
        Box::pin(async move { Ok(failover::<C>(bench, &path).await?) })
    }
}

/// Joins, runs the untimed terms, then the timed ones between two readings of the server's
/// count, and leaves.
async fn failover<C: Candidates>(bench: &Bench<'_>, path: &str) -> Result<Failover, Box<dyn Error>> {
    let plan = bench.plan;
    let mut clients = Vec::new();
    for _ in 0..C::sessions(plan) {
        clients.push(session(bench.connect).await?);
    }
    prepare(&clients[0], path).await;
    let mut candidates = C::join(&clients, path).await?;
    for _ in 0..plan.failover_warmup {
        candidates.term().await?;
    }
    let before = bench.requests();
    let mut gaps_us = Vec::with_capacity(plan.failovers);
    for _ in 0..plan.failovers {
        gaps_us.push(candidates.term().await?.as_secs_f64() * 1e6);
    }
    let requests = bench.requests().saturating_sub(before);
    candidates.leave().await?;
    Ok(Failover::new(gaps_us, requests))
}

/// Who leads: each participant, when told it leads, sends its slot and the instant.
pub struct Told {
    sender: UnboundedSender<(usize, Instant)>,
    receiver: UnboundedReceiver<(usize, Instant)>,
    leader: usize,
}

impl Default for Told {
    fn default() -> Told {
        let (sender, receiver) = unbounded_channel();
        Told { sender, receiver, leader: 0 }
    }
}

impl Told {
    /// What a participant tells with.
    pub fn sender(&self) -> UnboundedSender<(usize, Instant)> {
        self.sender.clone()
    }

    /// The slot of the participant told last.
    pub fn leader(&self) -> usize {
        self.leader
    }

    /// Waits for the next participant told it leads; returns how long after `gave_up` it was.
    pub async fn next(&mut self, gave_up: Instant) -> Result<Duration, Box<dyn Error>> {
        match tokio::time::timeout(TERM_DEADLINE, self.receiver.recv()).await {
            Ok(Some((leader, told))) => {
                self.leader = leader;
                Ok(told.duration_since(gave_up))
            }
            _ => Err(format!("no participant was told it leads within {TERM_DEADLINE:?}").into()),
        }
    }
}
