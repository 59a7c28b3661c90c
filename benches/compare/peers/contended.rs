//! A peer contended: its program runs `plan.sessions` threads with a session each, untimed for
//! `plan.contended_warmup`, then timed, each timed hold appended to the run's record and lasting
//! [`HOLD`].

use super::Peer;
use crate::contended::Contention;
use crate::exclusion::{Record, HOLD};
use crate::Bench;

/// One contended run on the lock at `path`. The program prints each thread's timed acquisitions.
pub fn contend(peer: &Peer, bench: &Bench<'_>, path: &str, record: &Record) -> Result<Contention, String> {
    let plan = bench.plan;
    let (sessions, millis) = (plan.sessions.to_string(), plan.contended_for.as_millis().to_string());
    let warmup = plan.contended_warmup.as_millis().to_string();
    let record = record.path().to_str().ok_or("the record's path is not UTF-8")?;
    let hold = HOLD.as_micros().to_string();
    let args = ["contended", &sessions, &millis, &warmup, record, &hold];
    let said = peer.converse(bench, path, &args, "counts", || ())?;
    Ok(Contention::new(said.figures.iter().map(|&count| count as u64).collect(), said.requests))
}
