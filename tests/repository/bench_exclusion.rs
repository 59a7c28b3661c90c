//! The comparison benchmark's exclusion check (`benches/compare/exclusion.rs`), tested where CI
//! runs tests: it must fail a log in which a holder entered while another was inside, and its
//! holds must last long enough that a second holder let in by a broken lock, once the first
//! has entered, lands inside the first's hold.

#[allow(dead_code)] // the benchmark uses the rest
#[path = "../../benches/compare/exclusion.rs"]
mod exclusion;

use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use exclusion::{check, Record, Verdict};

#[test]
fn the_check_fails_a_log_with_an_enter_inside_another_hold() {
    let overlapping = "a +\nb +\na -\nb -\na +\na -\n";
    assert_eq!(check(overlapping), Ok(Verdict { holds: 3, violations: 1 }));
    let in_turns = "a +\na -\nb +\nb -\na +\na -\n";
    assert_eq!(check(in_turns), Ok(Verdict { holds: 3, violations: 0 }));
    assert!(check("a +\nb -\n").is_err(), "an exit without its enter");
    assert!(check("a +\n").is_err(), "a holder still inside at the end");
}

#[test]
fn a_second_holder_let_in_once_the_first_has_entered_is_caught() {
    const ROUNDS: u64 = 40;
    let record = Record::create("self-test").unwrap();
    let runtime = || tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
    for round in 0..ROUNDS {
        let (first, second) = (record.writer().unwrap(), record.writer().unwrap());
        let path = record.path().to_owned();
        // Every round writes four records of equal length; the first's enter makes it longer.
        let before = std::fs::metadata(&path).unwrap().len();
        let ready = Arc::new(Barrier::new(2));
        let let_in = std::thread::spawn({
            let ready = Arc::clone(&ready);
            move || {
                let runtime = runtime();
                ready.wait();
                // A broken lock lets the second holder (another thread, its own file handle, as
                // another process would be) in once the first has entered.
                let give_up = Instant::now() + Duration::from_secs(5);
                while std::fs::metadata(&path).unwrap().len() == before && Instant::now() < give_up {
                    std::hint::spin_loop();
                }
                runtime.block_on(second.hold(&format!("second-{round}")))
            }
        });
        let runtime = runtime();
        // The second holder is watching before the first enters.
        ready.wait();
        runtime.block_on(first.hold(&format!("first-{round}"))).unwrap();
        let_in.join().unwrap().unwrap();
    }
    let verdict = record.verdict().unwrap();
    assert_eq!(verdict.holds, 2 * ROUNDS);
    // Every round is an overlap (40 of 40 caught here); a thread preempted for a whole hold on
    // a loaded machine may miss one now and then. A hold that only yielded caught 0 to 17.
    assert!(verdict.violations >= ROUNDS * 3 / 4, "only {} of {ROUNDS} overlaps caught", verdict.violations);
}
