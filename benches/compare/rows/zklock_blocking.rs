//! `zklock::blocking::InterProcessMutex` on a thread of its own, as a synchronous program calls
//! it: what the blocking API costs beside the async row (uncontended only; the goal is within
//! 5% of the async p50). Its cycles are timed on that thread, so the table holds the API's cost
//! and not a hop between threads.

use std::error::Error;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use tokio::sync::oneshot;
use zklock::blocking;
use zookeeper_client::Client;

use crate::counts::session_requests;
use crate::row::{Part, Pending, Row, Scenario};
use crate::uncontended::{Latency, Rounds};
use crate::zookeeper::prepare;
use crate::{Bench, Plan};

pub struct BlockingMutex;

const TAG: &str = "zklock-blocking";

impl Row for BlockingMutex {
    fn name(&self) -> &str {
        "zklock::blocking InterProcessMutex"
    }

    fn tag(&self) -> &str {
        TAG
    }

    fn part(&self, scenario: Scenario) -> Part {
        match scenario {
            Scenario::Uncontended => Part::Runs,
            _ => Part::NoLine,
        }
    }

    fn uncontended<'a>(&'a self, bench: &'a Bench<'a>) -> Pending<'a, Box<dyn Rounds + 'a>> {
        Box::pin(async move { Ok(Box::new(Worker::start(bench).await?) as Box<dyn Rounds>) })
    }
}

/// One round's order to the worker: this many timed cycles, their µs sent back.
type Order = (usize, oneshot::Sender<Result<Vec<f64>, String>>);

/// The thread that owns the blocking session and lock, and what its rounds measured.
struct Worker {
    session_id: i64,
    orders: mpsc::Sender<Order>,
    samples: Vec<f64>,
    requests: u64,
}

impl Worker {
    /// A session of its own (connected through the blocking API, so it runs on zklock's runtime
    /// thread), its lock at a path of its own, warmed up.
    async fn start(bench: &Bench<'_>) -> Result<Worker, Box<dyn Error>> {
        let (connect, path, warmup) =
            (bench.connect.to_owned(), format!("{}/uncontended/{TAG}", bench.base), bench.plan.warmup);
        let (ready, started) = oneshot::channel::<Result<i64, String>>();
        let (orders, ordered) = mpsc::channel::<Order>();
        std::thread::Builder::new().name("bench-blocking".into()).spawn(move || {
            let start = || -> Result<(i64, blocking::InterProcessMutex), String> {
                let connecting = Client::connector().with_session_timeout(Duration::from_secs(30)).connect(&connect);
                let client = blocking::run(connecting).map_err(|e| e.to_string())?.map_err(|e| e.to_string())?;
                blocking::run(prepare(&client, &path)).map_err(|e| e.to_string())?;
                let mutex = blocking::InterProcessMutex::new(&client, &path).map_err(|e| e.to_string())?;
                for _ in 0..warmup {
                    cycle(&mutex)?;
                }
                Ok((client.session_id().0, mutex))
            };
            let mutex = match start() {
                Ok((session_id, mutex)) => {
                    let _ = ready.send(Ok(session_id));
                    mutex
                }
                Err(why) => return drop(ready.send(Err(why))),
            };
            // Until the row is dropped.
            for (cycles, reply) in ordered {
                let timed = (0..cycles)
                    .map(|_| {
                        let began = Instant::now();
                        cycle(&mutex).map(|()| began.elapsed().as_secs_f64() * 1e6)
                    })
                    .collect();
                let _ = reply.send(timed);
            }
        })?;
        let session_id = started.await??;
        Ok(Worker { session_id, orders, samples: Vec::new(), requests: 0 })
    }
}

/// One acquire+release, blocking.
fn cycle(mutex: &blocking::InterProcessMutex) -> Result<(), String> {
    mutex.acquire().map_err(|e| e.to_string())?.release().map_err(|e| e.to_string())
}

impl Rounds for Worker {
    fn round<'a>(&'a mut self, bench: &'a Bench<'a>) -> Pending<'a, ()> {
        Box::pin(async move {
            let requests = || session_requests(bench.server, self.session_id).unwrap_or(0);
            let before = requests();
            let (reply, timed) = oneshot::channel();
            self.orders.send((bench.plan.cycles, reply)).map_err(|_| "the blocking row's thread is gone")?;
            self.samples.extend(timed.await??);
            self.requests += requests().saturating_sub(before);
            Ok(())
        })
    }

    fn latency(&mut self, plan: &Plan) -> Latency {
        Latency::of_session(&mut self.samples, self.requests, plan)
    }
}
