//! A peer's uncontended rounds: each one runs the program's own warm-up and cycles on a session of
//! its own; requests are counted over the timed cycles alone.

use super::Peer;
use crate::row::Pending;
use crate::uncontended::{Latency, Rounds};
use crate::{percentile, Bench, Plan};

/// What each round's program printed, and the server's count.
pub struct ProgramRounds<'a> {
    peer: &'a Peer,
    p50_us: Vec<f64>,
    p99_us: Vec<f64>,
    /// Requests per timed cycle, server-wide.
    requests: Vec<f64>,
}

impl<'a> ProgramRounds<'a> {
    pub fn new(peer: &'a Peer) -> ProgramRounds<'a> {
        ProgramRounds { peer, p50_us: Vec::new(), p99_us: Vec::new(), requests: Vec::new() }
    }
}

impl Rounds for ProgramRounds<'_> {
    fn round<'a>(&'a mut self, bench: &'a Bench<'a>) -> Pending<'a, ()> {
        Box::pin(async move {
            let plan = bench.plan;
            let path = format!("{}/uncontended/{}", bench.base, self.peer.tag);
            let args = ["uncontended", &plan.cycles.to_string(), &plan.warmup.to_string()];
            let said = self.peer.converse(bench, &path, &args, "latencies_us", || ())?;
            let [p50, p99] = said.figures[..] else {
                return Err(format!("{}: unexpected output {:?}", self.peer.lock, said.figures).into());
            };
            self.requests.push(said.requests as f64 / plan.cycles as f64);
            self.p50_us.push(p50 as f64);
            self.p99_us.push(p99 as f64);
            Ok(())
        })
    }

    /// Medians of the rounds' p50, p99 and requests per cycle.
    fn latency(&mut self, _plan: &Plan) -> Latency {
        Latency {
            p50_us: percentile(&mut self.p50_us, 50.0),
            p99_us: percentile(&mut self.p99_us, 50.0),
            requests_per_cycle: percentile(&mut self.requests, 50.0),
            server_wide: true,
        }
    }
}
