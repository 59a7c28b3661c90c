//! What the scenarios' tables share: the line each row has in one, and who goes first.

use std::error::Error;

use crate::exclusion::Record;
use crate::report::{self, out};
use crate::row::{Failure, Part, Pending, Row, Scenario};
use crate::Bench;

/// A row's line in a scenario's table.
pub struct Line<'r, T> {
    pub row: &'r dyn Row,
    pub state: State<T>,
}

/// Where a row's line stands.
pub enum State<T> {
    /// It runs: its runs so far.
    Runs(T),
    /// It did not run, for this reason.
    Skipped(String),
    /// Its own server failed; the line says how.
    Failed(String),
}

/// The lines of `scenario`'s table in the order of `rows`, `start()` for each row that runs.
pub fn lines<'r, T>(
    bench: &Bench<'_>,
    rows: &'r [Box<dyn Row>],
    scenario: Scenario,
    mut start: impl FnMut() -> T,
) -> Vec<Line<'r, T>> {
    let mut lines = Vec::new();
    for row in rows {
        let state = match bench.part(row.as_ref(), scenario) {
            Part::Runs => State::Runs(start()),
            Part::Skipped(why) => State::Skipped(why),
            Part::NoLine => continue,
        };
        lines.push(Line { row: row.as_ref(), state });
    }
    lines
}

/// The lines of `scenario`'s table after `plan.rounds` rounds, each row's runs in its line:
/// `run` on a path of its own under `{base}/{folder}`, the rows taking [`turns`].
pub async fn run_rounds<'r, T>(
    bench: &Bench<'_>,
    rows: &'r [Box<dyn Row>],
    scenario: Scenario,
    folder: &str,
    run: impl for<'a> Fn(&'a dyn Row, &'a Bench<'a>, String) -> Pending<'a, T>,
) -> Result<Vec<Line<'r, Vec<T>>>, Box<dyn Error>> {
    let mut lines = lines(bench, rows, scenario, Vec::new);
    for round in 0..bench.plan.rounds {
        for at in turns(lines.len(), round) {
            let line = &mut lines[at];
            if line.runs() {
                let path = format!("{}/{folder}/{}-{round}", bench.base, line.row.tag());
                let outcome = run(line.row, bench, path).await;
                line.record(outcome)?;
            }
        }
    }
    Ok(lines)
}

/// Who runs in `round`: everyone once, starting one place further along each round, so that no
/// row always meets a server at the same warmth.
pub fn turns(count: usize, round: usize) -> impl Iterator<Item = usize> {
    (0..count).map(move |offset| (round + offset) % count)
}

impl<T> State<T> {
    /// `Runs(value)`, or `Failed` when the row's own server failed; `Err` when the benchmark must
    /// stop.
    pub fn after(outcome: Result<T, Failure>) -> Result<State<T>, Box<dyn Error>> {
        match outcome {
            Ok(value) => Ok(State::Runs(value)),
            Err(failure) => State::failed(failure),
        }
    }

    /// The figures of a run, or `None` when the row's own server failed (the line is failed from
    /// then on); `Err` when the benchmark must stop.
    pub fn settle<U>(&mut self, outcome: Result<U, Failure>) -> Result<Option<U>, Box<dyn Error>> {
        match outcome {
            Ok(value) => Ok(Some(value)),
            Err(failure) => {
                *self = State::failed(failure)?;
                Ok(None)
            }
        }
    }

    /// The same line with `figures` of its runs.
    pub fn map<U>(&mut self, figures: impl FnOnce(&mut T) -> U) -> State<U> {
        match self {
            State::Runs(runs) => State::Runs(figures(runs)),
            State::Skipped(why) => State::Skipped(why.clone()),
            State::Failed(why) => State::Failed(why.clone()),
        }
    }

    fn failed(failure: Failure) -> Result<State<T>, Box<dyn Error>> {
        match failure {
            Failure::Row(why) => {
                report::fail(format!("a server of a row failed: {why}"));
                Ok(State::Failed(format!("FAILED: {why}")))
            }
            Failure::Bench(error) => Err(error),
        }
    }
}

impl<T> Line<'_, T> {
    /// Whether the row runs (it was not skipped, and its server has not failed).
    pub fn runs(&self) -> bool {
        matches!(self.state, State::Runs(_))
    }

    /// The table line: `label` and `figures` (the cells after it, `|`-separated) when it ran,
    /// else the name or label and why there are no figures, padded to `columns` cells.
    pub fn print(&mut self, columns: usize, label: String, figures: impl FnOnce(&mut T) -> String) {
        match &mut self.state {
            State::Runs(runs) => out!("| {label} | {} |", figures(runs)),
            State::Skipped(why) => out!("{}", without_figures(self.row.name(), why, columns)),
            State::Failed(why) => out!("{}", without_figures(&label, why, columns)),
        }
    }
}

impl<U> Line<'_, Vec<U>> {
    /// Adds the figures of a run, or marks the line failed; `Err` when the benchmark must stop.
    pub fn record(&mut self, outcome: Result<U, Failure>) -> Result<(), Box<dyn Error>> {
        if let Some(run) = self.state.settle(outcome)? {
            if let State::Runs(runs) = &mut self.state {
                runs.push(run);
            }
        }
        Ok(())
    }
}

/// A line of `columns` cells whose second says why the row has no figures.
fn without_figures(first: &str, why: &str, columns: usize) -> String {
    format!("| {first} | {why} |{}", " |".repeat(columns.saturating_sub(2)))
}

/// Reads a run's `record` back and fails the benchmark ([`report::fail`]) when it has other
/// than the `counted` holds the row's run (`run`, for the message) counted, or an overlap;
/// returns the overlaps.
pub fn judge(record: &Record, run: &str, counted: u64) -> Result<u64, String> {
    let verdict = record.verdict()?;
    if verdict.holds != counted {
        report::fail(format!("{run}: its record has {} holds where it counted {counted} acquisitions", verdict.holds));
    }
    if verdict.violations > 0 {
        report::fail(format!(
            "{run}: exclusion VIOLATED, {} of {} holds began while another holder was inside",
            verdict.violations, verdict.holds
        ));
    }
    Ok(verdict.violations)
}
