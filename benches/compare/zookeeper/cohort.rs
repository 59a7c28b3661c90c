//! A ZooKeeper row's tasks: each session's lock object cloned into its tasks (see
//! [`Layout`]).

use std::error::Error;

use super::{prepare, ZooKeeperLock};
use crate::cohort::{CohortRun, Layout};
use crate::exclusion::Record;
use crate::session;
use crate::spin::{time_tasks, Inside};
use crate::Bench;

/// One run of `layout` on the lock at `path`; requests are the server's count.
pub async fn contend<L: ZooKeeperLock>(
    bench: &Bench<'_>,
    path: &str,
    layout: Layout,
    record: &Record,
) -> Result<CohortRun, Box<dyn Error>> {
    let setup = session(bench.connect).await?;
    prepare(&setup, path).await;
    let mut clients = Vec::new();
    let mut locks = Vec::new();
    for _ in 0..layout.sessions + usize::from(layout.lone) {
        clients.push(session(bench.connect).await?);
    }
    for client in &clients[..layout.sessions] {
        let lock = L::new(client, path);
        locks.extend(std::iter::repeat_n(lock, layout.tasks));
    }
    // The other process's task comes last.
    locks.extend(clients[layout.sessions..].iter().map(|client| L::new(client, path)));
    let timed = time_tasks(locks, bench.plan, L::TAG, record, Inside::Mark, async || Ok(bench.requests())).await?;
    let mut waits = timed.waits_us;
    let other = if layout.lone { waits.pop().unwrap_or_default() } else { Vec::new() };
    Ok(CohortRun::new(waits.concat(), &other, timed.requests))
}
