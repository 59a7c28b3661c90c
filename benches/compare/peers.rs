//! The rows that run in another process: Curator on the JVM, kazoo in Python. Each is a small
//! program under `interop/` with the same command line (`CONNECT PATH SCENARIO ARGS...`) and
//! conversation: after its warm-up it prints `ready` (or `queued`, for a handoff) and waits for a
//! line; then it runs the measured part and prints its figures (a tag, then numbers), and waits
//! for its standard input to close before it closes its sessions. So the server's counts read at
//! those two moments hold the measured part alone. Latencies come from the program's own clock;
//! requests from the server's `mntr`, server-wide (less the busy pass's writers).

mod cohort;
mod contended;
mod failover;
mod handoff;
mod uncontended;

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};

use crate::cohort::{CohortRun, Layout};
use crate::contended::Contention;
use crate::exclusion::Record;
use crate::failover::Failover;
use crate::handoff::Handoff;
use crate::row::{Part, Pending, Row, Scenario};
use crate::uncontended::Rounds;
use crate::{Bench, Plan};

/// A lock library in another process, or why its lines are skipped.
pub struct Peer {
    /// The lock as the tables name it.
    lock: &'static str,
    /// The leader election, as the failover table names it.
    election: &'static str,
    /// What runs it, for the tables.
    runtime: &'static str,
    /// The last part of its lock paths: kazoo's node names differ from Curator's, and the two
    /// would not see each other's nodes.
    tag: &'static str,
    /// Whether its program runs the tasks scenario.
    runs_tasks: bool,
    program: Result<Launcher, String>,
}

/// How to start a peer's program: what runs, and its arguments before `CONNECT PATH`.
pub struct Launcher {
    program: OsString,
    args: Vec<OsString>,
}

impl Launcher {
    pub fn new(program: impl Into<OsString>, args: impl IntoIterator<Item = impl Into<OsString>>) -> Launcher {
        Launcher { program: program.into(), args: args.into_iter().map(Into::into).collect() }
    }
}

impl Peer {
    /// The row of `lock` and `election` run by `runtime`, with the program that runs them, or
    /// why there is none.
    pub fn new(
        lock: &'static str,
        election: &'static str,
        runtime: &'static str,
        tag: &'static str,
        program: Result<Launcher, String>,
    ) -> Peer {
        Peer { lock, election, runtime, tag, program, runs_tasks: false }
    }

    /// Its program also runs the tasks scenario (threads sharing a session's lock).
    pub fn running_tasks(mut self) -> Peer {
        self.runs_tasks = true;
        self
    }

    /// The lock, then what runs it and `detail` in parentheses.
    fn full_name(&self, detail: &str) -> String {
        format!("{} ({}{detail})", self.lock, self.runtime)
    }

    fn command(&self, connect: &str, path: &str, args: &[&str]) -> Result<Command, String> {
        let launcher = self.program.as_ref()?;
        let mut command = Command::new(&launcher.program);
        command.args(&launcher.args).args([connect, path]).args(args);
        Ok(command)
    }

    /// Runs one scenario: `at_ready` when the program says `ready` or `queued` (it is answered
    /// `go` after), and its numbers from the line whose tag is `result`; the program's input is
    /// closed after that line, and it exits. The server's count is read at those two lines.
    /// Its standard error is kept for the message when it fails.
    fn converse(
        &self,
        bench: &Bench<'_>,
        path: &str,
        args: &[&str],
        result: &str,
        mut at_ready: impl FnMut(),
    ) -> Result<Conversation, String> {
        let mut child = self
            .command(bench.connect, path, args)?
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("{}: {e}", self.lock))?;
        // Drained all along: a program that logs a lot must not block on a full pipe.
        let mut stderr = child.stderr.take().ok_or("no stderr")?;
        let errors = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = stderr.read_to_string(&mut text);
            text
        });
        let mut stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().ok_or("no stdout")?);
        let (mut figures, mut before) = (None, 0);
        for line in stdout.lines() {
            let line = line.map_err(|e| e.to_string())?;
            if line == "ready" || line == "queued" {
                before = bench.requests();
                at_ready();
                if let Some(stdin) = &mut stdin {
                    let _ = writeln!(stdin, "go");
                }
            } else if line.split_whitespace().next() == Some(result) {
                figures =
                    Some(Conversation { figures: numbers(&line), requests: bench.requests().saturating_sub(before) });
                stdin = None;
            }
        }
        drop(stdin);
        let status = child.wait().map_err(|e| e.to_string())?;
        let errors = errors.join().unwrap_or_default();
        match figures {
            Some(figures) if status.success() => Ok(figures),
            _ => Err(format!("{} {} failed ({status}): {errors}", self.full_name(""), args.first().unwrap_or(&""))),
        }
    }
}

impl Row for Peer {
    fn name(&self) -> &str {
        self.lock
    }

    fn label(&self, scenario: Scenario, plan: &Plan) -> String {
        match scenario {
            Scenario::Uncontended => self.full_name(""),
            Scenario::Contended => self.full_name(&format!(", {} threads with a session each", plan.sessions)),
            Scenario::Handoff => self.full_name(", holder and waiters in one process"),
            Scenario::Cohort => self.full_name(", threads sharing each session's lock"),
            Scenario::Failover => {
                format!("{} ({}, {} sessions in one process)", self.election, self.runtime, plan.participants)
            }
        }
    }

    fn tag(&self) -> &str {
        self.tag
    }

    fn part(&self, scenario: Scenario) -> Part {
        match &self.program {
            _ if scenario == Scenario::Cohort && !self.runs_tasks => Part::NoLine,
            Ok(_) => Part::Runs,
            Err(why) => Part::Skipped(why.clone()),
        }
    }

    fn uncontended<'a>(&'a self, _bench: &'a Bench<'a>) -> Pending<'a, Box<dyn Rounds + 'a>> {
        Box::pin(async move { Ok(Box::new(uncontended::ProgramRounds::new(self)) as Box<dyn Rounds>) })
    }

    fn contended<'a>(&'a self, bench: &'a Bench<'a>, path: String, record: &'a Record) -> Pending<'a, Contention> {
        Box::pin(async move { Ok(contended::contend(self, bench, &path, record)?) })
    }

    fn handoff<'a>(&'a self, bench: &'a Bench<'a>, path: String) -> Pending<'a, Handoff> {
        Box::pin(async move { Ok(handoff::handoff(self, bench, &path)?) })
    }

    fn failover<'a>(&'a self, bench: &'a Bench<'a>, path: String) -> Pending<'a, Failover> {
        Box::pin(async move { Ok(failover::failover(self, bench, &path)?) })
    }

    fn cohort<'a>(
        &'a self,
        bench: &'a Bench<'a>,
        path: String,
        layout: Layout,
        record: &'a Record,
    ) -> Pending<'a, CohortRun> {
        Box::pin(async move { Ok(cohort::contend(self, bench, &path, layout, record)?) })
    }
}

/// What a program printed on its result line, and the requests the server received from its
/// `ready` line to that one (server-wide, less the busy pass's writers).
struct Conversation {
    figures: Vec<i64>,
    requests: u64,
}

/// The numbers of a program's output line, after its tag (`latencies_us 512 980`).
fn numbers(text: &str) -> Vec<i64> {
    text.split_whitespace().filter_map(|word| word.parse().ok()).collect()
}
