//! The rows that run in another process: Curator on the JVM, kazoo in Python. Each is a small
//! program under `interop/` with the same command line (`CONNECT PATH SCENARIO NUMBER...`) and
//! output (a tag, then numbers), so one row can stand for both. Latencies come from the
//! program's own clock; requests from the server's `mntr`, server-wide, so they include the
//! program's connects and closes.

use std::process::{Child, Command, Stdio};

use crate::curator::Curator;
use crate::kazoo::Kazoo;
use crate::{packets_received, percentile, Bench};

enum Program {
    Curator(Curator),
    Kazoo(Kazoo),
}

/// A lock library in another process, or why its rows are skipped.
pub struct Peer {
    /// The lock as the tables name it.
    lock: &'static str,
    /// What runs it, for the tables.
    runtime: &'static str,
    /// The last part of its lock paths: each peer has paths of its own (kazoo's node names
    /// differ from Curator's, and the two would not see each other's nodes).
    pub tag: &'static str,
    program: Result<Program, String>,
}

impl Peer {
    /// Every peer, found (or compiled) once per run.
    pub fn all() -> Vec<Peer> {
        vec![
            Peer {
                lock: "Curator 5.4 InterProcessMutex",
                runtime: "JVM",
                tag: "curator",
                program: Curator::compile().map(Program::Curator),
            },
            Peer {
                lock: "kazoo 2.8 Lock",
                runtime: "Python",
                tag: "kazoo",
                program: Kazoo::find().map(Program::Kazoo),
            },
        ]
    }

    /// Whether the peer can run (its rows say why not otherwise).
    pub fn is_available(&self) -> bool {
        self.program.is_ok()
    }

    /// The row's name: the lock, then what runs it and `detail` in parentheses.
    pub fn name(&self, detail: &str) -> String {
        format!("{} ({}{detail})", self.lock, self.runtime)
    }

    /// A table row of `columns` cells that says why the peer did not run.
    pub fn skipped_row(&self, columns: usize) -> String {
        let why = self.program.as_ref().err().map_or("", String::as_str);
        format!("| {} | skipped: {why} |{}", self.lock, " |".repeat(columns.saturating_sub(2)))
    }

    fn command(&self, connect: &str, path: &str, args: &[&str]) -> Result<Command, String> {
        let mut command = match &self.program {
            Ok(Program::Curator(curator)) => curator.command(connect, path),
            Ok(Program::Kazoo(kazoo)) => kazoo.command(connect, path),
            Err(why) => return Err(why.clone()),
        };
        command.args(args);
        Ok(command)
    }

    /// Runs one scenario to its end and returns the numbers of its output.
    pub fn run(&self, connect: &str, path: &str, args: &[&str]) -> Result<Vec<i64>, String> {
        let output = self.command(connect, path, args)?.output().map_err(|e| format!("{}: {e}", self.lock))?;
        if !output.status.success() {
            return Err(format!("{} failed: {}", self.lock, String::from_utf8_lossy(&output.stderr)));
        }
        Ok(numbers(&String::from_utf8_lossy(&output.stdout)))
    }

    /// Starts one scenario that talks with us over its standard input and output (handoff).
    pub fn spawn(&self, connect: &str, path: &str, args: &[&str]) -> Result<Child, String> {
        self.command(connect, path, args)?
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("{}: {e}", self.lock))
    }

    /// One uncontended round: the program's own warmup and cycles, on a session of its own.
    pub fn uncontended_round(&self, bench: &Bench<'_>, runs: &mut Uncontended) -> Result<(), String> {
        if !self.is_available() {
            return Ok(());
        }
        let plan = bench.plan;
        let path = format!("{}/uncontended/{}", bench.base, self.tag);
        let before = packets_received(bench.server);
        let numbers =
            self.run(bench.connect, &path, &["uncontended", &plan.cycles.to_string(), &plan.warmup.to_string()])?;
        let [p50, p99] = numbers[..] else { return Err(format!("{}: unexpected output {numbers:?}", self.lock)) };
        let total = (plan.cycles + plan.warmup) as f64;
        runs.requests.push(packets_received(bench.server).saturating_sub(before) as f64 / total);
        runs.p50.push(p50 as f64);
        runs.p99.push(p99 as f64);
        Ok(())
    }

    /// The uncontended table row: medians of the rounds' p50, p99 and requests per cycle.
    pub fn uncontended_row(&self, runs: &mut Uncontended, floor_p50: f64) -> String {
        if !self.is_available() {
            return self.skipped_row(5);
        }
        let p50 = percentile(&mut runs.p50, 50.0);
        format!(
            "| {} | {p50:.0} | {:.0} | {:.2} | {:.2} (server-wide count) |",
            self.name(""),
            percentile(&mut runs.p99, 50.0),
            p50 / floor_p50,
            percentile(&mut runs.requests, 50.0)
        )
    }
}

/// A peer's uncontended rounds.
#[derive(Default)]
pub struct Uncontended {
    p50: Vec<f64>,
    p99: Vec<f64>,
    requests: Vec<f64>,
}

/// The numbers of a program's output line, after its tag (`latencies_us 512 980`).
pub fn numbers(text: &str) -> Vec<i64> {
    text.split_whitespace().filter_map(|word| word.parse().ok()).collect()
}
