//! What the benchmark prints is also kept, so that `--markdown PATH` can write the same tables
//! into a file (BENCHMARKS.md) between two markers, under the commit and the date they come from.

use std::path::Path;
use std::process::Command;
use std::sync::Mutex;

/// Where the generated part of the file begins and ends; the text around them is kept.
const BEGIN: &str = "<!-- bench:begin -->";
const END: &str = "<!-- bench:end -->";

static KEPT: Mutex<String> = Mutex::new(String::new());

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
    let mut kept = KEPT.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    kept.push_str(&text);
    kept.push('\n');
}

/// Replaces what lies between the markers of `path` with every line printed so far, headed by
/// the command, the commit and the date.
pub fn write_markdown(path: &Path, command: &str) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("read {}: {e}", path.display()))?;
    let (Some(begin), Some(end)) = (text.find(BEGIN), text.find(END)) else {
        return Err(format!("{} has no {BEGIN} ... {END} markers", path.display()));
    };
    if end < begin {
        return Err(format!("{}: {END} comes before {BEGIN}", path.display()));
    }
    let kept = KEPT.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).clone();
    let generated = format!(
        "{BEGIN}\n<!-- Written by `cargo bench --bench compare -- --markdown`: edit the benchmark, not these lines. -->\n\n\
         Command: `{command}`, on commit {}, {}.\n\n{}\n",
        commit(),
        date(),
        kept.trim()
    );
    let updated = format!("{}{generated}{}", &text[..begin], &text[end..]);
    std::fs::write(path, updated).map_err(|e| format!("write {}: {e}", path.display()))
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
