//! The measurement loops every in-process row shares (the ZooKeeper rows, Redis, MariaDB): timed
//! cycles, and contention whose holds are recorded outside the process.

use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::Barrier;

use crate::contended::Contention;
use crate::exclusion::Record;
use crate::Plan;

/// A lock held through one connection of its own: take it, run `inside`, give it back.
pub trait Cycle: Send + 'static {
    /// Takes the lock (retrying until it is free), awaits `inside` while holding it, gives it
    /// back.
    fn cycle(
        &mut self,
        inside: impl Future<Output = Result<(), String>> + Send,
    ) -> impl Future<Output = Result<(), String>> + Send;
}

/// Nothing to do while holding.
pub async fn nothing() -> Result<(), String> {
    Ok(())
}

/// Runs `warmup` untimed cycles, then `cycles` timed ones: µs per cycle.
pub async fn time_cycles(lock: &mut impl Cycle, warmup: usize, cycles: usize) -> Result<Vec<f64>, String> {
    for _ in 0..warmup {
        lock.cycle(nothing()).await?;
    }
    let mut samples = Vec::with_capacity(cycles);
    for _ in 0..cycles {
        let started = Instant::now();
        lock.cycle(nothing()).await?;
        samples.push(started.elapsed().as_secs_f64() * 1e6);
    }
    Ok(samples)
}

/// Every lock in `locks` (one connection each, on one lock name) cycles in a task of its own:
/// untimed for `plan.contended_warmup`, then, once all are warm, timed for `plan.contended_for`,
/// each timed hold recorded in `record` under the name `{tag}-{index}`. `requests` is read when
/// the timed part starts and after it ends.
pub async fn contend<L: Cycle>(
    locks: Vec<L>,
    plan: &Plan,
    tag: &str,
    record: &Record,
    requests: impl AsyncFn() -> Result<u64, String>,
) -> Result<Contention, String> {
    let timed = time_tasks(locks, plan, tag, record, Inside::Hold, requests).await?;
    let counts = timed.waits_us.iter().map(|waits| waits.len() as u64).collect();
    Ok(Contention::new(counts, timed.requests))
}

/// What a timed hold does inside.
#[derive(Clone, Copy)]
pub enum Inside {
    /// [`Writer::hold`](crate::exclusion::Writer::hold): its record, and the 1 ms sleep.
    Hold,
    /// [`Writer::mark`](crate::exclusion::Writer::mark): its record alone.
    Mark,
}

/// The timed part of a run: each task's waits (asking to holding, µs) and the server's requests.
pub struct Timed {
    pub waits_us: Vec<Vec<f64>>,
    pub requests: u64,
}

/// [`contend`]'s loop, with what each hold does `inside`, telling every task's waits.
pub async fn time_tasks<L: Cycle>(
    locks: Vec<L>,
    plan: &Plan,
    tag: &str,
    record: &Record,
    inside: Inside,
    requests: impl AsyncFn() -> Result<u64, String>,
) -> Result<Timed, String> {
    let writer = record.writer()?;
    // Every task and this one: all warm, then all go.
    let (warm, go) = (Arc::new(Barrier::new(locks.len() + 1)), Arc::new(Barrier::new(locks.len() + 1)));
    let warm_until = Instant::now() + plan.contended_warmup;
    let duration = plan.contended_for;
    let mut tasks = Vec::with_capacity(locks.len());
    for (index, mut lock) in locks.into_iter().enumerate() {
        let (writer, warm, go, name) = (writer.clone(), warm.clone(), go.clone(), format!("{tag}-{index}"));
        tasks.push(tokio::spawn(async move {
            let warmed = async {
                while Instant::now() < warm_until {
                    lock.cycle(async {
                        tokio::task::yield_now().await;
                        Ok(())
                    })
                    .await?;
                }
                Ok::<(), String>(())
            }
            .await;
            // Reached also after a failure, so that nobody waits for this task forever.
            warm.wait().await;
            go.wait().await;
            warmed?;
            let deadline = Instant::now() + duration;
            let mut waits = Vec::new();
            while Instant::now() < deadline {
                let asked = Instant::now();
                let mut waited = 0.0;
                lock.cycle(async {
                    waited = asked.elapsed().as_secs_f64() * 1e6;
                    match inside {
                        Inside::Hold => writer.hold(&name).await,
                        Inside::Mark => writer.mark(&name).await,
                    }
                })
                .await?;
                waits.push(waited);
            }
            Ok::<Vec<f64>, String>(waits)
        }));
    }
    warm.wait().await;
    let before = requests().await?;
    go.wait().await;
    let mut waits_us = Vec::with_capacity(tasks.len());
    for task in tasks {
        waits_us.push(task.await.map_err(|e| format!("a contending task died: {e}"))??);
    }
    let after = requests().await?;
    Ok(Timed { waits_us, requests: after.saturating_sub(before) })
}
