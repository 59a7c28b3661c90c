//! A ZooKeeper row contended: `plan.sessions` sessions of this process cycling on one lock.

use std::error::Error;

use super::{prepare, ZooKeeperLock};
use crate::contended::Contention;
use crate::spin::contend as spin;
use crate::{packets_received, session, Bench};

/// One contended run on the lock at `path`; requests are the server's count for everyone.
pub async fn contend<L: ZooKeeperLock>(bench: &Bench<'_>, path: &str) -> Result<Contention, Box<dyn Error>> {
    let setup = session(bench.connect).await?;
    prepare(&setup, path).await;
    let mut clients = Vec::new();
    for _ in 0..bench.plan.sessions {
        clients.push(session(bench.connect).await?);
    }
    let locks = clients.iter().map(|client| L::new(client, path)).collect();
    let before = packets_received(bench.server);
    let mut run = spin(locks, bench.plan.contended_for).await?;
    run.requests_per_acquisition =
        packets_received(bench.server).saturating_sub(before) as f64 / run.acquisitions().max(1) as f64;
    Ok(run)
}
