//! `zklock-history FILE...`: checks lock histories, one JSON event a line (the format is
//! `zklock_testcontainers::history`'s), for mutual exclusion, rising fencing tokens, fenced
//! writes that refuse stale tokens, and holds that begin after their acquire's invoke (for
//! writers that record invokes). The files of one run are read as one history.
//!
//! Exit status: 0 when no rule broke, 1 when one did (each printed on a line of its own), 64 for
//! no file given, 66 for a file that cannot be read or a line that is not an event.

use std::process::ExitCode;

use zklock_testcontainers::history::{check, Event};

fn main() -> ExitCode {
    let files: Vec<String> = std::env::args().skip(1).collect();
    if files.is_empty() || files.iter().any(|file| file == "-h" || file == "--help") {
        eprintln!("usage: zklock-history FILE... (one JSON event a line; see zklock_testcontainers::history)");
        return ExitCode::from(64);
    }
    let mut events = Vec::new();
    for file in &files {
        let text = match std::fs::read_to_string(file) {
            Ok(text) => text,
            Err(err) => {
                eprintln!("zklock-history: {file}: {err}");
                return ExitCode::from(66);
            }
        };
        for (number, line) in text.lines().enumerate().filter(|(_, line)| !line.trim().is_empty()) {
            match Event::from_line(line) {
                Ok(event) => events.push(event),
                Err(err) => {
                    eprintln!("zklock-history: {file}:{}: {err}", number + 1);
                    return ExitCode::from(66);
                }
            }
        }
    }
    let report = check(&events);
    for violation in &report.violations {
        println!("{violation}");
    }
    println!(
        "zklock-history: {} events, {} invokes, {} holds, {} fenced writes, {} violations",
        events.len(),
        report.invokes,
        report.holds,
        report.writes,
        report.violations.len()
    );
    if report.violations.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
