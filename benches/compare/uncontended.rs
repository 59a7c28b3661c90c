//! Uncontended: each row takes its lock and gives it back, cycle after cycle, alone.

use std::error::Error;

use crate::report::out;
use crate::row::{Failure, Part, Pending, Row, Scenario};
use crate::table::{turns, Line, State};
use crate::targets::Summary;
use crate::{percentile, Bench, Pass, Plan};

/// A row's uncontended figures, over every round.
pub struct Latency {
    pub p50_us: f64,
    pub p99_us: f64,
    pub requests_per_cycle: f64,
    /// Whether the requests are the server's count for everyone (for a program, its connects
    /// and closes too), not the row's own session's.
    pub server_wide: bool,
}

impl Latency {
    /// The latency of one session's timed cycles, `samples` (µs each) over every round of
    /// `plan`, with the `requests` the server counted for that session alone.
    pub fn of_session(samples: &mut [f64], requests: u64, plan: &Plan) -> Latency {
        Latency {
            p50_us: percentile(samples, 50.0),
            p99_us: percentile(samples, 99.0),
            requests_per_cycle: requests as f64 / (plan.rounds * plan.cycles) as f64,
            server_wide: false,
        }
    }
}

/// A row's uncontended runs, round after round.
pub trait Rounds {
    /// One round of `plan.cycles` timed cycles.
    fn round<'a>(&'a mut self, bench: &'a Bench<'a>) -> Pending<'a, ()>;

    /// The figures of every round so far.
    fn latency(&mut self, plan: &Plan) -> Latency;

    /// A line for under the table, measured on the row's warmed-up lock.
    fn note<'a>(&'a self, _plan: &'a Plan) -> Pending<'a, Option<String>> {
        Box::pin(async { Ok(None) })
    }
}

/// Runs every row's rounds, then prints the table and the rows' notes. On the busy pass the
/// background load runs from before each row's round until after it.
pub async fn run(bench: &Bench<'_>, rows: &[Box<dyn Row>], summary: &mut Summary) -> Result<(), Box<dyn Error>> {
    let plan = bench.plan;
    let mut lines = Vec::new();
    for row in rows {
        let state = match bench.part(row.as_ref(), Scenario::Uncontended) {
            Part::Runs => State::after(row.uncontended(bench).await)?,
            Part::Skipped(why) => State::Skipped(why),
            Part::NoLine => continue,
        };
        lines.push(Line { row: row.as_ref(), state });
    }
    for round in 0..plan.rounds {
        for at in turns(lines.len(), round) {
            let line = &mut lines[at];
            if let State::Runs(rounds) = &mut line.state {
                let load = bench.load();
                let outcome = rounds.round(bench).await;
                Bench::unload(load).await;
                line.state.settle(outcome)?;
            }
        }
    }
    let mut figures: Vec<Line<'_, Latency>> = lines
        .iter_mut()
        .map(|line| Line { row: line.row, state: line.state.map(|rounds| rounds.latency(plan)) })
        .collect();
    let floor_p50 = figures
        .iter()
        .find(|line| line.row.is_floor())
        .and_then(|line| match &line.state {
            State::Runs(floor) => Some(floor.p50_us),
            _ => None,
        })
        .unwrap_or(f64::NAN);
    out!("| lock | p50 µs | p99 µs | p50 / raw floor | requests per cycle |");
    out!("|---|---|---|---|---|");
    for line in &mut figures {
        if let State::Runs(latency) = &line.state {
            summary.uncontended(bench.pass, line.row.tag(), latency.p50_us / floor_p50, latency.requests_per_cycle);
        }
        let label = line.row.label(Scenario::Uncontended, plan);
        line.print(5, label, |latency| {
            format!(
                "{:.0} | {:.0} | {:.2} | {:.2}{}",
                latency.p50_us,
                latency.p99_us,
                latency.p50_us / floor_p50,
                latency.requests_per_cycle,
                if latency.server_wide { " (server-wide count)" } else { "" }
            )
        });
    }
    // Reentry costs no request, so it is the same on every server.
    for line in lines.iter().filter(|_| bench.pass == Pass::Quiet) {
        if let State::Runs(rounds) = &line.state {
            if let Some(note) = rounds.note(plan).await.map_err(Failure::into_error)? {
                out!("\n{note}");
            }
        }
    }
    Ok(())
}
