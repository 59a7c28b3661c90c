//! A busy server: background sessions writing at a fixed rate to a path no row uses, from before
//! each measured phase until after it, the same for every row. The writes are spread over a few
//! sessions and bounded in flight, so that a server slowed by the row under test still gets them
//! at the same rate, and a stalled one is not flooded.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::Semaphore;
use tokio::task::JoinHandle;
use tokio::time::MissedTickBehavior;
use zookeeper_client::{Acls, Client, CreateMode};

use crate::counts::session_requests;
use crate::session;

/// Writes in flight at most, over all sessions.
const IN_FLIGHT: usize = 32;

/// The writing sessions, idle between phases.
pub struct Busy {
    clients: Vec<Client>,
    path: String,
    per_second: u32,
    server: SocketAddr,
    written: Arc<AtomicU64>,
    /// Time spent writing and writes done over every phase, for the rate achieved.
    writing: std::sync::Mutex<(Duration, u64)>,
}

/// The load of one phase; [`Load::stop`] ends it.
pub struct Load<'a> {
    busy: &'a Busy,
    ticker: JoinHandle<()>,
    slots: Arc<Semaphore>,
    started: Instant,
    written_before: u64,
}

impl Busy {
    /// Connects `sessions` sessions and creates the node they will write, `path`.
    pub async fn connect(
        connect: &str,
        server: SocketAddr,
        path: &str,
        sessions: usize,
        per_second: u32,
    ) -> Result<Busy, String> {
        let mut clients = Vec::with_capacity(sessions);
        for _ in 0..sessions {
            clients.push(session(connect).await.map_err(|e| format!("busy session: {e}"))?);
        }
        let options = CreateMode::Persistent.with_acls(Acls::anyone_all());
        match clients[0].create(path, b"", &options).await {
            Ok(_) | Err(zookeeper_client::Error::NodeExists) => {}
            Err(e) => return Err(format!("create {path}: {e}")),
        }
        Ok(Busy {
            clients,
            path: path.to_owned(),
            per_second,
            server,
            written: Arc::default(),
            writing: Default::default(),
        })
    }

    /// What the tables say about the load.
    pub fn describe(&self) -> String {
        let (rate, path, sessions) = (self.per_second, &self.path, self.clients.len());
        format!("{rate} setData/s of 100 bytes to {path} from {sessions} background sessions, at most {IN_FLIGHT} in flight")
    }

    /// The rate of the writes since the last call, over the time they were running.
    pub fn achieved(&self) -> String {
        let (time, writes) = std::mem::take(&mut *self.writing.lock().unwrap());
        format!("{writes} setData in {:.1} s of load, {:.0}/s", time.as_secs_f64(), writes as f64 / time.as_secs_f64())
    }

    /// Starts writing.
    pub fn start(&self) -> Load<'_> {
        let slots = Arc::new(Semaphore::new(IN_FLIGHT));
        let (clients, path, written, tick_slots) =
            (self.clients.clone(), self.path.clone(), self.written.clone(), slots.clone());
        let period = Duration::from_secs(1) / self.per_second;
        let ticker = tokio::spawn(async move {
            let mut ticks = tokio::time::interval(period);
            // A late tick is made up at once, so the rate holds on average, but never more
            // than IN_FLIGHT writes at a time.
            ticks.set_missed_tick_behavior(MissedTickBehavior::Burst);
            let data = [b'x'; 100];
            for turn in 0.. {
                ticks.tick().await;
                let Ok(slot) = tick_slots.clone().acquire_owned().await else { return };
                let client = clients[turn % clients.len()].clone();
                let (path, written) = (path.clone(), written.clone());
                tokio::spawn(async move {
                    if client.set_data(&path, &data, None).await.is_ok() {
                        written.fetch_add(1, Ordering::Relaxed);
                    }
                    drop(slot);
                });
            }
        });
        Load {
            busy: self,
            ticker,
            slots,
            started: Instant::now(),
            written_before: self.written.load(Ordering::Relaxed),
        }
    }

    /// Requests the server has had from the writing sessions (pings too), to take off the
    /// server-wide counts.
    pub fn requests(&self) -> u64 {
        self.clients.iter().filter_map(|client| session_requests(self.server, client.session_id().0)).sum()
    }
}

impl Load<'_> {
    /// Stops writing and waits for the writes in flight.
    pub async fn stop(self) {
        self.ticker.abort();
        let _ = self.ticker.await;
        let _ = self.slots.acquire_many(IN_FLIGHT as u32).await;
        let writes = self.busy.written.load(Ordering::Relaxed) - self.written_before;
        let mut writing = self.busy.writing.lock().unwrap();
        writing.0 += self.started.elapsed();
        writing.1 += writes;
    }
}
