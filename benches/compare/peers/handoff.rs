//! A peer's handoff, inside its program: its own holder and `plan.waiters` clients in one
//! process, so that one clock times every handoff. The program says `queued` once all are
//! queued and waits; we read the watchers from `wchp` then (as for our rows, before the
//! release) and tell it to go; it releases and prints `handoff_us P50 P99`.

use super::Peer;
use crate::handoff::{most_watchers_per_node, Handoff};
use crate::Bench;

/// One handoff run on the lock at `path`.
pub fn handoff(peer: &Peer, bench: &Bench<'_>, path: &str) -> Result<Handoff, String> {
    let mut watchers_per_node = 0;
    let args = ["handoff", &bench.plan.waiters.to_string()];
    let figures = peer
        .converse(bench, path, &args, "handoff_us", || watchers_per_node = most_watchers_per_node(bench, path))?
        .figures;
    let [p50, p99] = figures[..] else {
        return Err(format!("{}: unexpected handoff output {figures:?}", peer.full_name("")));
    };
    Ok(Handoff {
        p50_us: p50 as f64,
        p99_us: p99 as f64,
        watchers_per_node,
        client_cpu_us: f64::NAN,
        server_cpu_us: f64::NAN,
    })
}
