//! A peer's tasks: its program runs [`Layout`]'s threads, each session's threads sharing one
//! lock object, untimed for `plan.contended_warmup`, then timed, each hold recorded with nothing
//! inside but a yield.

use super::Peer;
use crate::cohort::{CohortRun, Layout};
use crate::exclusion::Record;
use crate::Bench;

/// One run of `layout` on the lock at `path`. The program prints its acquisitions, the p50 and
/// p99 of every wait, and the longest wait of the other process's thread (µs).
pub fn contend(
    peer: &Peer,
    bench: &Bench<'_>,
    path: &str,
    layout: Layout,
    record: &Record,
) -> Result<CohortRun, String> {
    let plan = bench.plan;
    let (sessions, tasks, lone) =
        (layout.sessions.to_string(), layout.tasks.to_string(), u8::from(layout.lone).to_string());
    let (millis, warmup) = (plan.contended_for.as_millis().to_string(), plan.contended_warmup.as_millis().to_string());
    let record = record.path().to_str().ok_or("the record's path is not UTF-8")?;
    let args = ["cohort", &sessions, &tasks, &lone, &millis, &warmup, record];
    let said = peer.converse(bench, path, &args, "cohort", || ())?;
    let &[acquisitions, p50, p99, longest_other] = &said.figures[..] else {
        return Err(format!("{}: expected 4 figures, got {:?}", peer.lock, said.figures));
    };
    Ok(CohortRun {
        acquisitions: acquisitions as u64,
        requests: said.requests,
        wait_p50_us: p50 as f64,
        wait_p99_us: p99 as f64,
        longest_other_us: longest_other as f64,
        violations: 0,
    })
}
