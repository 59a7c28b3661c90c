//! Contended: `plan.sessions` clients loop on one lock; throughput, fairness, requests and the
//! server's CPU per acquisition, and whether exclusion held.

use std::error::Error;

use crate::cpu::CpuMeter;
use crate::row::{Row, Scenario};
use crate::table::{lines, turns, State};
use crate::{Bench, Plan};

/// One contended run of one row.
pub struct Contention {
    /// Acquisitions of each client.
    pub counts: Vec<u64>,
    pub requests_per_acquisition: f64,
    /// How many times two clients were inside the lock at once.
    pub violations: u64,
    /// CPU the lock's server spent per acquisition (µs), NaN when unknown (ZK_CONNECT).
    pub server_cpu_us: f64,
}

impl Contention {
    /// Acquisitions of every client.
    pub fn acquisitions(&self) -> u64 {
        self.counts.iter().sum()
    }

    fn per_second(&self, plan: &Plan) -> f64 {
        self.acquisitions() as f64 / plan.contended_for.as_secs_f64()
    }
}

/// Every row that runs in every round, the starting row rotating, so that a server still warming
/// up does not favour the rows that run last; the median round of each row is reported, and the
/// skipped rows after the others.
pub async fn run(bench: &Bench<'_>, rows: &[Box<dyn Row>]) -> Result<(), Box<dyn Error>> {
    let plan = bench.plan;
    let mut lines = lines(rows, Scenario::Contended, Vec::<Contention>::new);
    let order: Vec<usize> = (0..lines.len()).filter(|&at| lines[at].runs()).collect();
    for round in 0..plan.rounds {
        for turn in turns(order.len(), round) {
            let line = &mut lines[order[turn]];
            if !line.runs() {
                continue;
            }
            let path = format!("{}/contended/{}-{round}", bench.base, line.row.tag());
            let meter = CpuMeter::start(line.row.server_pid(bench));
            let outcome = line.row.contended(bench, path).await.map(|mut run| {
                run.server_cpu_us = meter.per_operation_us(run.acquisitions());
                run
            });
            line.record(outcome)?;
        }
    }
    println!(
        "| lock | acquisitions/s (median of {} rounds) | per client min–max | requests per acquisition | server CPU per acquisition µs | exclusion |",
        plan.rounds
    );
    println!("|---|---|---|---|---|---|");
    let (mut skipped, mut ran): (Vec<_>, Vec<_>) =
        lines.into_iter().partition(|line| matches!(line.state, State::Skipped(_)));
    for line in ran.iter_mut().chain(&mut skipped) {
        let label = line.row.label(Scenario::Contended, plan);
        line.print(6, label, |runs| {
            runs.sort_by(|a, b| a.per_second(plan).total_cmp(&b.per_second(plan)));
            let median = &runs[runs.len() / 2];
            format!(
                "{:.0} | {}–{} | {:.2} | {:.0} | {}",
                median.per_second(plan),
                median.counts.iter().min().unwrap_or(&0),
                median.counts.iter().max().unwrap_or(&0),
                median.requests_per_acquisition,
                median.server_cpu_us,
                if runs.iter().all(|run| run.violations == 0) { "held" } else { "VIOLATED" }
            )
        });
    }
    Ok(())
}
