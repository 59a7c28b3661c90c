//! Exclusion checked from outside every process: each holder appends `NAME +` when it enters the
//! critical section and `NAME -` when it leaves, one `write` each to a file opened with
//! `O_APPEND`, so that the file's order is the order of those writes across threads and
//! processes (Curator's and kazoo's programs write the same file). An enter written while another
//! holder's enter has no exit yet is two holders inside at once. Each hold lasts [`HOLD`] between
//! its two records, longer than it takes a second holder let in by a broken lock (a round trip
//! later, or a thread's wake-up) to write its enter, so such an overlap is caught in the act: a
//! yield alone let the first holder out within microseconds. `tests/repository/bench_exclusion.rs` feeds
//! the check an overlapping log, and has a second holder enter once the first has, and sees both
//! caught.

use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// How long every timed hold of a contended row lasts between its enter and its exit, in this
/// process and in the peers' programs (passed to them in microseconds).
pub const HOLD: Duration = Duration::from_millis(1);

/// The record file of one contended run.
pub struct Record {
    path: PathBuf,
}

/// What a record file says.
#[derive(Debug, PartialEq, Eq)]
pub struct Verdict {
    /// Enters found.
    pub holds: u64,
    /// Enters written while another holder was inside.
    pub violations: u64,
}

impl Record {
    /// A new, empty record file in the temporary directory, named after the run.
    pub fn create(name: &str) -> Result<Record, String> {
        let path = std::env::temp_dir().join(format!("zklock-bench-{}-{name}.holds", std::process::id()));
        File::create(&path).map_err(|e| format!("create {}: {e}", path.display()))?;
        Ok(Record { path })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A writer for the holders of this process.
    pub fn writer(&self) -> Result<Writer, String> {
        let file =
            OpenOptions::new().append(true).open(&self.path).map_err(|e| format!("{}: {e}", self.path.display()))?;
        Ok(Writer(Arc::new(file)))
    }

    /// Reads the file back and counts the holds and the overlaps.
    pub fn verdict(&self) -> Result<Verdict, String> {
        let text = std::fs::read_to_string(&self.path).map_err(|e| format!("read {}: {e}", self.path.display()))?;
        check(&text)
    }
}

impl Drop for Record {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Appends enter and exit records; cloned into every holder's task.
#[derive(Clone)]
pub struct Writer(Arc<File>);

impl Writer {
    /// The critical section of holder `name`: its enter, [`HOLD`] asleep (another holder that
    /// got in too writes its own enter meanwhile), its exit.
    ///
    /// The sleep is a thread's, as the peers' holders sleep (`Thread.sleep`, `time.sleep`), on a
    /// blocking thread so that the runtime's workers go on: tokio's timer counts whole
    /// milliseconds and rounds up, so its 1 ms sleep lasts up to 2 ms, and the rows of this
    /// process would measure the timer rather than the lock.
    pub async fn hold(&self, name: &str) -> Result<(), String> {
        self.append(&format!("{name} +\n"))?;
        tokio::task::spawn_blocking(|| std::thread::sleep(HOLD)).await.map_err(|e| format!("the hold's sleep: {e}"))?;
        self.append(&format!("{name} -\n"))
    }

    /// A hold with nothing inside but its two records, for the scenarios that measure the lock
    /// itself at its fastest (tasks of one process): a yield between them, as the peers'
    /// programs do (`Thread.yield`).
    pub async fn mark(&self, name: &str) -> Result<(), String> {
        self.append(&format!("{name} +\n"))?;
        tokio::task::yield_now().await;
        self.append(&format!("{name} -\n"))
    }

    fn append(&self, line: &str) -> Result<(), String> {
        // One write: with O_APPEND the kernel places it whole at the end of the file.
        (&*self.0).write_all(line.as_bytes()).map_err(|e| format!("append to the record: {e}"))
    }
}

/// Counts enters, and those written while someone else was inside; `Err` on a line that is not a
/// record, or an exit without its enter.
pub fn check(text: &str) -> Result<Verdict, String> {
    let mut inside = HashSet::new();
    let mut verdict = Verdict { holds: 0, violations: 0 };
    for line in text.lines() {
        match line.rsplit_once(' ') {
            Some((name, "+")) => {
                verdict.holds += 1;
                if !inside.is_empty() {
                    verdict.violations += 1;
                }
                inside.insert(name);
            }
            Some((name, "-")) if inside.remove(name) => {}
            _ => {
                return Err(format!("the hold record has a line that is no enter or exit of a holder inside: {line:?}"))
            }
        }
    }
    if !inside.is_empty() {
        return Err(format!("the hold record ends with holders inside: {inside:?}"));
    }
    Ok(verdict)
}

/// A table's exclusion cell for a row's runs: their holds, and how many overlapped.
pub fn cell(holds: u64, violations: u64) -> String {
    if violations == 0 {
        format!("held ({holds} holds)")
    } else {
        format!("VIOLATED ({violations} of {holds} holds)")
    }
}
