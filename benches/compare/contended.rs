//! Contended: `plan.sessions` clients loop on one lock; throughput, fairness, requests and the
//! server's CPU per acquisition, and whether exclusion held, as recorded outside the processes.

use std::error::Error;

use crate::cpu::CpuMeter;
use crate::exclusion::{self, Record};
use crate::report::out;
use crate::row::{Row, Scenario};
use crate::table::{judge, lines, turns, State};
use crate::targets::Summary;
use crate::{Bench, Plan};

/// One contended run of one row.
pub struct Contention {
    /// Timed acquisitions of each client.
    pub counts: Vec<u64>,
    pub requests_per_acquisition: f64,
    /// Holds that began while another holder was inside (from the run's [`Record`]).
    pub violations: u64,
    /// CPU the lock's server spent per acquisition (µs), NaN when unknown (ZK_CONNECT).
    pub server_cpu_us: f64,
}

impl Contention {
    /// A run's counts; the caller fills in the rest.
    pub fn new(counts: Vec<u64>, requests: u64) -> Contention {
        let acquisitions: u64 = counts.iter().sum();
        Contention {
            counts,
            requests_per_acquisition: requests as f64 / acquisitions.max(1) as f64,
            violations: 0,
            server_cpu_us: f64::NAN,
        }
    }

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
/// skipped rows after the others. After each run its record is checked: a hold that overlapped
/// another, or a record that does not have every hold the row counted, fails the run.
pub async fn run(bench: &Bench<'_>, rows: &[Box<dyn Row>], summary: &mut Summary) -> Result<(), Box<dyn Error>> {
    let plan = bench.plan;
    let mut lines = lines(bench, rows, Scenario::Contended, Vec::<Contention>::new);
    let order: Vec<usize> = (0..lines.len()).filter(|&at| lines[at].runs()).collect();
    for round in 0..plan.rounds {
        for turn in turns(order.len(), round) {
            let line = &mut lines[order[turn]];
            if !line.runs() {
                continue;
            }
            let name = format!("{}-{}-{round}", line.row.tag(), bench.pass.short());
            let path = format!("{}/contended/{name}", bench.base);
            let record = Record::create(&name)?;
            let load = bench.load();
            let meter = CpuMeter::start(line.row.server_pid(bench));
            let outcome = line.row.contended(bench, path, &record).await.map(|mut run| {
                run.server_cpu_us = meter.per_operation_us(run.acquisitions());
                run
            });
            Bench::unload(load).await;
            let outcome = match outcome {
                Ok(mut run) => {
                    let label = line.row.label(Scenario::Contended, plan);
                    run.violations = judge(&record, &format!("{label}, {}", bench.pass.title()), run.acquisitions())?;
                    Ok(run)
                }
                failed => failed,
            };
            line.record(outcome)?;
        }
    }
    out!(
        "| lock | acquisitions/s (median of {} rounds) | per client min–max | requests per acquisition | server CPU per acquisition µs | exclusion (file record) |",
        plan.rounds
    );
    out!("|---|---|---|---|---|---|");
    let (mut skipped, mut ran): (Vec<_>, Vec<_>) =
        lines.into_iter().partition(|line| matches!(line.state, State::Skipped(_)));
    for line in ran.iter_mut().chain(&mut skipped) {
        let label = line.row.label(Scenario::Contended, plan);
        let tag = line.row.tag();
        line.print(6, label, |runs| {
            runs.sort_by(|a, b| a.per_second(plan).total_cmp(&b.per_second(plan)));
            let median = &runs[runs.len() / 2];
            summary.contended(bench.pass, tag, median.per_second(plan), median.requests_per_acquisition);
            let holds: u64 = runs.iter().map(Contention::acquisitions).sum();
            let violations: u64 = runs.iter().map(|run| run.violations).sum();
            format!(
                "{:.0} | {}–{} | {:.2} | {:.0} | {}",
                median.per_second(plan),
                median.counts.iter().min().unwrap_or(&0),
                median.counts.iter().max().unwrap_or(&0),
                median.requests_per_acquisition,
                median.server_cpu_us,
                exclusion::cell(holds, violations)
            )
        });
    }
    Ok(())
}
