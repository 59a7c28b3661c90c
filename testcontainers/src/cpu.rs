//! CPU time of a process (another one from `/proc/<pid>/stat`, this one from getrusage):
//! benchmarks read the servers' share of the machine and their own with it (on a box with few
//! cores, CPU per operation on either side bounds throughput).

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn our_own_cpu_time_is_read_and_grows() {
        let before = cpu_time(std::process::id()).expect("our own /proc/<pid>/stat");
        let started = std::time::Instant::now();
        let mut spin = 0u64;
        while started.elapsed() < Duration::from_millis(200) {
            spin = std::hint::black_box(spin.wrapping_add(1));
        }
        assert!(cpu_time(std::process::id()).unwrap() > before, "200 ms of spinning must show");
    }

    #[test]
    fn our_own_cpu_time_by_getrusage_grows() {
        let before = own_cpu_time();
        let started = std::time::Instant::now();
        let mut spin = 0u64;
        while started.elapsed() < Duration::from_millis(50) {
            spin = std::hint::black_box(spin.wrapping_add(1));
        }
        assert!(own_cpu_time() > before, "50 ms of spinning must show");
    }

    #[test]
    fn a_missing_process_has_none() {
        assert_eq!(cpu_time(u32::MAX), None);
    }
}
