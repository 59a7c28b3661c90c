//! The rows that lock on the ZooKeeper server from this process, one session per participant.
//! They differ only in the lock each session makes ([`ZooKeeperLock`]), so every scenario runs
//! them alike.

mod cohort;
mod contended;
mod handoff;
mod uncontended;

use std::marker::PhantomData;

use zookeeper_client::{Acls, Client, CreateMode};

use crate::cohort::{CohortRun, Layout};
use crate::contended::Contention;
use crate::exclusion::Record;
use crate::handoff::Handoff;
use crate::row::{Part, Pending, Row, Scenario};
use crate::spin::Cycle;
use crate::uncontended::Rounds;
use crate::{Bench, Plan};

/// A lock (or the lock-free floor) that one ZooKeeper session makes, takes and gives back: what
/// a row of this process is.
pub trait ZooKeeperLock: Cycle + Clone + Sized {
    /// The row's name in the tables.
    const NAME: &'static str;
    /// The last part of its lock paths.
    const TAG: &'static str;
    /// The scenarios it has a line in.
    const SCENARIOS: &'static [Scenario];
    /// Whether it is the raw floor that the uncontended table divides by.
    const IS_FLOOR: bool = false;

    /// The lock at `path`, on `client`'s session; its clones are the handles of the session's
    /// other tasks (one participant for a zklock mutex, a session to lock on for the others).
    fn new(client: &Client, path: &str) -> Self;

    /// A line for under the uncontended table, measured on this warmed-up lock.
    fn note<'a>(&'a self, _plan: &'a Plan) -> Pending<'a, Option<String>> {
        Box::pin(async { Ok(None) })
    }
}

/// The row of lock `L`.
pub fn row<L: ZooKeeperLock>() -> Box<dyn Row> {
    Box::new(InProcess::<L>(PhantomData))
}

struct InProcess<L>(PhantomData<fn() -> L>);

impl<L: ZooKeeperLock> Row for InProcess<L> {
    fn name(&self) -> &str {
        L::NAME
    }

    fn tag(&self) -> &str {
        L::TAG
    }

    fn part(&self, scenario: Scenario) -> Part {
        if L::SCENARIOS.contains(&scenario) {
            Part::Runs
        } else {
            Part::NoLine
        }
    }

    fn is_floor(&self) -> bool {
        L::IS_FLOOR
    }

    fn uncontended<'a>(&'a self, bench: &'a Bench<'a>) -> Pending<'a, Box<dyn Rounds + 'a>> {
        Box::pin(async move { Ok(Box::new(uncontended::Session::<L>::start(bench).await?) as Box<dyn Rounds>) })
    }

    fn contended<'a>(&'a self, bench: &'a Bench<'a>, path: String, record: &'a Record) -> Pending<'a, Contention> {
        Box::pin(async move { Ok(contended::contend::<L>(bench, &path, record).await?) })
    }

    fn handoff<'a>(&'a self, bench: &'a Bench<'a>, path: String) -> Pending<'a, Handoff> {
        Box::pin(async move { Ok(handoff::handoff::<L>(bench, &path).await?) })
    }

    fn cohort<'a>(
        &'a self,
        bench: &'a Bench<'a>,
        path: String,
        layout: Layout,
        record: &'a Record,
    ) -> Pending<'a, CohortRun> {
        Box::pin(async move { Ok(cohort::contend::<L>(bench, &path, layout, record).await?) })
    }
}

/// Creates the lock path as a persistent node, so that no row pays for parents and no container
/// reaper deletes them between cycles.
pub async fn prepare(client: &Client, path: &str) {
    let _ = client.mkdir(path, &CreateMode::Persistent.with_acls(Acls::anyone_all())).await;
}
