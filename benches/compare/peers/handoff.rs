//! A peer's handoff, inside its program: its own holder and `plan.waiters` clients in one
//! process, so that one clock times every handoff. The program says `queued` once all are
//! queued and waits; we read the watchers from `wchp` then (as for our rows, before the
//! release) and tell it to go; it releases and prints `handoff_us P50 P99`.

use std::error::Error;
use std::io::{BufRead, BufReader, Read, Write};

use super::{numbers, Peer};
use crate::handoff::{most_watchers_per_node, Handoff};
use crate::Bench;

/// One handoff run on the lock at `path`.
pub fn handoff(peer: &Peer, bench: &Bench<'_>, path: &str) -> Result<Handoff, Box<dyn Error>> {
    let mut child = peer.spawn(bench.connect, path, &["handoff", &bench.plan.waiters.to_string()])?;
    // Drained all along: a program that logs a lot must not block on a full pipe.
    let mut stderr = child.stderr.take().ok_or("no stderr")?;
    let errors = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let mut stdin = child.stdin.take().ok_or("no stdin")?;
    let mut lines = BufReader::new(child.stdout.take().ok_or("no stdout")?).lines();
    let mut watchers_per_node = 0;
    let mut figures = Vec::new();
    for line in &mut lines {
        let line = line?;
        if line == "queued" {
            watchers_per_node = most_watchers_per_node(bench, path);
            writeln!(stdin, "go")?;
        } else if line.starts_with("handoff_us") {
            figures = numbers(&line);
        }
    }
    let status = child.wait()?;
    let errors = errors.join().unwrap_or_default();
    match figures[..] {
        [p50, p99] if status.success() => Ok(Handoff {
            p50_us: p50 as f64,
            p99_us: p99 as f64,
            watchers_per_node,
            client_cpu_us: f64::NAN,
            server_cpu_us: f64::NAN,
        }),
        _ => Err(format!("{} handoff failed ({status}): {errors}", peer.full_name("")).into()),
    }
}
