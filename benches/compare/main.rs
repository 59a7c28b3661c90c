//! zklock beside the other ways to lock, against one ZooKeeper server in one run.
//!
//! `cargo bench --bench compare` (add `-- --quick` for a seconds-long smoke run, as CI does;
//! `-- --only uncontended|contended|handoff|scale` for one scenario; `-- --rounds N` for more or
//! fewer rounds).
//! Uses `ZK_CONNECT` when set, else starts a throwaway server. The Redis and MariaDB rows start
//! servers of their own, and are skipped (with the reason) when those are not installed: see
//! `scripts/install-bench-deps`. Prints markdown tables: medians over rounds that alternate the
//! rows, so machine noise hits them alike. Reports, never fails on timing.

mod contended;
mod cpu;
mod handoff;
mod heap;
mod peers;
mod row;
mod rows;
mod scale;
mod servers;
mod spawned;
mod spin;
mod table;
mod uncontended;
mod zookeeper;

use std::net::{SocketAddr, ToSocketAddrs};
use std::time::Duration;

use zklock_testcontainers::{four_letter_word, ZooKeeperServer};
use zookeeper_client::Client;

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
    pub(crate) waiters: usize,
    /// Distinct locks one process holds at once (scale).
    pub(crate) held_locks: usize,
    /// Waiters on one lock in one process (scale).
    pub(crate) waiters_on_one_lock: usize,
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|arg| arg == "--quick");
    let value_of = |flag: &str| args.iter().position(|arg| arg == flag).and_then(|at| args.get(at + 1)).cloned();
    let only = value_of("--only");
    if let Some(scenario) = only.as_deref().filter(|scenario| !SCENARIOS.contains(scenario)) {
        return Err(format!("--only takes one of {SCENARIOS:?}, not {scenario:?}").into());
    }
    let runs = |scenario: &str| only.as_deref().is_none_or(|only| only == scenario);
    let mut plan = if quick {
        Plan {
            cycles: 50,
            warmup: 20,
            rounds: 2,
            sessions: 4,
            contended_for: Duration::from_secs(1),
            waiters: 20,
            held_locks: 500,
            waiters_on_one_lock: 100,
        }
    } else {
        Plan {
            cycles: 1_000,
            warmup: 300,
            rounds: 3,
            sessions: 8,
            contended_for: Duration::from_secs(10),
            waiters: 200,
            held_locks: 10_000,
            waiters_on_one_lock: 1_000,
        }
    };
    if let Some(rounds) = value_of("--rounds") {
        plan.rounds = rounds.parse().map_err(|_| format!("--rounds takes a number, not {rounds:?}"))?;
    }
    let (connect, server) = match std::env::var("ZK_CONNECT") {
        Ok(connect) if !connect.is_empty() => (connect, None),
        _ => {
            let server = ZooKeeperServer::start()?;
            (server.connect_string(), Some(server))
        }
    };
    let address =
        connect.split(',').next().and_then(|host| host.to_socket_addrs().ok()?.next()).ok_or("bad ZK_CONNECT")?;
    let rows = rows::all().await;
    let base = format!("/bench-{}", std::process::id());
    let zookeeper_pid = server.as_ref().and_then(ZooKeeperServer::pid);
    let bench = Bench { connect: &connect, server: address, zookeeper_pid, base: &base, plan: &plan };
    if runs("uncontended") {
        println!(
            "## Uncontended acquire+release ({} rounds x {} cycles, one session per row)\n",
            plan.rounds, plan.cycles
        );
        uncontended::run(&bench, &rows).await?;
    }
    if runs("contended") {
        println!("\n## Contended: {} sessions on one lock for {:?} per round\n", plan.sessions, plan.contended_for);
        contended::run(&bench, &rows).await?;
    }
    if runs("handoff") {
        println!("\n## Handoff: {} waiters queued on one lock, one session each\n", plan.waiters);
        handoff::run(&bench, &rows).await?;
    }
    if runs("scale") {
        println!("\n## Scale: one process (zklock)\n");
        scale::run(&bench).await?;
    }
    Ok(())
}

/// The scenarios, for `--only`.
const SCENARIOS: [&str; 4] = ["uncontended", "contended", "handoff", "scale"];

/// What every scenario needs: where the server is, where to put locks, how long to run.
pub(crate) struct Bench<'a> {
    pub(crate) connect: &'a str,
    pub(crate) server: SocketAddr,
    /// The ZooKeeper server's process, when this benchmark started it (for its CPU time).
    pub(crate) zookeeper_pid: Option<u32>,
    pub(crate) base: &'a str,
    pub(crate) plan: &'a Plan,
}

pub(crate) async fn session(connect: &str) -> Result<Client, zookeeper_client::Error> {
    Client::connector().with_session_timeout(Duration::from_secs(30)).connect(connect).await
}

/// Packets the server has received from everyone (`mntr`).
pub(crate) fn packets_received(server: SocketAddr) -> u64 {
    let Ok(answer) = four_letter_word(server, "mntr") else { return 0 };
    answer
        .lines()
        .find_map(|line| line.strip_prefix("zk_packets_received"))
        .and_then(|value| value.trim().parse().ok())
        .unwrap_or(0)
}

pub(crate) fn percentile(samples: &mut [f64], percent: f64) -> f64 {
    if samples.is_empty() {
        return f64::NAN;
    }
    samples.sort_by(f64::total_cmp);
    let index = ((samples.len() - 1) as f64 * percent / 100.0).round() as usize;
    samples[index]
}
