//! What the benchmark prints is also kept, so that `--markdown PATH` can write the same tables
//! into a file (BENCHMARKS.md) between markers, under the commit and the date they come from.
//! A section is one pair of markers: the leader failover table has its own, so that a run of it
//! alone rewrites it and leaves the locks' tables as they are.

use std::path::Path;
use std::process::Command;
use std::sync::Mutex;

/// A part of the file the benchmark writes, between `<!-- bench:begin{NAME} -->` and
/// `<!-- bench:end{NAME} -->`; the text around them is kept.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Section(&'static str);

/// The locks' tables.
pub const MAIN: Section = Section("");
/// The leader failover table.
pub const FAILOVER: Section = Section(" failover");
/// The tasks tables (local handoff).
pub const COHORT: Section = Section(" cohort");

/// Each section's lines so far, in the order the sections were first written to.
static KEPT: Mutex<Vec<(Section, String)>> = Mutex::new(Vec::new());
static CURRENT: Mutex<Section> = Mutex::new(MAIN);

/// Lines printed from now on go to `section`.
pub fn section(section: Section) {
    *CURRENT.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = section;
}

/// Prints a line of the report and keeps it for `--markdown`.
macro_rules! out {
    () => {
        $crate::report::line(String::new())
    };
    ($($arg:tt)*) => {
        $crate::report::line(format!($($arg)*))
    };
}
pub(crate) use out;

pub fn line(text: String) {
    println!("{text}");
    let current = *CURRENT.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let mut kept = KEPT.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let at = match kept.iter().position(|(section, _)| *section == current) {
        Some(at) => at,
        None => {
            kept.push((current, String::new()));
            kept.len() - 1
        }
    };
    kept[at].1.push_str(&text);
    kept[at].1.push('\n');
}

/// Replaces what lies between the markers of each section this run printed to with its lines,
/// headed by the command, the commit and the date. Sections it did not print to are kept.
pub fn write_markdown(path: &Path, command: &str) -> Result<(), String> {
    let mut text = std::fs::read_to_string(path).map_err(|e| format!("read {}: {e}", path.display()))?;
    let kept = KEPT.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).clone();
    let (commit, date) = (commit(), date());
    for (Section(name), lines) in kept.iter().filter(|(_, lines)| !lines.trim().is_empty()) {
        let (begin_marker, end_marker) = (format!("<!-- bench:begin{name} -->"), format!("<!-- bench:end{name} -->"));
        let (Some(begin), Some(end)) = (text.find(&begin_marker), text.find(&end_marker)) else {
            return Err(format!("{} has no {begin_marker} ... {end_marker} markers", path.display()));
        };
        if end < begin {
            return Err(format!("{}: {end_marker} comes before {begin_marker}", path.display()));
        }
        let generated = format!(
            "{begin_marker}\n<!-- Written by `cargo bench --bench compare -- --markdown`: edit the benchmark, not these lines. -->\n\n\
             Command: `{command}`, on commit {commit}, {date}.\n\n{}\n",
            lines.trim()
        );
        text = format!("{}{generated}{}", &text[..begin], &text[end..]);
    }
    std::fs::write(path, text).map_err(|e| format!("write {}: {e}", path.display()))
}

/// `git rev-parse --short HEAD`, with `+dirty` when the work tree has changes.
fn commit() -> String {
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .ok()
            .filter(|output| output.status.success())
            .map(|output| String::from_utf8_lossy(&output.stdout).trim().to_owned())
    };
    let Some(hash) = git(&["rev-parse", "--short", "HEAD"]) else { return "unknown (no git)".into() };
    match git(&["status", "--porcelain", "--untracked-files=no"]) {
        Some(changes) if changes.is_empty() => hash,
        _ => format!("{hash}+dirty"),
    }
}

/// Today's date (UTC), from `date`.
fn date() -> String {
    Command::new("date")
        .args(["-u", "+%Y-%m-%d %H:%M UTC"])
        .output()
        .ok()
        .map(|output| String::from_utf8_lossy(&output.stdout).trim().to_owned())
        .unwrap_or_else(|| "unknown date".into())
}

static FAILURES: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Records why the run fails (a row that should have run and did not, or whose exclusion did not
/// hold); the run goes on, so that every table is printed, and exits non-zero at the end.
pub fn fail(why: String) {
    let mut failures = FAILURES.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if !failures.contains(&why) {
        eprintln!("FAILURE: {why}");
        failures.push(why);
    }
}

/// Every failure recorded so far.
pub fn failures() -> Vec<String> {
    FAILURES.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).clone()
}
