//! A ZooKeeper row's uncontended rounds: one session, warmed up once, its requests counted by
//! the server for that session alone.

use std::error::Error;

use zookeeper_client::Client;

use super::{prepare, ZooKeeperLock};
use crate::counts::session_requests;
use crate::row::Pending;
use crate::spin::{nothing, time_cycles};
use crate::uncontended::{Latency, Rounds};
use crate::{session, Bench, Plan};

/// The row's session and lock, and what its rounds measured.
pub struct Session<L> {
    client: Client,
    lock: L,
    /// µs per timed cycle, every round's.
    samples: Vec<f64>,
    /// Requests the session sent in the timed cycles.
    requests: u64,
}

impl<L: ZooKeeperLock> Session<L> {
    /// A session of its own with the lock at a path of its own, after `plan.warmup` cycles.
    pub async fn start(bench: &Bench<'_>) -> Result<Session<L>, Box<dyn Error>> {
        let client = session(bench.connect).await?;
        let path = format!("{}/uncontended/{}", bench.base, L::TAG);
        prepare(&client, &path).await;
        let mut lock = L::new(&client, &path);
        for _ in 0..bench.plan.warmup {
            lock.cycle(nothing()).await?;
        }
        Ok(Session { client, lock, samples: Vec::new(), requests: 0 })
    }
}

impl<L: ZooKeeperLock> Rounds for Session<L> {
    fn round<'a>(&'a mut self, bench: &'a Bench<'a>) -> Pending<'a, ()> {
        Box::pin(async move {
            let requests = || session_requests(bench.server, self.client.session_id().0).unwrap_or(0);
            let before = requests();
            let samples = time_cycles(&mut self.lock, 0, bench.plan.cycles).await?;
            self.samples.extend(samples);
            self.requests += requests().saturating_sub(before);
            Ok(())
        })
    }

    fn latency(&mut self, plan: &Plan) -> Latency {
        Latency::of_session(&mut self.samples, self.requests, plan)
    }

    fn note<'a>(&'a self, plan: &'a Plan) -> Pending<'a, Option<String>> {
        self.lock.note(plan)
    }
}
