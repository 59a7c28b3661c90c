//! Leader failover: `plan.participants` participants, a session each, in one leader election;
//! again and again the leader gives up and joins again at the back. How long from the leader's
//! give-up to the next participant being told it leads, and how many requests each term costs
//! the server.

use std::error::Error;

use crate::report::out;
use crate::row::{Row, Scenario};
use crate::table::{run_rounds, State};
use crate::{percentile, Bench};

/// One failover run of one row: `plan.failovers` terms after `plan.failover_warmup` untimed.
pub struct Failover {
    /// From the leader's give-up to the next leader told, in µs.
    pub p50_us: f64,
    pub p99_us: f64,
    /// Requests the server received per timed term, from every session (`mntr`): the give-up,
    /// the next leader's discovery and the rejoin at the back.
    pub requests_per_term: f64,
}

impl Failover {
    /// The figures of the timed terms: each term's give-up to next leader in µs, and the
    /// server's requests over them.
    pub fn new(mut gaps_us: Vec<f64>, requests: u64) -> Failover {
        let terms = gaps_us.len().max(1) as f64;
        Failover {
            p50_us: percentile(&mut gaps_us, 50.0),
            p99_us: percentile(&mut gaps_us, 99.0),
            requests_per_term: requests as f64 / terms,
        }
    }
}

/// Runs every row's failover once per round, then prints the medians of its rounds, each p50
/// also as a multiple of the raw floor's.
pub async fn run(bench: &Bench<'_>, rows: &[Box<dyn Row>]) -> Result<(), Box<dyn Error>> {
    let plan = bench.plan;
    let mut lines =
        run_rounds(bench, rows, Scenario::Failover, "failover", |row, bench, path| row.failover(bench, path)).await?;
    let median = |runs: &[Failover], figure: fn(&Failover) -> f64| {
        percentile(&mut runs.iter().map(figure).collect::<Vec<_>>(), 50.0)
    };
    let floor_p50 = lines
        .iter()
        .find(|line| line.row.is_floor())
        .and_then(|line| match &line.state {
            State::Runs(runs) => Some(median(runs, |run| run.p50_us)),
            _ => None,
        })
        .unwrap_or(f64::NAN);
    out!(
        "| election | give-up to next leader told p50 µs (median of {} rounds) | p99 µs | p50 / raw floor | requests per term (server-wide count) |",
        plan.rounds
    );
    out!("|---|---|---|---|---|");
    for line in &mut lines {
        let label = line.row.label(Scenario::Failover, plan);
        line.print(5, label, |runs| {
            let p50 = median(runs, |run| run.p50_us);
            format!(
                "{p50:.0} | {:.0} | {:.2} | {:.2}",
                median(runs, |run| run.p99_us),
                p50 / floor_p50,
                median(runs, |run| run.requests_per_term)
            )
        });
    }
    Ok(())
}
