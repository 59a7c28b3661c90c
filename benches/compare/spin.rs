//! The measurement loops every in-process row shares (the ZooKeeper rows, Redis, MariaDB): timed
//! cycles, and contention with one exclusion check.

use std::future::Future;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::contended::Contention;

/// A lock held through one connection of its own: take it, run `inside`, give it back.
pub trait Cycle: Send + 'static {
    /// Takes the lock (retrying until it is free), runs `inside` while holding it, gives it back.
    fn cycle(&mut self, inside: impl FnOnce() + Send) -> impl Future<Output = Result<(), String>> + Send;
}

/// Runs `warmup` untimed cycles, then `cycles` timed ones: µs per cycle.
pub async fn time_cycles(lock: &mut impl Cycle, warmup: usize, cycles: usize) -> Result<Vec<f64>, String> {
    for _ in 0..warmup {
        lock.cycle(|| {}).await?;
    }
    let mut samples = Vec::with_capacity(cycles);
    for _ in 0..cycles {
        let started = Instant::now();
        lock.cycle(|| {}).await?;
        samples.push(started.elapsed().as_secs_f64() * 1e6);
    }
    Ok(samples)
}

/// Every lock in `locks` (one connection each, on one lock name) cycles in a task of its own
/// for `duration`: acquisitions per lock, and how many times two of them were inside at once.
/// The requests and the server's CPU are the caller's to count (NaN here).
pub async fn contend<L: Cycle>(locks: Vec<L>, duration: Duration) -> Result<Contention, String> {
    let inside = Arc::new(AtomicUsize::new(0));
    let violations = Arc::new(AtomicU64::new(0));
    let deadline = Instant::now() + duration;
    let mut tasks = Vec::with_capacity(locks.len());
    for mut lock in locks {
        let (inside, violations) = (inside.clone(), violations.clone());
        tasks.push(tokio::spawn(async move {
            let mut count = 0u64;
            while Instant::now() < deadline {
                lock.cycle(|| {
                    if inside.fetch_add(1, Ordering::SeqCst) > 0 {
                        violations.fetch_add(1, Ordering::SeqCst);
                    }
                    inside.fetch_sub(1, Ordering::SeqCst);
                })
                .await?;
                count += 1;
            }
            Ok::<u64, String>(count)
        }));
    }
    let mut counts = Vec::with_capacity(tasks.len());
    for task in tasks {
        counts.push(task.await.map_err(|e| format!("a contending task died: {e}"))??);
    }
    Ok(Contention {
        counts,
        requests_per_acquisition: f64::NAN,
        violations: violations.load(Ordering::SeqCst),
        server_cpu_us: f64::NAN,
    })
}
