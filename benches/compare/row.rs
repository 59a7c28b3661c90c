//! What every row of the tables is: a value behind [`Row`], whatever runs its lock (this process
//! on ZooKeeper, a program in another process, or a server of its own). The benchmark runs one
//! list of them (`rows::all`).

use std::error::Error;
use std::future::Future;
use std::pin::Pin;

use crate::cohort::{CohortRun, Layout};
use crate::contended::Contention;
use crate::exclusion::Record;
use crate::failover::Failover;
use crate::handoff::Handoff;
use crate::uncontended::Rounds;
use crate::{Bench, Plan};

/// A scenario whose table has a line per row.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Scenario {
    Uncontended,
    Contended,
    Handoff,
    /// Leader election: the leader gives up, the next participant is told it leads.
    Failover,
    /// Tasks of one process sharing a lock object, with and without local handoff.
    Cohort,
}

/// Whether a row has a line in a scenario's table.
pub enum Part {
    /// It runs, and its line has its figures.
    Runs,
    /// Its line says why it did not run (its library or server is not installed, which fails
    /// the run, or it was skipped on purpose).
    Skipped(String),
    /// It has no line: the scenario does not apply (the floor does not exclude, so it has no
    /// contended figures).
    NoLine,
}

/// Why a row's run did not finish.
#[derive(Debug)]
pub enum Failure {
    /// Its own server failed (Redis, MariaDB): its line says so, it runs no more rounds, and the
    /// run fails at the end.
    Row(String),
    /// ZooKeeper, zklock or a peer program failed: the benchmark stops.
    Bench(Box<dyn Error>),
}

impl<E: Into<Box<dyn Error>>> From<E> for Failure {
    fn from(error: E) -> Failure {
        Failure::Bench(error.into())
    }
}

impl Failure {
    /// The error that stops the benchmark, whichever the failure.
    pub fn into_error(self) -> Box<dyn Error> {
        match self {
            Failure::Row(why) => why.into(),
            Failure::Bench(error) => error,
        }
    }
}

/// A row's run of one scenario, boxed so that the rows can be one list.
pub type Pending<'a, T> = Pin<Box<dyn Future<Output = Result<T, Failure>> + 'a>>;

/// One row of the tables: one lock under comparison.
pub trait Row {
    /// Its name; a skipped line's first cell.
    fn name(&self) -> &str;

    /// The first cell of its line in `scenario`: the name, and what runs it where that matters.
    fn label(&self, _scenario: Scenario, _plan: &Plan) -> String {
        self.name().to_owned()
    }

    /// The last part of its lock paths: every row has paths of its own.
    fn tag(&self) -> &str;

    /// Whether it runs `scenario`, or why it does not.
    fn part(&self, scenario: Scenario) -> Part;

    /// Whether it is the raw floor, which the uncontended table divides every p50 by.
    fn is_floor(&self) -> bool {
        false
    }

    /// Whether its lock lives on the ZooKeeper server (the busy and forceSync passes run only
    /// those rows).
    fn on_zookeeper(&self) -> bool {
        true
    }

    /// The process of the server its lock lives on, for that server's CPU per acquisition.
    fn server_pid(&self, bench: &Bench<'_>) -> Option<u32> {
        bench.zookeeper_pid
    }

    /// Gets ready for the uncontended rounds (a warmed-up session, where it keeps one). Only
    /// rows with [`Part::Runs`] in [`Scenario::Uncontended`] are asked, as for each scenario.
    fn uncontended<'a>(&'a self, _bench: &'a Bench<'a>) -> Pending<'a, Box<dyn Rounds + 'a>> {
        no_line(self.name(), Scenario::Uncontended)
    }

    /// One contended run on the lock at `path`: `plan.contended_warmup` untimed, then
    /// `plan.contended_for` timed, each timed hold appending its enter and exit to `record`
    /// (through [`Record::writer`] in this process, or the file at [`Record::path`] in another).
    fn contended<'a>(&'a self, _bench: &'a Bench<'a>, _path: String, _record: &'a Record) -> Pending<'a, Contention> {
        no_line(self.name(), Scenario::Contended)
    }

    /// One handoff run on the lock at `path`.
    fn handoff<'a>(&'a self, _bench: &'a Bench<'a>, _path: String) -> Pending<'a, Handoff> {
        no_line(self.name(), Scenario::Handoff)
    }

    /// One run of `layout`'s tasks on the lock at `path`, each hold recorded in `record`.
    fn cohort<'a>(
        &'a self,
        _bench: &'a Bench<'a>,
        _path: String,
        _layout: Layout,
        _record: &'a Record,
    ) -> Pending<'a, CohortRun> {
        no_line(self.name(), Scenario::Cohort)
    }

    /// One failover run of the election at `path`.
    fn failover<'a>(&'a self, _bench: &'a Bench<'a>, _path: String) -> Pending<'a, Failover> {
        no_line(self.name(), Scenario::Failover)
    }
}

/// The answer of a row asked to run a scenario it has no line in.
fn no_line<'a, T>(name: &str, scenario: Scenario) -> Pending<'a, T> {
    let why = format!("{name} has no {scenario:?} line");
    Box::pin(async move { Err(why.into()) })
}
