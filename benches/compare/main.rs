//! zklock beside the other ways to lock, in one run.
//!
//! `cargo bench --bench compare` (add `-- --quick` for a seconds-long smoke run; CI runs it built as a test,
//! `cargo test --bench compare -- --quick`;
//! `-- --only uncontended|contended|handoff|scale|failover|cohort` for one scenario; `-- --rounds N` for
//! more or fewer rounds; `-- --skip TAG` to leave a row out on purpose; `-- --markdown
//! BENCHMARKS.md` to write the tables into that file between its `bench:begin`/`bench:end`
//! markers, the leader failover table between `bench:begin failover`/`bench:end failover`, the
//! tasks tables between `bench:begin cohort`/`bench:end cohort`).
//!
//! The uncontended and contended scenarios run in three passes: on a quiet server, on the same
//! server while background sessions write to an unrelated path at a fixed rate, and on a second
//! server with ZooKeeper's default forceSync=yes; the handoff on the quiet and the forceSync=yes
//! servers (the two its target names). Uses `ZK_CONNECT` when set for the first two, else starts
//! a throwaway server. The Redis and MariaDB rows start servers of their own (see
//! `scripts/install-bench-deps`). Prints markdown tables: medians over rounds that alternate the
//! rows, so machine noise hits them alike.
//!
//! Never fails on timing, but fails (exit 1, after printing every table) when a row that should
//! run did not (its library, program or server missing, unless `--skip`ped), or when two
//! holders of a contended lock were inside at once, as recorded outside the processes
//! (`exclusion`).

mod busy;
mod cohort;
mod contended;
mod counts;
mod cpu;
mod election;
mod exclusion;
mod failover;
mod handoff;
mod heap;
mod peers;
mod report;
mod row;
mod rows;
mod scale;
mod servers;
mod spawned;
mod spin;
mod table;
mod targets;
mod uncontended;
mod zookeeper;

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::time::Duration;

use zklock_testcontainers::{ServerOptions, ZooKeeperServer};
use zookeeper_client::Client;

use crate::busy::Busy;
use crate::counts::packets_received;
use crate::report::out;
use crate::row::{Part, Row, Scenario};
use crate::targets::Summary;

/// Counts live heap bytes for the scale rows.
#[global_allocator]
static ALLOCATOR: heap::Counting = heap::Counting;

/// How long and how hard each scenario runs.
pub(crate) struct Plan {
    pub(crate) cycles: usize,
    pub(crate) warmup: usize,
    pub(crate) rounds: usize,
    pub(crate) sessions: usize,
    pub(crate) contended_for: Duration,
    /// Untimed contention before each contended run, every row alike.
    pub(crate) contended_warmup: Duration,
    pub(crate) waiters: usize,
    /// Distinct locks one process holds at once (scale).
    pub(crate) held_locks: usize,
    /// Waiters on one lock in one process (scale).
    pub(crate) waiters_on_one_lock: usize,
    /// Participants in one leader election, a session each (failover).
    pub(crate) participants: usize,
    /// Timed terms of the failover runs, after `failover_warmup` untimed ones.
    pub(crate) failovers: usize,
    pub(crate) failover_warmup: usize,
}

/// The busy server's load: writes per second, and the sessions they are spread over.
const BUSY_WRITES_PER_SECOND: u32 = 500;
const BUSY_SESSIONS: usize = 2;

/// The server a pass runs on, and what else it is doing.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Pass {
    /// The benchmark's server (forceSync=no), nothing else running.
    Quiet,
    /// The same server, with background sessions writing to an unrelated path.
    Busy,
    /// A second server with ZooKeeper's default forceSync=yes (an fsync per write), quiet.
    ForceSync,
}

impl Pass {
    pub(crate) fn title(self) -> &'static str {
        match self {
            Pass::Quiet => "quiet server",
            Pass::Busy => "busy server",
            Pass::ForceSync => "forceSync=yes server",
        }
    }

    pub(crate) fn short(self) -> &'static str {
        match self {
            Pass::Quiet => "quiet",
            Pass::Busy => "busy",
            Pass::ForceSync => "forceSync",
        }
    }
}

const USAGE: &str =
    "cargo bench --bench compare -- [--quick] [--only SCENARIO] [--rounds N] [--skip ROW]... [--markdown PATH]";

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let outcome = run().await;
    let mut failures = report::failures();
    if let Err(error) = outcome {
        failures.push(error.to_string());
    }
    if !failures.is_empty() {
        eprintln!("\nThe benchmark FAILED:");
        for failure in &failures {
            eprintln!("- {failure}");
        }
        std::process::exit(1);
    }
}

async fn run() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).filter(|arg| arg != "--bench").collect();
    let quick = args.iter().any(|arg| arg == "--quick");
    let value_of = |flag: &str| args.iter().position(|arg| arg == flag).and_then(|at| args.get(at + 1)).cloned();
    let only = value_of("--only");
    if let Some(scenario) = only.as_deref().filter(|scenario| !SCENARIOS.contains(scenario)) {
        return Err(format!("--only takes one of {SCENARIOS:?}, not {scenario:?} ({USAGE})").into());
    }
    // `--skip TAG` (repeatable) or ZKLOCK_BENCH_SKIP=TAG,TAG: rows left out on purpose.
    let mut skip: Vec<String> =
        args.windows(2).filter(|pair| pair[0] == "--skip").map(|pair| pair[1].clone()).collect();
    skip.extend(
        std::env::var("ZKLOCK_BENCH_SKIP")
            .unwrap_or_default()
            .split(',')
            .filter(|tag| !tag.is_empty())
            .map(str::to_owned),
    );
    let markdown = value_of("--markdown").map(PathBuf::from);
    let runs = |scenario: &str| only.as_deref().is_none_or(|only| only == scenario);
    let mut plan = if quick {
        Plan {
            cycles: 50,
            warmup: 20,
            // A smoke run: every row in every pass once, in under two minutes.
            rounds: 1,
            sessions: 4,
            contended_for: Duration::from_secs(1),
            contended_warmup: Duration::from_millis(200),
            waiters: 20,
            held_locks: 500,
            waiters_on_one_lock: 100,
            participants: 4,
            failovers: 30,
            failover_warmup: 10,
        }
    } else {
        Plan {
            cycles: 1_000,
            warmup: 300,
            rounds: 3,
            sessions: 8,
            contended_for: Duration::from_secs(3),
            contended_warmup: Duration::from_millis(500),
            waiters: 200,
            held_locks: 10_000,
            waiters_on_one_lock: 1_000,
            participants: 4,
            failovers: 300,
            failover_warmup: 50,
        }
    };
    if let Some(rounds) = value_of("--rounds") {
        plan.rounds = rounds.parse().map_err(|_| format!("--rounds takes a number, not {rounds:?}"))?;
    }
    let (connect, server) = match std::env::var("ZK_CONNECT") {
        Ok(connect) if !connect.is_empty() => (connect, None),
        _ => {
            let server = ZooKeeperServer::start().await?;
            (server.connect_string(), Some(server))
        }
    };
    let address = first_address(&connect)?;
    let rows = rows::all().await;
    for tag in &skip {
        if !rows.iter().any(|row| row.tag() == tag) {
            let tags: Vec<&str> = rows.iter().map(|row| row.tag()).collect();
            return Err(format!("--skip takes a row's tag, one of {tags:?}, not {tag:?}").into());
        }
    }
    let base = format!("/bench-{}", std::process::id());
    let zookeeper_pid = server.as_ref().and_then(ZooKeeperServer::pid);
    let quiet = Bench {
        connect: &connect,
        server: address,
        zookeeper_pid,
        base: &base,
        plan: &plan,
        pass: Pass::Quiet,
        busy: None,
        skip: &skip,
    };
    let busy = Busy::connect(&connect, address, &format!("{base}-busy"), BUSY_SESSIONS, BUSY_WRITES_PER_SECOND).await?;
    let busy_bench = Bench { pass: Pass::Busy, busy: Some(&busy), ..quiet };
    // ZooKeeper's default: every write synced to disk before it is acknowledged.
    let synced = if runs("uncontended") || runs("contended") || runs("handoff") {
        let mut options = ServerOptions::default();
        options.force_sync = true;
        Some(ZooKeeperServer::start_with(&options).await?)
    } else {
        None
    };
    let synced_connect = synced.as_ref().map(ZooKeeperServer::connect_string).unwrap_or_default();
    let synced_bench = synced.as_ref().map(|synced| Bench {
        connect: &synced_connect,
        server: synced.address(),
        zookeeper_pid: synced.pid(),
        pass: Pass::ForceSync,
        ..quiet
    });
    let passes: Vec<&Bench<'_>> =
        [Some(&quiet), Some(&busy_bench), synced_bench.as_ref()].into_iter().flatten().collect();
    let mut summary = Summary::default();
    let (rounds, cycles, warmup) = (plan.rounds, plan.cycles, plan.warmup);
    let (sessions, timed, untimed) = (plan.sessions, plan.contended_for, plan.contended_warmup);
    let scenarios = [
        (
            "uncontended",
            "Uncontended acquire+release",
            format!("{rounds} rounds x {cycles} cycles after {warmup} warm-up cycles, one session per row"),
        ),
        (
            "contended",
            "Contended",
            format!("{sessions} sessions on one lock for {timed:?} per round, after {untimed:?} untimed"),
        ),
    ];
    for (scenario, title, detail) in scenarios.iter().filter(|(scenario, ..)| runs(scenario)) {
        for bench in &passes {
            bench.heading(title, detail);
            if *scenario == "uncontended" {
                uncontended::run(bench, &rows, &mut summary).await?;
            } else {
                contended::run(bench, &rows, &mut summary).await?;
            }
            bench.achieved_load();
        }
    }
    if runs("handoff") {
        // Quiet and forceSync=yes: the servers the handoff's target names (the busy one is not).
        for bench in [Some(&quiet), synced_bench.as_ref()].into_iter().flatten() {
            bench.heading("Handoff", &format!("{} waiters queued on one lock, one session each", plan.waiters));
            handoff::run(bench, &rows, &mut summary).await?;
        }
    }
    if runs("scale") {
        out!("\n## Scale, quiet server: one process (zklock)\n");
        scale::run(&quiet).await?;
    }
    if runs("failover") {
        // A section of its own in the file: `--only failover --markdown` rewrites it alone.
        report::section(report::FAILOVER);
        out!(
            "\n## Leader failover, quiet server: {} participants in one election, a session each ({} rounds x {} terms after {} untimed)\n",
            plan.participants,
            plan.rounds,
            plan.failovers,
            plan.failover_warmup
        );
        failover::run(&quiet, &rows).await?;
        report::section(report::MAIN);
    }
    if runs("cohort") {
        report::section(report::COHORT);
        out!(
            "\n## Tasks sharing a lock, quiet server: local handoff ({} rounds of {:?} after {:?} untimed; each hold only records itself)",
            plan.rounds,
            plan.contended_for,
            plan.contended_warmup
        );
        cohort::run(&quiet, &rows).await?;
        report::section(report::MAIN);
    }
    if only.is_none() {
        out!("\n## The targets, side by side (this run)\n");
        summary.print();
    }
    if let Some(path) = markdown {
        let failures = report::failures();
        if !failures.is_empty() {
            return Err(format!("not writing {}: the run failed", path.display()).into());
        }
        let command = format!("cargo bench --bench compare -- {}", args.join(" "));
        report::write_markdown(&path, command.trim_end())?;
        eprintln!("wrote the tables into {}", path.display());
    }
    Ok(())
}

fn first_address(connect: &str) -> Result<SocketAddr, String> {
    connect
        .split(',')
        .next()
        .and_then(|host| host.to_socket_addrs().ok()?.next())
        .ok_or_else(|| format!("bad ZK_CONNECT {connect:?}"))
}

/// The scenarios, for `--only`.
const SCENARIOS: [&str; 6] = ["uncontended", "contended", "handoff", "scale", "failover", "cohort"];

/// What every scenario needs: where the server is, where to put locks, how long to run.
#[derive(Clone, Copy)]
pub(crate) struct Bench<'a> {
    pub(crate) connect: &'a str,
    pub(crate) server: SocketAddr,
    /// The ZooKeeper server's process, when this benchmark started it (for its CPU time).
    pub(crate) zookeeper_pid: Option<u32>,
    pub(crate) base: &'a str,
    pub(crate) plan: &'a Plan,
    pub(crate) pass: Pass,
    /// The background writers of the busy pass.
    pub(crate) busy: Option<&'a Busy>,
    /// Tags of the rows left out on purpose (`--skip`).
    pub(crate) skip: &'a [String],
}

impl Bench<'_> {
    /// Whether `row` runs `scenario` in this pass. A row that should run and cannot (its
    /// library, program or server missing) fails the run, unless it was skipped on purpose.
    pub(crate) fn part(&self, row: &dyn Row, scenario: Scenario) -> Part {
        if self.pass != Pass::Quiet && !row.on_zookeeper() {
            return Part::NoLine;
        }
        let on_purpose = self.skip.iter().any(|tag| tag == row.tag());
        match row.part(scenario) {
            Part::Runs if on_purpose => Part::Skipped("skipped on purpose (--skip)".into()),
            Part::Skipped(why) if on_purpose => Part::Skipped(format!("skipped on purpose (--skip): {why}")),
            Part::Skipped(why) => {
                report::fail(format!("{} should run and did not: {why}", row.name()));
                Part::Skipped(format!("NOT RUN: {why}"))
            }
            part => part,
        }
    }

    /// A scenario's heading in this pass, and what load the server had.
    fn heading(&self, scenario: &str, detail: &str) {
        out!("\n## {scenario}, {} ({detail})\n", self.pass.title());
        match (self.pass, self.busy) {
            (Pass::Busy, Some(busy)) => {
                out!("Load, from before each row's phase until after it: {}.\n", busy.describe())
            }
            (Pass::ForceSync, _) => {
                out!("A second server, ZooKeeper's default forceSync=yes: each write is synced to disk (ext4) before it is acknowledged. ZooKeeper rows only.\n")
            }
            _ => {}
        }
    }

    /// Under a table of the busy pass: the rate its phases had.
    fn achieved_load(&self) {
        if let Some(busy) = self.busy {
            out!("\nLoad achieved over this table's phases: {}.", busy.achieved());
        }
    }

    /// Requests the server has received from everyone but the busy pass's writers (`mntr`,
    /// less their sessions' counts).
    pub(crate) fn requests(&self) -> u64 {
        packets_received(self.server).saturating_sub(self.busy.map_or(0, Busy::requests))
    }

    /// Starts the busy pass's load (nothing in the other passes); [`Self::unload`] ends it.
    pub(crate) fn load(&self) -> Option<busy::Load<'_>> {
        self.busy.map(Busy::start)
    }

    pub(crate) async fn unload(load: Option<busy::Load<'_>>) {
        if let Some(load) = load {
            load.stop().await;
        }
    }
}

pub(crate) async fn session(connect: &str) -> Result<Client, zookeeper_client::Error> {
    Client::connector().with_session_timeout(Duration::from_secs(30)).connect(connect).await
}

pub(crate) fn percentile(samples: &mut [f64], percent: f64) -> f64 {
    if samples.is_empty() {
        return f64::NAN;
    }
    samples.sort_by(f64::total_cmp);
    let index = ((samples.len() - 1) as f64 * percent / 100.0).round() as usize;
    samples[index]
}
