//! A peer contended: its program runs `plan.sessions` threads with a session each.

use super::Peer;
use crate::contended::Contention;
use crate::{packets_received, Bench};

/// One contended run on the lock at `path`. The program prints each thread's acquisitions, then
/// its exclusion violations.
pub fn contend(peer: &Peer, bench: &Bench<'_>, path: &str) -> Result<Contention, String> {
    let plan = bench.plan;
    let before = packets_received(bench.server);
    let millis = plan.contended_for.as_millis().to_string();
    let numbers = peer.run(bench.connect, path, &["contended", &plan.sessions.to_string(), &millis])?;
    let (counts, violations) = numbers.split_at(numbers.len().saturating_sub(1));
    let counts: Vec<u64> = counts.iter().map(|&count| count as u64).collect();
    let total: u64 = counts.iter().sum();
    // Includes the program's sessions' connects and closes: a little above the per-acquisition cost.
    let requests_per_acquisition = packets_received(bench.server).saturating_sub(before) as f64 / total.max(1) as f64;
    Ok(Contention {
        counts,
        requests_per_acquisition,
        violations: violations.first().copied().unwrap_or(1) as u64,
        server_cpu_us: f64::NAN,
    })
}
