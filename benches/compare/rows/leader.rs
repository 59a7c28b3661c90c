//! The zklock failover rows: `LeaderLatch` and `LeaderSelector`, in this process.

use std::error::Error;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::Notify;
use zklock::{LeaderLatch, LeaderSelector};
use zookeeper_client::Client;

use crate::election::{Candidates, Told};

fn participant(slot: usize) -> String {
    format!("participant-{slot}")
}

/// Latches, a session each: the leader closes its latch, and a new latch on its session joins
/// at the back (`start` returns once its node is queued).
pub struct Latches {
    clients: Vec<Client>,
    path: String,
    latches: Vec<Arc<LeaderLatch>>,
    told: Told,
}

impl Latches {
    /// A started latch in `slot`, with a task that tells when its `await_leadership` returns.
    async fn join_at(&self, slot: usize) -> Result<Arc<LeaderLatch>, Box<dyn Error>> {
        let latch = Arc::new(LeaderLatch::new(&self.clients[slot], &self.path, &participant(slot))?);
        latch.start().await?;
        let (waiting, sender) = (Arc::clone(&latch), self.told.sender());
        tokio::spawn(async move {
            // Err once the latch is closed before it leads: only at the end.
            if waiting.await_leadership().await.is_ok() {
                let _ = sender.send((slot, Instant::now()));
            }
        });
        Ok(latch)
    }
}

impl Candidates for Latches {
    const NAME: &'static str = "zklock LeaderLatch, close + a new latch";
    const TAG: &'static str = "zklock-latch";

    async fn join(clients: &[Client], path: &str) -> Result<Latches, Box<dyn Error>> {
        let mut latches =
            Latches { clients: clients.to_vec(), path: path.to_owned(), latches: Vec::new(), told: Told::default() };
        for slot in 0..clients.len() {
            let latch = latches.join_at(slot).await?;
            latches.latches.push(latch);
        }
        latches.told.next(Instant::now()).await?;
        Ok(latches)
    }

    async fn term(&mut self) -> Result<Duration, Box<dyn Error>> {
        let (gave_up, leader) = (Instant::now(), self.told.leader());
        self.latches[leader].close().await?;
        self.latches[leader] = self.join_at(leader).await?;
        self.told.next(gave_up).await
    }

    async fn leave(self) -> Result<(), Box<dyn Error>> {
        for latch in &self.latches {
            latch.close().await?;
        }
        Ok(())
    }
}

/// Selectors with auto-requeue, a session each: the leader's term ends when its work returns
/// (told to by the benchmark), and the selector queues again by itself.
pub struct Selectors {
    selectors: Vec<LeaderSelector>,
    give_up: Vec<Arc<Notify>>,
    told: Told,
}

impl Candidates for Selectors {
    const NAME: &'static str = "zklock LeaderSelector, auto-requeue, term ends";
    const TAG: &'static str = "zklock-selector";

    async fn join(clients: &[Client], path: &str) -> Result<Selectors, Box<dyn Error>> {
        let mut selectors = Selectors { selectors: Vec::new(), give_up: Vec::new(), told: Told::default() };
        for (slot, client) in clients.iter().enumerate() {
            let selector = LeaderSelector::builder(client, path, &participant(slot)).auto_requeue(true).build()?;
            let (give_up, sender) = (Arc::new(Notify::new()), selectors.told.sender());
            let told_to_stop = Arc::clone(&give_up);
            selector
                .start(move |_leadership| {
                    let (sender, told_to_stop) = (sender.clone(), Arc::clone(&told_to_stop));
                    async move {
                        let _ = sender.send((slot, Instant::now()));
                        told_to_stop.notified().await;
                    }
                })
                .await?;
            selectors.selectors.push(selector);
            selectors.give_up.push(give_up);
        }
        selectors.told.next(Instant::now()).await?;
        Ok(selectors)
    }

    async fn term(&mut self) -> Result<Duration, Box<dyn Error>> {
        let gave_up = Instant::now();
        // A permit, if the leader's work has not reached its wait yet.
        self.give_up[self.told.leader()].notify_one();
        self.told.next(gave_up).await
    }

    async fn leave(self) -> Result<(), Box<dyn Error>> {
        for selector in &self.selectors {
            selector.close().await?;
        }
        Ok(())
    }
}
