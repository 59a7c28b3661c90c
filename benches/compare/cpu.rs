//! CPU time of a process, from `/proc/<pid>/stat`: what a lock costs the server it runs on
//! (this 2-core machine is CPU-bound, so server CPU per acquisition bounds contended throughput).

use std::time::Duration;

/// The user + system CPU time `pid` has used so far (all its threads), or `None` when it cannot
/// be read (no such process, or no `/proc`).
pub fn cpu_time(pid: u32) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces: count from after it.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the whole line, 12 and 13 after the name.
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    // SAFETY: sysconf has no preconditions.
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    (per_second > 0).then(|| Duration::from_secs_f64(ticks as f64 / per_second as f64))
}

/// Measures the CPU time `pid` spends while `work` runs.
pub struct CpuMeter {
    pid: Option<u32>,
    start: Option<Duration>,
}

impl CpuMeter {
    pub fn start(pid: Option<u32>) -> CpuMeter {
        CpuMeter { pid, start: pid.and_then(cpu_time) }
    }

    /// µs of CPU per `operations` since [`CpuMeter::start`]; NaN when unknown.
    pub fn per_operation_us(&self, operations: u64) -> f64 {
        match (self.pid.and_then(cpu_time), self.start) {
            (Some(end), Some(start)) if operations > 0 => (end - start).as_secs_f64() * 1e6 / operations as f64,
            _ => f64::NAN,
        }
    }
}
