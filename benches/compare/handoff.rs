//! Handoff: many waiters queued on one lock, one session each; how long from one holder's
//! release to the next holder's acquisition, and how many sessions watch each queued node.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use zklock::InterProcessMutex;
use zklock_testcontainers::four_letter_word;

use crate::rows::{prepare, Row};
use crate::{percentile, session, Bench};

/// The handoff latencies of one row: p50 and p99 in µs, and the most sessions seen watching
/// one node of the queue (1 means no herd).
pub struct Handoff {
    pub p50_us: f64,
    pub p99_us: f64,
    pub watchers_per_node: usize,
}

/// Queues `waiters` participants of row `index` behind a zklock holder, releases, and times the
/// chain of handoffs (each waiter releases as soon as it holds).
pub async fn handoff(bench: &Bench<'_>, index: usize, waiters: usize) -> Result<Handoff, Box<dyn std::error::Error>> {
    static RUN: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let run = RUN.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
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
    let released = Instant::now();
    holder.release().await?;
    for task in tasks {
        task.await?;
    }
    let mut times = acquired.lock().unwrap().clone();
    times.sort();
    let mut gaps: Vec<f64> = std::iter::once(released)
        .chain(times.iter().copied())
        .zip(times.iter().copied())
        .map(|(before, after)| after.duration_since(before).as_secs_f64() * 1e6)
        .collect();
    Ok(Handoff { p50_us: percentile(&mut gaps, 50.0), p99_us: percentile(&mut gaps, 99.0), watchers_per_node })
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
