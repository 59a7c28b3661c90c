//! What a lock costs the server it runs on, in CPU per operation (this 2-core machine is
//! CPU-bound, so server CPU per acquisition bounds contended throughput): another process's CPU
//! time from `/proc/<pid>/stat`, this one's from getrusage. `benches/uncontended.rs` reads them
//! too, and `tests/repository/bench_cpu.rs` tests them.

use std::time::Duration;

/// The user + system CPU time process `pid` has used so far (all its threads), or `None` when it
/// cannot be read (no such process, or no `/proc`).
pub fn cpu_time(pid: u32) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces: count from after it.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the line, 12th and 13th after the name.
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    // SAFETY: sysconf has no preconditions.
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    (per_second > 0).then(|| Duration::from_secs_f64(ticks as f64 / per_second as f64))
}

/// This process's user + system CPU time, every thread, to the microsecond (getrusage).
pub fn own_cpu_time() -> Duration {
    // SAFETY: getrusage fills the struct we pass; all-zero is a valid rusage.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let time = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1_000);
    time(usage.ru_utime) + time(usage.ru_stime)
}

/// Measures the CPU time a process spends from [`CpuMeter::start`] on: another process by its
/// id (from `/proc`, in clock ticks), or this one (`None`, from getrusage, in microseconds).
pub struct CpuMeter {
    whose: Whose,
    start: Option<Duration>,
}

#[derive(Clone, Copy)]
enum Whose {
    Other(Option<u32>),
    Own,
}

impl Whose {
    fn cpu_time(self) -> Option<Duration> {
        match self {
            Whose::Other(pid) => pid.and_then(cpu_time),
            Whose::Own => Some(own_cpu_time()),
        }
    }
}

impl CpuMeter {
    /// The CPU of process `pid` (nothing is measured when `None`).
    pub fn start(pid: Option<u32>) -> CpuMeter {
        CpuMeter { whose: Whose::Other(pid), start: pid.and_then(cpu_time) }
    }

    /// This process's CPU, every thread.
    pub fn start_own() -> CpuMeter {
        CpuMeter { whose: Whose::Own, start: Some(own_cpu_time()) }
    }

    /// µs of CPU per `operations` since [`CpuMeter::start`]; NaN when unknown.
    pub fn per_operation_us(&self, operations: u64) -> f64 {
        match (self.whose.cpu_time(), self.start) {
            (Some(end), Some(start)) if operations > 0 => (end - start).as_secs_f64() * 1e6 / operations as f64,
            _ => f64::NAN,
        }
    }
}
