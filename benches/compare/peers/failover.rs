//! A peer's failover, inside its program: `plan.participants` clients in one election, each
//! with its own thread waiting to be told it leads, so that one clock times every term. The
//! program runs its untimed terms, says `ready`, runs the timed ones and prints
//! `failover_us P50 P99`.

use super::Peer;
use crate::failover::Failover;
use crate::Bench;

/// One failover run of the election at `path`.
pub fn failover(peer: &Peer, bench: &Bench<'_>, path: &str) -> Result<Failover, String> {
    let plan = bench.plan;
    let (participants, terms) = (plan.participants.to_string(), plan.failovers.to_string());
    let args = ["failover", &participants, &terms, &plan.failover_warmup.to_string()];
    let said = peer.converse(bench, path, &args, "failover_us", || ())?;
    let [p50, p99] = said.figures[..] else {
        return Err(format!("{}: unexpected failover output {:?}", peer.election, said.figures));
    };
    Ok(Failover {
        p50_us: p50 as f64,
        p99_us: p99 as f64,
        requests_per_term: said.requests as f64 / plan.failovers.max(1) as f64,
    })
}
