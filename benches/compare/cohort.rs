//! Tasks: the contenders are tasks (threads, for Curator) of one process sharing one lock object
//! per session, as request handlers do; zklock with and without local handoff, beside
//! `Client::lock` and Curator. Throughput, requests, waits, and the fairness cost: the longest
//! wait of a task of another process.

use std::error::Error;

use crate::exclusion::{self, Record};
use crate::report::out;
use crate::row::{Row, Scenario};
use crate::table::{judge, lines, turns};
use crate::{percentile, Bench};

/// The rows the targets compare: zklock with local handoff, and without.
const WITH: &str = "zklock-handoff";
const WITHOUT: &str = "zklock";

/// Who contends: `sessions` sessions (processes, as ZooKeeper sees them) with `tasks` tasks each
/// sharing the session's lock object, and with `lone`, one more session with a single task: the
/// other process whose wait shows what a cohort costs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    pub sessions: usize,
    pub tasks: usize,
    pub lone: bool,
}

impl Layout {
    /// 8 tasks on one session, beside another process's single task.
    pub const ONE_PROCESS: Layout = Layout { sessions: 1, tasks: 8, lone: true };
    /// 4 sessions of 8 tasks each.
    pub const FOUR_PROCESSES: Layout = Layout { sessions: 4, tasks: 8, lone: false };

    pub fn short(self) -> String {
        format!("{}x{}{}", self.sessions, self.tasks, if self.lone { "+1" } else { "" })
    }

    fn describe(self) -> String {
        let tasks = format!("{} tasks on one lock object", self.tasks);
        match (self.sessions, self.lone) {
            (1, true) => format!("{tasks} of one session, and 1 task on a second session (another process)"),
            (sessions, _) => format!("{sessions} sessions (processes), each with {tasks}"),
        }
    }
}

/// One run of one row in one layout.
pub struct CohortRun {
    pub acquisitions: u64,
    /// Requests the server received during the timed part (`mntr`).
    pub requests: u64,
    /// From asking to holding, every timed acquisition (µs).
    pub wait_p50_us: f64,
    pub wait_p99_us: f64,
    /// The longest wait of a task of another process: the lone task's, or without one, any
    /// task's (every session is another process to the others).
    pub longest_other_us: f64,
    /// Holds that began while another holder was inside (from the run's [`Record`]).
    pub violations: u64,
}

impl CohortRun {
    /// A run's figures from the waits of its tasks (µs) and of the other process's task.
    pub fn new(mut waits: Vec<f64>, other: &[f64], requests: u64) -> CohortRun {
        let acquisitions = (waits.len() + other.len()) as u64;
        let longest_other = if other.is_empty() { &waits } else { other }.iter().copied().fold(0.0, f64::max);
        waits.extend_from_slice(other);
        CohortRun {
            acquisitions,
            requests,
            wait_p50_us: percentile(&mut waits, 50.0),
            wait_p99_us: percentile(&mut waits, 99.0),
            longest_other_us: longest_other,
            violations: 0,
        }
    }

    fn per_second(&self, bench: &Bench<'_>) -> f64 {
        self.acquisitions as f64 / bench.plan.contended_for.as_secs_f64()
    }
}

/// Both layouts, each a table of every row that runs tasks, rows taking turns round by round;
/// each run's record is checked as the contended scenario's are. Then the targets, from this
/// run's figures.
pub async fn run(bench: &Bench<'_>, rows: &[Box<dyn Row>]) -> Result<(), Box<dyn Error>> {
    let plan = bench.plan;
    let mut rates = Vec::new();
    for layout in [Layout::ONE_PROCESS, Layout::FOUR_PROCESSES] {
        out!("\n### {}\n", layout.describe());
        let mut lines = lines(bench, rows, Scenario::Cohort, Vec::<CohortRun>::new);
        for round in 0..plan.rounds {
            for at in turns(lines.len(), round) {
                let line = &mut lines[at];
                if !line.runs() {
                    continue;
                }
                let name = format!("{}-{}-{round}", line.row.tag(), layout.short());
                let path = format!("{}/cohort/{name}", bench.base);
                let record = Record::create(&name)?;
                let outcome = line.row.cohort(bench, path, layout, &record).await;
                let outcome = match outcome {
                    Ok(mut run) => {
                        let label = line.row.label(Scenario::Cohort, plan);
                        run.violations = judge(&record, &format!("{label}, {}", layout.short()), run.acquisitions)?;
                        Ok(run)
                    }
                    failed => failed,
                };
                line.record(outcome)?;
            }
        }
        out!(
            "| lock | acquisitions/s (median of {} rounds) | requests per acquisition | wait p50 µs | wait p99 µs | longest wait of another process's task ms | exclusion (file record) |",
            plan.rounds
        );
        out!("|---|---|---|---|---|---|---|");
        for line in &mut lines {
            let label = line.row.label(Scenario::Cohort, plan);
            let tag = line.row.tag();
            line.print(7, label, |runs| {
                runs.sort_by(|a, b| a.per_second(bench).total_cmp(&b.per_second(bench)));
                let median = &runs[runs.len() / 2];
                rates.push((layout, tag.to_owned(), median.per_second(bench)));
                let holds: u64 = runs.iter().map(|run| run.acquisitions).sum();
                let violations: u64 = runs.iter().map(|run| run.violations).sum();
                format!(
                    "{:.0} | {:.2} | {:.0} | {:.0} | {:.1} | {}",
                    median.per_second(bench),
                    median.requests as f64 / median.acquisitions.max(1) as f64,
                    median.wait_p50_us,
                    median.wait_p99_us,
                    median.longest_other_us / 1000.0,
                    exclusion::cell(holds, violations)
                )
            });
        }
    }
    print_targets(&rates);
    Ok(())
}

/// Local handoff's targets: within one process at least 20 times the rate without it, across
/// processes no lower.
fn print_targets(rates: &[(Layout, String, f64)]) {
    let rate = |layout: Layout, tag: &str| rates.iter().find(|(l, t, _)| *l == layout && t == tag).map(|r| r.2);
    out!("\n| target (zklock InterProcessMutex, local handoff) | this run | |");
    out!("|---|---|---|");
    for (layout, what, at_least) in [
        (Layout::ONE_PROCESS, "8 tasks of one session: ≥ 20x the rate without local handoff", 20.0),
        (Layout::FOUR_PROCESSES, "4 sessions of 8 tasks: ≥ the rate without local handoff", 1.0),
    ] {
        let (figure, verdict) = match (rate(layout, WITH), rate(layout, WITHOUT)) {
            (Some(with), Some(without)) => {
                let ratio = with / without;
                (
                    format!("{ratio:.1}x ({with:.0} vs {without:.0}/s)"),
                    if ratio >= at_least { "met" } else { "**not met**" },
                )
            }
            _ => ("–".to_owned(), "not run"),
        };
        out!("| {what} | {figure} | {verdict} |");
    }
}
