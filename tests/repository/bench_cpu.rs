//! The benchmarks' CPU meters (`benches/compare/cpu.rs`), tested where CI runs tests: another
//! process's CPU time from `/proc`, this one's from getrusage, both growing as it spins.

#[allow(dead_code)] // the benchmarks use the rest
#[path = "../../benches/compare/cpu.rs"]
mod cpu;

use std::time::{Duration, Instant};

use cpu::{cpu_time, own_cpu_time};

/// Spins this thread for `spell`.
fn spin(spell: Duration) {
    let started = Instant::now();
    let mut spin = 0u64;
    while started.elapsed() < spell {
        spin = std::hint::black_box(spin.wrapping_add(1));
    }
}

#[test]
fn our_own_cpu_time_is_read_from_proc_and_grows() {
    let before = cpu_time(std::process::id()).expect("our own /proc/<pid>/stat");
    spin(Duration::from_millis(200));
    assert!(cpu_time(std::process::id()).unwrap() > before, "200 ms of spinning must show");
}

#[test]
fn our_own_cpu_time_by_getrusage_grows() {
    let before = own_cpu_time();
    spin(Duration::from_millis(50));
    assert!(own_cpu_time() > before, "50 ms of spinning must show");
}

#[test]
fn a_missing_process_has_none() {
    assert_eq!(cpu_time(u32::MAX), None);
}
