//! Handoff: many waiters queued on one lock, one session each; how long from one holder's
//! release to the next holder's acquisition, and how many sessions watch each queued node.

use std::io::{BufRead, BufReader, Read, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use zklock::InterProcessMutex;
use zklock_testcontainers::four_letter_word;

use crate::cpu::CpuMeter;
use crate::peers::{self, Peer};
use crate::rows::{prepare, Row};
use crate::{percentile, session, Bench};

/// Numbers the runs, so that every run has a lock path of its own.
static RUN: AtomicUsize = AtomicUsize::new(0);

/// The handoff latencies of one row: p50 and p99 in µs, and the most sessions seen watching
/// one node of the queue (1 means no herd).
pub struct Handoff {
    pub p50_us: f64,
    pub p99_us: f64,
    pub watchers_per_node: usize,
    /// CPU this process spent per handoff (NaN for rows in another process).
    pub client_cpu_us: f64,
    /// CPU the ZooKeeper server spent per handoff (NaN when it is not ours to read).
    pub server_cpu_us: f64,
}

/// Queues `waiters` participants of row `index` behind a zklock holder, releases, and times the
/// chain of handoffs (each waiter releases as soon as it holds).
pub async fn handoff(bench: &Bench<'_>, index: usize, waiters: usize) -> Result<Handoff, Box<dyn std::error::Error>> {
    let run = RUN.fetch_add(1, Ordering::Relaxed);
    let path = format!("{}/handoff/{index}-{run}", bench.base);
    let holder_client = session(bench.connect).await?;
    prepare(&holder_client, &path).await;
    let holder = InterProcessMutex::new(&holder_client, &path)?.acquire().await?;
    let acquired: Arc<Mutex<Vec<Instant>>> = Arc::default();
    let mut tasks = Vec::with_capacity(waiters);
    let mut clients = Vec::with_capacity(waiters);
    for _ in 0..waiters {
        let client = session(bench.connect).await?;
        let row = Row::new(index, &client, &path);
        let acquired = Arc::clone(&acquired);
        tasks.push(tokio::spawn(async move {
            row.cycle(|| acquired.lock().unwrap().push(Instant::now())).await.expect("a handoff failed");
        }));
        clients.push(client);
    }
    // Everyone queued: the holder's node and one per waiter.
    while holder_client.list_children(&path).await?.len() < waiters + 1 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let watchers_per_node = most_watchers_per_node(bench, &path);
    let (client_cpu, server_cpu) = (CpuMeter::start_own(), CpuMeter::start(bench.zookeeper_pid));
    let released = Instant::now();
    holder.release().await?;
    for task in tasks {
        task.await?;
    }
    let client_cpu_us = client_cpu.per_operation_us(waiters as u64);
    let server_cpu_us = server_cpu.per_operation_us(waiters as u64);
    let mut times = acquired.lock().unwrap().clone();
    times.sort();
    let mut gaps: Vec<f64> = std::iter::once(released)
        .chain(times.iter().copied())
        .zip(times.iter().copied())
        .map(|(before, after)| after.duration_since(before).as_secs_f64() * 1e6)
        .collect();
    Ok(Handoff {
        p50_us: percentile(&mut gaps, 50.0),
        p99_us: percentile(&mut gaps, 99.0),
        watchers_per_node,
        client_cpu_us,
        server_cpu_us,
    })
}

/// The same handoff inside a peer's program: its own holder and `waiters` clients in one
/// process, so that one clock times every handoff. The program says `queued` once all are
/// queued and waits; we read the watchers from `wchp` then (as for our rows, before the
/// release) and tell it to go; it releases and prints `handoff_us P50 P99`.
pub fn peer_handoff(bench: &Bench<'_>, peer: &Peer, waiters: usize) -> Result<Handoff, Box<dyn std::error::Error>> {
    let path = format!("{}/handoff/{}-{}", bench.base, peer.tag, RUN.fetch_add(1, Ordering::Relaxed));
    let mut child = peer.spawn(bench.connect, &path, &["handoff", &waiters.to_string()])?;
    // Drained all along: a program that logs a lot must not block on a full pipe.
    let mut stderr = child.stderr.take().ok_or("no stderr")?;
    let errors = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let mut stdin = child.stdin.take().ok_or("no stdin")?;
    let mut lines = BufReader::new(child.stdout.take().ok_or("no stdout")?).lines();
    let mut watchers_per_node = 0;
    let mut numbers = Vec::new();
    for line in &mut lines {
        let line = line?;
        if line == "queued" {
            watchers_per_node = most_watchers_per_node(bench, &path);
            writeln!(stdin, "go")?;
        } else if line.starts_with("handoff_us") {
            numbers = peers::numbers(&line);
        }
    }
    let status = child.wait()?;
    let errors = errors.join().unwrap_or_default();
    match numbers[..] {
        [p50, p99] if status.success() => Ok(Handoff {
            p50_us: p50 as f64,
            p99_us: p99 as f64,
            watchers_per_node,
            client_cpu_us: f64::NAN,
            server_cpu_us: f64::NAN,
        }),
        _ => Err(format!("{} handoff failed ({status}): {errors}", peer.name("")).into()),
    }
}

/// From `wchp`: the most sessions watching any one node under `path`.
fn most_watchers_per_node(bench: &Bench<'_>, path: &str) -> usize {
    let Ok(answer) = four_letter_word(bench.server, "wchp") else { return 0 };
    let mut most = 0;
    let mut current = 0;
    let mut inside = false;
    for line in answer.lines() {
        if line.starts_with('\t') {
            if inside {
                current += 1;
                most = most.max(current);
            }
        } else {
            inside = line.starts_with(&format!("{path}/"));
            current = 0;
        }
    }
    most
}
