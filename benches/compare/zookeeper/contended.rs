//! A ZooKeeper row contended: `plan.sessions` sessions of this process cycling on one lock.

use std::error::Error;

use super::{prepare, ZooKeeperLock};
use crate::contended::Contention;
use crate::exclusion::Record;
use crate::spin::contend as spin;
use crate::{session, Bench};

/// One contended run on the lock at `path`; requests are the server's count for everyone but
/// the busy pass's writers.
pub async fn contend<L: ZooKeeperLock>(
    bench: &Bench<'_>,
    path: &str,
    record: &Record,
) -> Result<Contention, Box<dyn Error>> {
    let setup = session(bench.connect).await?;
    prepare(&setup, path).await;
    let mut clients = Vec::new();
    for _ in 0..bench.plan.sessions {
        clients.push(session(bench.connect).await?);
    }
    let locks = clients.iter().map(|client| L::new(client, path)).collect();
    Ok(spin(locks, bench.plan, L::TAG, record, async || Ok(bench.requests())).await?)
}
