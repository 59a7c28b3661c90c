//! The zklock row: `InterProcessMutex`, in this process.

use std::future::Future;
use std::time::Instant;

use zklock::InterProcessMutex;
use zookeeper_client::Client;

use crate::row::{Pending, Scenario};
use crate::spin::Cycle;
use crate::zookeeper::ZooKeeperLock;
use crate::Plan;

impl ZooKeeperLock for InterProcessMutex {
    const NAME: &'static str = "zklock InterProcessMutex";
    const TAG: &'static str = "zklock";
    const SCENARIOS: &'static [Scenario] =
        &[Scenario::Uncontended, Scenario::Contended, Scenario::Handoff, Scenario::Cohort];

    fn new(client: &Client, path: &str) -> InterProcessMutex {
        InterProcessMutex::new(client, path).expect("lock path")
    }

    /// What reentry costs: acquire and release while this session already holds the lock.
    fn note<'a>(&'a self, plan: &'a Plan) -> Pending<'a, Option<String>> {
        Box::pin(async move {
            let outer = self.acquire().await?;
            let started = Instant::now();
            let pairs = plan.cycles * 100;
            for _ in 0..pairs {
                self.acquire().await?.release().await?;
            }
            let per_pair = started.elapsed().as_secs_f64() * 1e9 / pairs as f64;
            outer.release().await?;
            Ok(Some(format!("Reentrant acquire+release (zklock): {per_pair:.0} ns per pair, no request.")))
        })
    }
}

impl Cycle for InterProcessMutex {
    async fn cycle(&mut self, inside: impl Future<Output = Result<(), String>> + Send) -> Result<(), String> {
        let guard = self.acquire().await.map_err(|e| e.to_string())?;
        inside.await?;
        guard.release().await.map_err(|e| e.to_string())
    }
}
