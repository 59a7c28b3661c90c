//! zklock beside the other ways to lock, against one ZooKeeper server in one run.
//!
//! `cargo bench --bench compare` (add `-- --quick` for a seconds-long smoke run, as CI does;
//! `-- --only uncontended|contended|handoff|scale` for one scenario; `-- --rounds N` for more or
//! fewer rounds).
//! Uses `ZK_CONNECT` when set, else starts a throwaway server. The Redis and MariaDB rows start
//! servers of their own, and are skipped (with the reason) when those are not installed: see
//! `scripts/install-bench-deps`. Prints markdown tables: medians over rounds that alternate the
//! rows, so machine noise hits them alike. Reports, never fails on timing.

mod cpu;
mod curator;
mod handoff;
mod heap;
mod kazoo;
mod mariadb;
mod peers;
mod redis;
mod rows;
mod scale;
mod spawned;
mod spin;

use std::net::{SocketAddr, ToSocketAddrs};
use std::time::{Duration, Instant};

use zklock_testcontainers::{four_letter_word, session_requests, ZooKeeperServer};
use zookeeper_client::Client;

use crate::cpu::CpuMeter;
use crate::mariadb::MariaDb;
use crate::peers::{Peer, Uncontended};
use crate::redis::Redis;
use crate::rows::{prepare, Row, FLOOR, NAMES};

/// Counts live heap bytes for the scale rows.
#[global_allocator]
static ALLOCATOR: heap::Counting = heap::Counting;

struct Plan {
    cycles: usize,
    warmup: usize,
    rounds: usize,
    sessions: usize,
    contended_for: Duration,
    waiters: usize,
    /// Distinct locks one process holds at once (scale).
    held_locks: usize,
    /// Waiters on one lock in one process (scale).
    waiters_on_one_lock: usize,
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
    let peers = Peer::all();
    let base = format!("/bench-{}", std::process::id());

    // Their processes are killed when these drop, at the end or on an early return or panic.
    let others = [Redis::start().await.map(Other::Redis), MariaDb::start().await.map(Other::MariaDb)];

    let zookeeper_pid = server.as_ref().and_then(ZooKeeperServer::pid);
    let bench = Bench {
        connect: &connect,
        server: address,
        zookeeper_pid,
        base: &base,
        plan: &plan,
        peers: &peers,
        others: &others,
    };
    if runs("uncontended") {
        println!(
            "## Uncontended acquire+release ({} rounds x {} cycles, one session per row)\n",
            plan.rounds, plan.cycles
        );
        uncontended(&bench).await?;
    }
    if runs("contended") {
        println!("\n## Contended: {} sessions on one lock for {:?} per round\n", plan.sessions, plan.contended_for);
        contended(&bench).await?;
    }
    if runs("handoff") {
        println!("\n## Handoff: {} waiters queued on one lock, one session each\n", plan.waiters);
        handoff_rows(&bench).await?;
    }
    if runs("scale") {
        println!("\n## Scale: one process (zklock)\n");
        scale_rows(&bench).await?;
    }
    Ok(())
}

/// The scenarios, for `--only`.
const SCENARIOS: [&str; 4] = ["uncontended", "contended", "handoff", "scale"];

/// Release-to-next-holder latency through a queue of waiters, and watchers per node.
async fn handoff_rows(bench: &Bench<'_>) -> Result<(), Box<dyn std::error::Error>> {
    let Bench { plan, peers, .. } = *bench;
    println!(
        "| lock | release to next holder p50 µs (median of {} rounds) | p99 µs | most sessions watching one node | client CPU per handoff µs | server CPU per handoff µs |",
        plan.rounds
    );
    println!("|---|---|---|---|---|---|");
    let rows = [0, 1];
    // Then the peers, each with its own holder and waiters in one process.
    let turns = rows.len() + peers.len();
    let mut results: Vec<Vec<handoff::Handoff>> = (0..turns).map(|_| Vec::new()).collect();
    for round in 0..plan.rounds {
        // Rotate who goes first, as in the other scenarios.
        for offset in 0..turns {
            let position = (round + offset) % turns;
            let run = match position.checked_sub(rows.len()).map(|index| &peers[index]) {
                Some(peer) if !peer.is_available() => continue,
                Some(peer) => handoff::peer_handoff(bench, peer, plan.waiters)?,
                None => handoff::handoff(bench, rows[position], plan.waiters).await?,
            };
            results[position].push(run);
        }
    }
    for (position, runs) in results.iter_mut().enumerate() {
        let name = match position.checked_sub(rows.len()).map(|index| &peers[index]) {
            Some(peer) if !peer.is_available() => {
                println!("{}", peer.skipped_row(6));
                continue;
            }
            Some(peer) => peer.name(", holder and waiters in one process"),
            None => NAMES[rows[position]].to_owned(),
        };
        let mut p50: Vec<f64> = runs.iter().map(|run| run.p50_us).collect();
        let mut p99: Vec<f64> = runs.iter().map(|run| run.p99_us).collect();
        let mut client_cpu: Vec<f64> = runs.iter().map(|run| run.client_cpu_us).collect();
        let mut server_cpu: Vec<f64> = runs.iter().map(|run| run.server_cpu_us).collect();
        let watchers = runs.iter().map(|run| run.watchers_per_node).max().unwrap_or(0);
        println!(
            "| {name} | {:.0} | {:.0} | {watchers} | {:.0} | {:.0} |",
            percentile(&mut p50, 50.0),
            percentile(&mut p99, 50.0),
            percentile(&mut client_cpu, 50.0),
            percentile(&mut server_cpu, 50.0)
        );
    }
    Ok(())
}

/// Client memory per held lock and per waiter.
async fn scale_rows(bench: &Bench<'_>) -> Result<(), Box<dyn std::error::Error>> {
    println!("| scenario | count | client heap per item | resident growth per item | heap left after release | time |");
    println!("|---|---|---|---|---|---|");
    let locks = scale::many_locks(bench, bench.plan.held_locks).await?;
    let waiters = scale::many_waiters(bench, bench.plan.waiters_on_one_lock).await?;
    for (scenario, run) in [
        ("distinct locks held at once, one session (time: to take them all)", &locks),
        ("waiters queued on one lock, one session (time: until all queued)", &waiters),
    ] {
        println!(
            "| {scenario} | {} | {:.0} B | {:.0} B | {:.0} B per item | {:.2} s |",
            run.count,
            run.heap_per_item,
            run.resident_per_item,
            run.heap_left_per_item,
            run.took.as_secs_f64()
        );
    }
    println!(
        "\n{} held locks: {:.1} MB of client heap in all.",
        locks.count,
        locks.heap_per_item * locks.count as f64 / 1e6
    );
    Ok(())
}

/// What every scenario needs: where the server is, where to put locks, how long to run, the
/// rows in other processes, and the rows on other servers (or why they are skipped).
pub(crate) struct Bench<'a> {
    pub(crate) connect: &'a str,
    pub(crate) server: SocketAddr,
    /// The ZooKeeper server's process, when this benchmark started it (for its CPU time).
    pub(crate) zookeeper_pid: Option<u32>,
    pub(crate) base: &'a str,
    plan: &'a Plan,
    peers: &'a [Peer],
    others: &'a [Result<Other, String>; 2],
}

/// The names of the rows on servers other than ZooKeeper, in the order of [`Bench::others`].
const OTHER_NAMES: [&str; 2] = ["Redis SET NX PX + Lua delete, 1 ms retry", "MariaDB unique-key insert, 1 ms retry"];

/// The uncontended runs of an [`Other`] row: µs per cycle, and requests per cycle of each round.
type OtherRuns = (Vec<f64>, Vec<f64>);

/// A lock on a server other than ZooKeeper, with the server it started.
enum Other {
    Redis(Redis),
    MariaDb(MariaDb),
}

impl Other {
    /// The server's process id, for its CPU time.
    fn pid(&self) -> Option<u32> {
        match self {
            Other::Redis(redis) => redis.pid(),
            Other::MariaDb(mariadb) => mariadb.pid(),
        }
    }

    /// µs per timed cycle on one connection, and requests per cycle from the server's count.
    async fn uncontended(&self, name: &str, plan: &Plan) -> Result<(Vec<f64>, f64), String> {
        match self {
            Other::Redis(redis) => redis.uncontended(name, plan.warmup, plan.cycles).await,
            Other::MariaDb(mariadb) => mariadb.uncontended(name, plan.warmup, plan.cycles).await,
        }
    }

    /// `plan.sessions` connections contending for `plan.contended_for`, one task each.
    async fn contended(&self, name: &str, plan: &Plan) -> Result<Contention, String> {
        let (counts, violations, requests_per_acquisition) = match self {
            Other::Redis(redis) => redis.contended(name, plan.sessions, plan.contended_for).await?,
            Other::MariaDb(mariadb) => mariadb.contended(name, plan.sessions, plan.contended_for).await?,
        };
        Ok(Contention { counts, requests_per_acquisition, violations, server_cpu_us: f64::NAN })
    }
}

pub(crate) async fn session(connect: &str) -> Result<Client, zookeeper_client::Error> {
    Client::connector().with_session_timeout(Duration::from_secs(30)).connect(connect).await
}

async fn uncontended(bench: &Bench<'_>) -> Result<(), Box<dyn std::error::Error>> {
    let Bench { connect, server, base, plan, peers, others, .. } = *bench;
    let mut rows = Vec::new();
    for index in 0..NAMES.len() {
        let client = session(connect).await?;
        let path = format!("{base}/uncontended/{index}");
        prepare(&client, &path).await;
        let row = Row::new(index, &client, &path);
        for _ in 0..plan.warmup {
            row.cycle(|| {}).await?;
        }
        rows.push((row, client, Vec::new(), 0u64));
    }
    let mut peer_runs: Vec<Uncontended> = peers.iter().map(|_| Uncontended::default()).collect();
    // µs samples and the requests per cycle of each round, or why the row has none.
    let mut other_runs: Vec<Result<OtherRuns, String>> = others
        .iter()
        .map(|other| other.as_ref().map(|_| Default::default()).map_err(|why| format!("skipped: {why}")))
        .collect();
    let turns = rows.len() + peers.len() + others.len();
    for round in 0..plan.rounds {
        // Rotate who goes first, so that no row always meets the server at the same warmth.
        for offset in 0..turns {
            let position = (round + offset) % turns;
            if let Some(which) = position.checked_sub(rows.len() + peers.len()) {
                if let (Ok(other), Ok((samples, requests))) = (&others[which], &mut other_runs[which]) {
                    match other.uncontended(&format!("{base}/uncontended/other-{which}"), plan).await {
                        Ok((more, per_cycle)) => {
                            samples.extend(more);
                            requests.push(per_cycle);
                        }
                        Err(why) => other_runs[which] = Err(format!("failed: {why}")),
                    }
                }
                continue;
            }
            if let Some(index) = position.checked_sub(rows.len()) {
                peers[index].uncontended_round(bench, &mut peer_runs[index])?;
                continue;
            }
            let (row, client, samples, requests) = &mut rows[position];
            let before = session_requests(server, client.session_id().0).unwrap_or(0);
            samples.extend(spin::time_cycles(row, 0, plan.cycles).await?);
            *requests += session_requests(server, client.session_id().0).unwrap_or(0).saturating_sub(before);
        }
    }
    let floor_p50 = percentile(&mut rows[FLOOR].2.clone(), 50.0);
    println!("| lock | p50 µs | p99 µs | p50 / raw floor | requests per cycle |");
    println!("|---|---|---|---|---|");
    for (index, (_, _, samples, requests)) in rows.iter_mut().enumerate() {
        let p50 = percentile(samples, 50.0);
        let per_cycle = *requests as f64 / (plan.rounds * plan.cycles) as f64;
        println!(
            "| {} | {p50:.0} | {:.0} | {:.2} | {per_cycle:.2} |",
            NAMES[index],
            percentile(samples, 99.0),
            p50 / floor_p50
        );
    }
    for (peer, runs) in peers.iter().zip(&mut peer_runs) {
        println!("{}", peer.uncontended_row(runs, floor_p50));
    }
    for (name, run) in OTHER_NAMES.iter().zip(&mut other_runs) {
        match run {
            Ok((samples, requests)) => {
                let p50 = percentile(samples, 50.0);
                println!(
                    "| {name} | {p50:.0} | {:.0} | {:.2} | {:.2} (server-wide count) |",
                    percentile(samples, 99.0),
                    p50 / floor_p50,
                    percentile(requests, 50.0)
                );
            }
            Err(why) => println!("| {name} | {why} | | | |"),
        }
    }
    let zklock = match &rows[0].0 {
        Row::Zklock(mutex) => mutex.clone(),
        _ => unreachable!("row 0 is zklock"),
    };
    let outer = zklock.acquire().await?;
    let started = Instant::now();
    let pairs = plan.cycles * 100;
    for _ in 0..pairs {
        zklock.acquire().await?.release().await?;
    }
    let per_pair = started.elapsed().as_secs_f64() * 1e9 / pairs as f64;
    outer.release().await?;
    println!("\nReentrant acquire+release (zklock): {per_pair:.0} ns per pair, no request.");
    Ok(())
}

/// One contended run of one row: acquisitions per client, requests per acquisition, exclusion.
struct Contention {
    counts: Vec<u64>,
    requests_per_acquisition: f64,
    violations: u64,
    /// CPU the lock's server spent per acquisition (µs), NaN when unknown (ZK_CONNECT).
    server_cpu_us: f64,
}

impl Contention {
    fn per_second(&self, plan: &Plan) -> f64 {
        self.counts.iter().sum::<u64>() as f64 / plan.contended_for.as_secs_f64()
    }
}

/// Every row in every round, the starting row rotating, so that a server still warming up does
/// not favour the rows that run last; the median round of each row is reported.
async fn contended(bench: &Bench<'_>) -> Result<(), Box<dyn std::error::Error>> {
    let Bench { connect, server, zookeeper_pid, base, plan, peers, others } = *bench;
    let rows: Vec<usize> = (0..NAMES.len()).filter(|&index| index != FLOOR).collect();
    // Rows from NAMES.len() on are the peers', then the other servers'.
    let peer = |row: usize| row.checked_sub(NAMES.len()).and_then(|index| peers.get(index));
    let other_row = |which: usize| NAMES.len() + peers.len() + which;
    let other = |row: usize| row.checked_sub(other_row(0));
    // Why an other server's row has no runs (not there, or it failed).
    let mut failed: Vec<Option<String>> =
        others.iter().map(|other| other.as_ref().err().map(|why| format!("skipped: {why}"))).collect();
    let mut runs: Vec<Vec<Contention>> = (0..other_row(others.len())).map(|_| Vec::new()).collect();
    let mut order: Vec<usize> = rows.clone();
    order.extend((0..peers.len()).filter(|&index| peers[index].is_available()).map(|index| NAMES.len() + index));
    order.extend((0..others.len()).filter(|&which| others[which].is_ok()).map(other_row));
    for round in 0..plan.rounds {
        for offset in 0..order.len() {
            let row = order[(round + offset) % order.len()];
            let path = format!("{base}/contended/{row}-{round}");
            let server_pid = match other(row) {
                Some(which) => others[which].as_ref().ok().and_then(Other::pid),
                None => zookeeper_pid,
            };
            let meter = CpuMeter::start(server_pid);
            let mut run = match (peer(row), other(row)) {
                (Some(peer), _) => contend_peer(peer, connect, server, &path, plan)?,
                (None, Some(which)) => {
                    let (Ok(elsewhere), None) = (&others[which], &failed[which]) else { continue };
                    match elsewhere.contended(&path, plan).await {
                        Ok(run) => run,
                        Err(why) => {
                            failed[which] = Some(format!("failed: {why}"));
                            continue;
                        }
                    }
                }
                (None, None) => contend(row, connect, server, &path, plan).await?,
            };
            run.server_cpu_us = meter.per_operation_us(run.counts.iter().sum());
            runs[row].push(run);
        }
    }
    println!(
        "| lock | acquisitions/s (median of {} rounds) | per client min–max | requests per acquisition | server CPU per acquisition µs | exclusion |",
        plan.rounds
    );
    println!("|---|---|---|---|---|---|");
    for row in order {
        let name = match (peer(row), other(row)) {
            (Some(peer), _) => peer.name(&format!(", {} threads with a session each", plan.sessions)),
            (None, Some(which)) => format!("{} ({} connections)", OTHER_NAMES[which], plan.sessions),
            (None, None) => NAMES[row].to_owned(),
        };
        if let Some(why) = other(row).and_then(|which| failed[which].as_ref()) {
            println!("| {name} | {why} | | | | |");
            continue;
        }
        let runs = &mut runs[row];
        runs.sort_by(|a, b| a.per_second(plan).total_cmp(&b.per_second(plan)));
        let median = &runs[runs.len() / 2];
        println!(
            "| {name} | {:.0} | {}–{} | {:.2} | {:.0} | {} |",
            median.per_second(plan),
            median.counts.iter().min().unwrap_or(&0),
            median.counts.iter().max().unwrap_or(&0),
            median.requests_per_acquisition,
            median.server_cpu_us,
            if runs.iter().all(|run| run.violations == 0) { "held" } else { "VIOLATED" }
        );
    }
    for peer in peers.iter().filter(|peer| !peer.is_available()) {
        println!("{}", peer.skipped_row(6));
    }
    for (which, name) in OTHER_NAMES.iter().enumerate() {
        if let Err(why) = &others[which] {
            println!("| {name} | skipped: {why} | | | | |");
        }
    }
    Ok(())
}

async fn contend(
    index: usize,
    connect: &str,
    server: SocketAddr,
    path: &str,
    plan: &Plan,
) -> Result<Contention, Box<dyn std::error::Error>> {
    let setup = session(connect).await?;
    prepare(&setup, path).await;
    let mut clients = Vec::new();
    for _ in 0..plan.sessions {
        clients.push(session(connect).await?);
    }
    let rows = clients.iter().map(|client| Row::new(index, client, path)).collect();
    let before = packets_received(server);
    let (counts, violations) = spin::contend(rows, plan.contended_for).await?;
    let total: u64 = counts.iter().sum();
    let requests_per_acquisition = packets_received(server).saturating_sub(before) as f64 / total.max(1) as f64;
    Ok(Contention { counts, requests_per_acquisition, violations, server_cpu_us: f64::NAN })
}

fn contend_peer(
    peer: &Peer,
    connect: &str,
    server: SocketAddr,
    path: &str,
    plan: &Plan,
) -> Result<Contention, Box<dyn std::error::Error>> {
    let before = packets_received(server);
    let millis = plan.contended_for.as_millis().to_string();
    let numbers = peer.run(connect, path, &["contended", &plan.sessions.to_string(), &millis])?;
    let (counts, violations) = numbers.split_at(numbers.len().saturating_sub(1));
    let counts: Vec<u64> = counts.iter().map(|&count| count as u64).collect();
    let total: u64 = counts.iter().sum();
    // Includes the program's sessions' connects and closes: a little above the per-acquisition cost.
    let requests_per_acquisition = packets_received(server).saturating_sub(before) as f64 / total.max(1) as f64;
    Ok(Contention {
        counts,
        requests_per_acquisition,
        violations: violations.first().copied().unwrap_or(1) as u64,
        server_cpu_us: f64::NAN,
    })
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
