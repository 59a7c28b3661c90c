//! What a lock costs the server it runs on, in CPU per operation (this 2-core machine is
//! CPU-bound, so server CPU per acquisition bounds contended throughput).

use std::time::Duration;

use zklock_testcontainers::{cpu_time, own_cpu_time};

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
