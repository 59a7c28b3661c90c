//! Scale: many locks held by one process, and many waiters on one lock. Reports the client's
//! heap per held lock and per waiter (counted by [`crate::heap`]), and how long it took.

use std::time::{Duration, Instant};

use tokio::task::JoinSet;
use zklock::{InterProcessMutex, LockGuard};

use crate::heap::{live_bytes, resident_bytes};
use crate::report::out;
use crate::zookeeper::prepare;
use crate::{session, Bench};

/// Long enough for a hold's delayed node watch (one second) to have fired or given up.
const SETTLE: Duration = Duration::from_millis(1_500);

/// What one scale run measured.
pub struct Scale {
    /// How many locks were held, or waiters queued.
    pub count: usize,
    /// Live heap bytes per lock or waiter, mutex objects, guards and the client's own share
    /// included.
    pub heap_per_item: f64,
    /// Growth of the resident set, per lock or waiter (includes allocator slack).
    pub resident_per_item: f64,
    /// Heap bytes still live per item after everything was released and dropped, and the
    /// one-second node-watch timers of short holds have run out (a leak would show here).
    pub heap_left_per_item: f64,
    /// From the first acquire to the last lock held, or to the last waiter queued.
    pub took: Duration,
}

/// Client memory per held lock and per waiter.
pub async fn run(bench: &Bench<'_>) -> Result<(), Box<dyn std::error::Error>> {
    out!("| scenario | count | client heap per item | resident growth per item | heap left after release | time |");
    out!("|---|---|---|---|---|---|");
    let locks = many_locks(bench, bench.plan.held_locks).await?;
    let waiters = many_waiters(bench, bench.plan.waiters_on_one_lock).await?;
    for (scenario, run) in [
        ("distinct locks held at once, one session (time: to take them all)", &locks),
        ("waiters queued on one lock, one session (time: until all queued)", &waiters),
    ] {
        out!(
            "| {scenario} | {} | {:.0} B | {:.0} B | {:.0} B per item | {:.2} s |",
            run.count,
            run.heap_per_item,
            run.resident_per_item,
            run.heap_left_per_item,
            run.took.as_secs_f64()
        );
    }
    out!(
        "\n{} held locks: {:.1} MB of client heap in all.",
        locks.count,
        locks.heap_per_item * locks.count as f64 / 1e6
    );
    Ok(())
}

/// `count` distinct locks taken at once by one process on one session, then all released.
async fn many_locks(bench: &Bench<'_>, count: usize) -> Result<Scale, Box<dyn std::error::Error>> {
    let client = session(bench.connect).await?;
    let base = format!("{}/scale/locks", bench.base);
    prepare(&client, &base).await;
    let (heap, resident) = (live_bytes(), resident_bytes());
    let started = Instant::now();
    let mut acquiring = JoinSet::new();
    for index in 0..count {
        let mutex = InterProcessMutex::new(&client, &format!("{base}/{index}"))?;
        acquiring.spawn(async move { mutex.acquire().await.map(|guard| (mutex, guard)) });
    }
    let mut held: Vec<(InterProcessMutex, LockGuard)> = Vec::with_capacity(count);
    while let Some(outcome) = acquiring.join_next().await {
        held.push(outcome??);
    }
    let took = started.elapsed();
    let heap_per_item = (live_bytes() - heap) as f64 / count as f64;
    let resident_per_item = resident_bytes().saturating_sub(resident) as f64 / count as f64;
    for (_, guard) in held.drain(..) {
        guard.release().await?;
    }
    drop(held);
    tokio::time::sleep(SETTLE).await;
    let heap_left_per_item = (live_bytes() - heap) as f64 / count as f64;
    Ok(Scale { count, heap_per_item, resident_per_item, heap_left_per_item, took })
}

/// `count` waiters (tasks of one process, on one session) queued behind a holder on another
/// session; then the holder lets go and each waiter releases as soon as it holds.
async fn many_waiters(bench: &Bench<'_>, count: usize) -> Result<Scale, Box<dyn std::error::Error>> {
    let path = format!("{}/scale/waiters", bench.base);
    let holder_client = session(bench.connect).await?;
    prepare(&holder_client, &path).await;
    let holder = InterProcessMutex::new(&holder_client, &path)?.acquire().await?;
    let client = session(bench.connect).await?;
    let (heap, resident) = (live_bytes(), resident_bytes());
    let started = Instant::now();
    let mutex = InterProcessMutex::new(&client, &path)?;
    let mut waiting = JoinSet::new();
    for _ in 0..count {
        let mutex = mutex.clone();
        waiting.spawn(async move { mutex.acquire().await?.release().await });
    }
    while holder_client.list_children(&path).await?.len() < count + 1 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let took = started.elapsed();
    let heap_per_item = (live_bytes() - heap) as f64 / count as f64;
    let resident_per_item = resident_bytes().saturating_sub(resident) as f64 / count as f64;
    holder.release().await?;
    while let Some(outcome) = waiting.join_next().await {
        outcome??;
    }
    drop(mutex);
    tokio::time::sleep(SETTLE).await;
    let heap_left_per_item = (live_bytes() - heap) as f64 / count as f64;
    Ok(Scale { count, heap_per_item, resident_per_item, heap_left_per_item, took })
}
