//! A ZooKeeper row's handoff: `plan.waiters` sessions of this process queued behind a zklock
//! holder; each waiter releases as soon as it holds.

use std::error::Error;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use zklock::InterProcessMutex;

use super::{prepare, ZooKeeperLock};
use crate::cpu::CpuMeter;
use crate::handoff::{most_watchers_per_node, Handoff};
use crate::{percentile, session, Bench};

/// Queues the waiters on the lock at `path`, releases the holder, and times the chain of
/// handoffs.
pub async fn handoff<L: ZooKeeperLock>(bench: &Bench<'_>, path: &str) -> Result<Handoff, Box<dyn Error>> {
    let waiters = bench.plan.waiters;
    let holder_client = session(bench.connect).await?;
    prepare(&holder_client, path).await;
    let holder = InterProcessMutex::new(&holder_client, path)?.acquire().await?;
    let acquired: Arc<Mutex<Vec<Instant>>> = Arc::default();
    let mut tasks = Vec::with_capacity(waiters);
    let mut clients = Vec::with_capacity(waiters);
    for _ in 0..waiters {
        let client = session(bench.connect).await?;
        let mut lock = L::new(&client, path);
        let acquired = Arc::clone(&acquired);
        tasks.push(tokio::spawn(async move {
            let held = async {
                acquired.lock().unwrap().push(Instant::now());
                Ok(())
            };
            lock.cycle(held).await.expect("a handoff failed");
        }));
        clients.push(client);
    }
    // Everyone queued: the holder's node and one per waiter.
    while holder_client.list_children(path).await?.len() < waiters + 1 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let watchers_per_node = most_watchers_per_node(bench, path);
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
