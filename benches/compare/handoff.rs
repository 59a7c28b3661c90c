//! Handoff: many waiters queued on one lock, one session each; how long from one holder's
//! release to the next holder's acquisition, and how many sessions watch each queued node.

use std::error::Error;

use zklock_testcontainers::four_letter_word;

use crate::report::out;
use crate::row::{Row, Scenario};
use crate::table::{run_rounds, State};
use crate::targets::Summary;
use crate::{percentile, Bench};

/// One handoff run of one row: latencies in µs, and the most sessions seen watching one node of
/// the queue (1 means no herd).
pub struct Handoff {
    pub p50_us: f64,
    pub p99_us: f64,
    pub watchers_per_node: usize,
    /// CPU this process spent per handoff (NaN for rows in another process).
    pub client_cpu_us: f64,
    /// CPU the ZooKeeper server spent per handoff (NaN when it is not ours to read).
    pub server_cpu_us: f64,
}

/// Runs every row's handoff once per round, then prints the medians of its rounds.
pub async fn run(bench: &Bench<'_>, rows: &[Box<dyn Row>], summary: &mut Summary) -> Result<(), Box<dyn Error>> {
    let plan = bench.plan;
    out!(
        "| lock | release to next holder p50 µs (median of {} rounds) | p99 µs | most sessions watching one node | client CPU per handoff µs | server CPU per handoff µs |",
        plan.rounds
    );
    out!("|---|---|---|---|---|---|");
    let mut lines =
        run_rounds(bench, rows, Scenario::Handoff, "handoff", |row, bench, path| row.handoff(bench, path)).await?;
    for line in &mut lines {
        if let State::Runs(runs) = &line.state {
            let mut p50s: Vec<f64> = runs.iter().map(|run| run.p50_us).collect();
            summary.handoff(bench.pass, line.row.tag(), percentile(&mut p50s, 50.0));
        }
        let label = line.row.label(Scenario::Handoff, plan);
        line.print(6, label, |runs| {
            let median =
                |figure: fn(&Handoff) -> f64| percentile(&mut runs.iter().map(figure).collect::<Vec<_>>(), 50.0);
            format!(
                "{:.0} | {:.0} | {} | {:.0} | {:.0}",
                median(|run| run.p50_us),
                median(|run| run.p99_us),
                runs.iter().map(|run| run.watchers_per_node).max().unwrap_or(0),
                median(|run| run.client_cpu_us),
                median(|run| run.server_cpu_us)
            )
        });
    }
    Ok(())
}

/// From `wchp`: the most sessions watching any one node under `path`.
pub fn most_watchers_per_node(bench: &Bench<'_>, path: &str) -> usize {
    let Ok(answer) = four_letter_word(bench.server, "wchp") else { return 0 };
    let mut most = 0;
    let mut current = 0;
    let mut inside = false;
    for line in answer.lines() {
        if line.starts_with('\t') {
            if inside {
                current += 1;
                most = most.max(current);
            }
        } else {
            inside = line.starts_with(&format!("{path}/"));
            current = 0;
        }
    }
    most
}
