//! The rows that run in another process: Curator on the JVM, kazoo in Python. Each is a small
//! program under `interop/` with the same command line (`CONNECT PATH SCENARIO NUMBER...`) and
//! output (a tag, then numbers), so one type stands for both. Latencies come from the program's
//! own clock; requests from the server's `mntr`, server-wide, so they include the program's
//! connects and closes.

mod contended;
mod handoff;
mod uncontended;

use std::ffi::OsString;
use std::process::{Child, Command, Stdio};

use crate::contended::Contention;
use crate::handoff::Handoff;
use crate::row::{Part, Pending, Row, Scenario};
use crate::uncontended::Rounds;
use crate::{Bench, Plan};

/// A lock library in another process, or why its lines are skipped.
pub struct Peer {
    /// The lock as the tables name it.
    lock: &'static str,
    /// What runs it, for the tables.
    runtime: &'static str,
    /// The last part of its lock paths: kazoo's node names differ from Curator's, and the two
    /// would not see each other's nodes.
    tag: &'static str,
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
    /// The row of `lock` run by `runtime`, with the program that runs it, or why there is none.
    pub fn new(
        lock: &'static str,
        runtime: &'static str,
        tag: &'static str,
        program: Result<Launcher, String>,
    ) -> Peer {
        Peer { lock, runtime, tag, program }
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

    /// Runs one scenario to its end and returns the numbers of its output.
    fn run(&self, connect: &str, path: &str, args: &[&str]) -> Result<Vec<i64>, String> {
        let output = self.command(connect, path, args)?.output().map_err(|e| format!("{}: {e}", self.lock))?;
        if !output.status.success() {
            return Err(format!("{} failed: {}", self.lock, String::from_utf8_lossy(&output.stderr)));
        }
        Ok(numbers(&String::from_utf8_lossy(&output.stdout)))
    }

    /// Starts one scenario that talks with us over its standard input and output (handoff).
    fn spawn(&self, connect: &str, path: &str, args: &[&str]) -> Result<Child, String> {
        self.command(connect, path, args)?
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("{}: {e}", self.lock))
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
        }
    }

    fn tag(&self) -> &str {
        self.tag
    }

    fn part(&self, _scenario: Scenario) -> Part {
        match &self.program {
            Ok(_) => Part::Runs,
            Err(why) => Part::Skipped(why.clone()),
        }
    }

    fn uncontended<'a>(&'a self, _bench: &'a Bench<'a>) -> Pending<'a, Box<dyn Rounds + 'a>> {
        Box::pin(async move { Ok(Box::new(uncontended::ProgramRounds::new(self)) as Box<dyn Rounds>) })
    }

    fn contended<'a>(&'a self, bench: &'a Bench<'a>, path: String) -> Pending<'a, Contention> {
        Box::pin(async move { Ok(contended::contend(self, bench, &path)?) })
    }

    fn handoff<'a>(&'a self, bench: &'a Bench<'a>, path: String) -> Pending<'a, Handoff> {
        Box::pin(async move { Ok(handoff::handoff(self, bench, &path)?) })
    }
}

/// The numbers of a program's output line, after its tag (`latencies_us 512 980`).
fn numbers(text: &str) -> Vec<i64> {
    text.split_whitespace().filter_map(|word| word.parse().ok()).collect()
}
