//! What a lock costs the server it runs on, in CPU per operation (this 2-core machine is
//! CPU-bound, so server CPU per acquisition bounds contended throughput).

use std::time::Duration;

use zklock_testcontainers::cpu_time;

/// Measures the CPU time process `pid` spends from [`CpuMeter::start`] on.
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
