//! Uncontended acquire+release against the raw floor, side by side on one session.
//!
//! The floor is what any ZooKeeper lock must do at least: create an ephemeral sequential node
//! and delete it (two round trips). zklock's cycle is create+list sent together, then delete.
//! Rounds alternate the two so that machine noise hits both alike; the ratio is reported per
//! round, and the median over rounds.
//!
//! Besides time, it reports the CPU each cycle costs this process (getrusage) and the server
//! (`/proc`, when it started the server): on a machine with few cores, CPU spent on either side
//! is time the other side waits for.
//!
//! `cargo bench --bench uncontended [-- --quick]`; uses `ZK_CONNECT` when set, else starts a
//! throwaway server. `-- --only zklock|floor CYCLES` runs just that many cycles of one kind and
//! prints nothing, for counting instructions per cycle with `valgrind --tool=callgrind` (run it
//! with two cycle counts and divide the difference; BENCHMARKS.md); `--only fresh CYCLES`
//! counts zklock's cycle with a new lock object each time, none outliving it (a mutex per
//! entity).

use std::net::ToSocketAddrs;
use std::time::{Duration, Instant};

use zklock::InterProcessMutex;
use zklock_testcontainers::ZooKeeperServer;
use zookeeper_client::{Acls, Client, CreateMode};

use counts::session_requests;
use cpu::{cpu_time, own_cpu_time};

// What the comparison benchmark measures with, read the same way here (it uses the rest).
#[allow(dead_code)]
#[path = "compare/counts.rs"]
mod counts;
#[allow(dead_code)]
#[path = "compare/cpu.rs"]
mod cpu;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|arg| arg == "--quick");
    let only = args.iter().position(|arg| arg == "--only").map(|at| {
        let kind = args.get(at + 1).cloned().unwrap_or_default();
        let cycles = args.get(at + 2).and_then(|cycles| cycles.parse::<usize>().ok()).unwrap_or(1_000);
        (kind, cycles)
    });
    let (cycles, rounds, warmup) = if quick { (50, 3, 20) } else { (1_000, 7, 300) };
    let (connect, _server) = match std::env::var("ZK_CONNECT") {
        Ok(connect) if !connect.is_empty() => (connect, None),
        _ => {
            let server = ZooKeeperServer::start().await?;
            (server.connect_string(), Some(server))
        }
    };
    let client = Client::connector().with_session_timeout(Duration::from_secs(30)).connect(&connect).await?;
    let raw_parent = format!("/bench-uncontended-{}", std::process::id());
    client.mkdir(&raw_parent, &CreateMode::Persistent.with_acls(Acls::anyone_all())).await?;
    let mutex = InterProcessMutex::new(&client, &format!("{raw_parent}-lock"))?;
    if let Some((kind, cycles)) = only {
        match kind.as_str() {
            "zklock" => drop(lock_cycles(&mutex, cycles).await?),
            "floor" => drop(raw_cycles(&client, &raw_parent, cycles).await?),
            "fresh" => {
                // No lock object outlives a cycle: the pattern of a mutex per entity.
                let path = mutex.path().to_owned();
                drop(mutex);
                fresh_object_cycles(&client, &path, cycles).await?;
            }
            _ => return Err(format!("--only zklock|fresh|floor CYCLES, not {kind:?}").into()),
        }
        return Ok(());
    }
    let server_pid = _server.as_ref().and_then(ZooKeeperServer::pid);

    raw_cycles(&client, &raw_parent, warmup).await?;
    lock_cycles(&mutex, warmup).await?;

    let mut ratios = Vec::new();
    let mut raw_us = Vec::new();
    let mut lock_us = Vec::new();
    let mut reentrant_ns = Vec::new();
    let (mut raw_cpu, mut lock_cpu) = (Cpu::default(), Cpu::default());
    for _ in 0..rounds {
        let started = Cpu::now(server_pid);
        let raw = raw_cycles(&client, &raw_parent, cycles).await?;
        let middle = Cpu::now(server_pid);
        let lock = lock_cycles(&mutex, cycles).await?;
        let ended = Cpu::now(server_pid);
        raw_cpu.add(&started, &middle);
        lock_cpu.add(&middle, &ended);
        ratios.push(lock.as_secs_f64() / raw.as_secs_f64());
        raw_us.push(raw.as_secs_f64() * 1e6 / cycles as f64);
        lock_us.push(lock.as_secs_f64() * 1e6 / cycles as f64);
        reentrant_ns.push(reentrant_cycles(&mutex, cycles * 10).await?);
    }
    // Requests per cycle, from the server's own count for this session (`cons`).
    let address = connect.split(',').next().and_then(|host| host.to_socket_addrs().ok()?.next());
    let counted = |before: Option<u64>, after: Option<u64>, cycles: usize| match (before, after) {
        (Some(before), Some(after)) => format!("{:.2}", (after - before) as f64 / cycles as f64),
        _ => "n/a".to_owned(),
    };
    let requests = || address.and_then(|address| session_requests(address, client.session_id().0));
    let before = requests();
    raw_cycles(&client, &raw_parent, cycles).await?;
    let middle = requests();
    lock_cycles(&mutex, cycles).await?;
    let after = requests();
    let raw_requests = counted(before, middle, cycles);
    let lock_requests = counted(middle, after, cycles);
    client.delete(&raw_parent, None).await?;

    println!("uncontended cycle, {rounds} rounds x {cycles} cycles, one session, medians (min-max):\n");
    let all = (rounds * cycles) as f64;
    println!(
        "| cycle | per cycle | ratio to raw floor | requests per cycle | client CPU per cycle | server CPU per cycle |"
    );
    println!("|---|---|---|---|---|---|");
    println!(
        "| raw create+delete (floor) | {} µs | 1.00 | {raw_requests} | {:.1} µs | {:.0} µs |",
        spread(&mut raw_us, 0),
        raw_cpu.client_us / all,
        raw_cpu.server_us / all
    );
    println!(
        "| zklock acquire+release | {} µs | {} | {lock_requests} | {:.1} µs | {:.0} µs |",
        spread(&mut lock_us, 0),
        spread(&mut ratios, 3),
        lock_cpu.client_us / all,
        lock_cpu.server_us / all
    );
    println!("| zklock reentrant acquire+release | {} ns | — | 0 | — | — |", spread(&mut reentrant_ns, 0));
    Ok(())
}

async fn raw_cycles(client: &Client, parent: &str, cycles: usize) -> Result<Duration, zookeeper_client::Error> {
    let options = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
    let prefix = format!("{parent}/raw-");
    let started = Instant::now();
    for _ in 0..cycles {
        let (_, sequence) = client.create(&prefix, b"", &options).await?;
        client.delete(&format!("{prefix}{sequence}"), None).await?;
    }
    Ok(started.elapsed())
}

/// Cycles of a lock object made for one acquire and dropped after it.
async fn fresh_object_cycles(client: &Client, path: &str, cycles: usize) -> zklock::Result<Duration> {
    let started = Instant::now();
    for _ in 0..cycles {
        InterProcessMutex::new(client, path)?.acquire().await?.release().await?;
    }
    Ok(started.elapsed())
}

async fn lock_cycles(mutex: &InterProcessMutex, cycles: usize) -> zklock::Result<Duration> {
    let started = Instant::now();
    for _ in 0..cycles {
        mutex.acquire().await?.release().await?;
    }
    Ok(started.elapsed())
}

/// Nanoseconds per reentrant acquire+release while an outer guard holds the lock.
async fn reentrant_cycles(mutex: &InterProcessMutex, cycles: usize) -> zklock::Result<f64> {
    let outer = mutex.acquire().await?;
    let started = Instant::now();
    for _ in 0..cycles {
        mutex.acquire().await?.release().await?;
    }
    let elapsed = started.elapsed();
    outer.release().await?;
    Ok(elapsed.as_secs_f64() * 1e9 / cycles as f64)
}

/// CPU time, in µs: this process's (getrusage, every thread) and the server's (`/proc`, when
/// this benchmark started it; NaN otherwise). Used both as a reading and as a running sum.
#[derive(Default)]
struct Cpu {
    client_us: f64,
    server_us: f64,
}

impl Cpu {
    fn now(server_pid: Option<u32>) -> Cpu {
        let micros = |time: Duration| time.as_secs_f64() * 1e6;
        let server_us = server_pid.and_then(cpu_time).map_or(f64::NAN, micros);
        Cpu { client_us: micros(own_cpu_time()), server_us }
    }

    /// Adds the CPU spent between two readings.
    fn add(&mut self, from: &Cpu, to: &Cpu) {
        self.client_us += to.client_us - from.client_us;
        self.server_us += to.server_us - from.server_us;
    }
}

/// "median (min–max)" of `values`, with `decimals` places.
fn spread(values: &mut [f64], decimals: usize) -> String {
    values.sort_by(f64::total_cmp);
    let median = values[values.len() / 2];
    format!("{median:.decimals$} ({:.decimals$}–{:.decimals$})", values[0], values[values.len() - 1])
}
