//! The rows on servers other than ZooKeeper (Redis, MariaDB), each started by the benchmark for
//! itself: a lock per connection of this process, requests from the server's own count. When
//! such a server fails, its line says so and the benchmark goes on.

use std::future::Future;

use crate::contended::Contention;
use crate::exclusion::Record;
use crate::row::{Failure, Part, Pending, Row, Scenario};
use crate::spin::{contend, time_cycles, Cycle};
use crate::uncontended::{Latency, Rounds};
use crate::{percentile, Bench, Plan};

/// A server the benchmark starts, and the lock its clients take on it.
pub trait LockServer: Sized + 'static {
    /// The row's name in the tables.
    const NAME: &'static str;
    /// The last part of its lock names.
    const TAG: &'static str;
    /// What reading the request count adds to it (a statement that reads a status is counted).
    const COUNTED_BY_A_READING: u64 = 0;
    /// The lock on one connection.
    type Lock: Cycle;

    /// Starts the server and waits until it serves; `Err` says why the row is skipped.
    fn start() -> impl Future<Output = Result<Self, String>>;

    /// The server's process id, for its CPU time.
    fn pid(&self) -> Option<u32>;

    /// The lock `name` on a connection of its own.
    fn lock(&self, name: &str) -> impl Future<Output = Result<Self::Lock, String>>;

    /// The requests the server has had from the locks' clients, read on a connection of its own.
    fn requests(&self) -> impl Future<Output = Result<u64, String>>;
}

/// The row of server `S`: started in list order.
pub async fn row<S: LockServer>() -> Box<dyn Row> {
    Box::new(OnServer { server: S::start().await })
}

/// A lock on a server other than ZooKeeper, with the server it started, or why it has none.
struct OnServer<S> {
    server: Result<S, String>,
}

impl<S: LockServer> Row for OnServer<S> {
    fn name(&self) -> &str {
        S::NAME
    }

    fn label(&self, scenario: Scenario, plan: &Plan) -> String {
        match scenario {
            Scenario::Contended => format!("{} ({} connections)", S::NAME, plan.sessions),
            _ => S::NAME.to_owned(),
        }
    }

    fn tag(&self) -> &str {
        S::TAG
    }

    fn part(&self, scenario: Scenario) -> Part {
        match (&self.server, scenario) {
            (_, Scenario::Handoff | Scenario::Failover | Scenario::Cohort) => Part::NoLine,
            (Ok(_), _) => Part::Runs,
            (Err(why), _) => Part::Skipped(why.clone()),
        }
    }

    fn on_zookeeper(&self) -> bool {
        false
    }

    fn server_pid(&self, _bench: &Bench<'_>) -> Option<u32> {
        self.server.as_ref().ok().and_then(S::pid)
    }

    fn uncontended<'a>(&'a self, _bench: &'a Bench<'a>) -> Pending<'a, Box<dyn Rounds + 'a>> {
        Box::pin(async move {
            let server = self.server.as_ref().map_err(|why| Failure::Row(why.clone()))?;
            Ok(Box::new(ServerRounds { server, samples: Vec::new(), requests: Vec::new() }) as Box<dyn Rounds>)
        })
    }

    /// `plan.sessions` connections contending, one task each; requests per acquisition count
    /// the retries.
    fn contended<'a>(&'a self, bench: &'a Bench<'a>, path: String, record: &'a Record) -> Pending<'a, Contention> {
        Box::pin(async move {
            let contended = async {
                let server = self.server.as_ref().map_err(String::clone)?;
                let mut locks = Vec::with_capacity(bench.plan.sessions);
                for _ in 0..bench.plan.sessions {
                    locks.push(server.lock(&path).await?);
                }
                let mut run = contend(locks, bench.plan, S::TAG, record, async || server.requests().await).await?;
                // The reading that ends the span counted itself.
                run.requests_per_acquisition -= S::COUNTED_BY_A_READING as f64 / run.acquisitions().max(1) as f64;
                Ok::<_, String>(run)
            };
            contended.await.map_err(Failure::Row)
        })
    }
}

/// The uncontended rounds on one server: µs per timed cycle, and each round's requests per
/// cycle.
struct ServerRounds<'a, S> {
    server: &'a S,
    samples: Vec<f64>,
    requests: Vec<f64>,
}

impl<S: LockServer> Rounds for ServerRounds<'_, S> {
    /// One connection, its warmup and timed cycles; requests per cycle with the warmup's.
    fn round<'a>(&'a mut self, bench: &'a Bench<'a>) -> Pending<'a, ()> {
        Box::pin(async move {
            let (warmup, cycles) = (bench.plan.warmup, bench.plan.cycles);
            let round = async {
                let mut lock = self.server.lock(&format!("{}/uncontended/{}", bench.base, S::TAG)).await?;
                let before = self.server.requests().await?;
                self.samples.extend(time_cycles(&mut lock, warmup, cycles).await?);
                let requests = requests_since(self.server, before).await?;
                self.requests.push(requests as f64 / (warmup + cycles).max(1) as f64);
                Ok(())
            };
            round.await.map_err(Failure::Row)
        })
    }

    fn latency(&mut self, _plan: &Plan) -> Latency {
        Latency {
            p50_us: percentile(&mut self.samples, 50.0),
            p99_us: percentile(&mut self.samples, 99.0),
            requests_per_cycle: percentile(&mut self.requests, 50.0),
            server_wide: true,
        }
    }
}

/// Requests since the count was `before`, less what reading it added.
async fn requests_since<S: LockServer>(server: &S, before: u64) -> Result<u64, String> {
    Ok(server.requests().await?.saturating_sub(before + S::COUNTED_BY_A_READING))
}
