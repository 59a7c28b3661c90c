//! CPU time of a process, from `/proc/<pid>/stat`: benchmarks read the servers' share of the
//! machine with it (on a box with few cores, server CPU per operation bounds throughput).

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
    fn a_missing_process_has_none() {
        assert_eq!(cpu_time(u32::MAX), None);
    }
}
