//! A signal ignored when zklock starts stays ignored: `nohup zklock ...` survives the terminal's
//! SIGHUP, and `sh -c 'zklock ... & wait'` (whose background jobs ignore SIGINT) a Ctrl-C; the
//! signal is neither acted on nor passed on, and the command inherits it ignored.

use crate::common;
use crate::support;

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::process::Stdio;
use std::time::Duration;

use common::{server, unique_path};
use support::{zklock, Group};

/// The command prints the signals it ignores (SigIgn, a hex mask), then runs a little while.
const COMMAND: &str = "grep SigIgn /proc/self/status; sleep 3";

#[test]
fn a_signal_ignored_at_start_is_neither_acted_on_nor_passed_on() {
    for (name, number) in [("SIGHUP under nohup", libc::SIGHUP), ("SIGINT in a shell's background", libc::SIGINT)] {
        let path = unique_path("cli-ignored");
        let mut command = zklock(&server().connect_string());
        command.args([&path, "--", "sh", "-c", COMMAND]).stdout(Stdio::piped());
        // SAFETY: signal() is async-signal-safe, as pre_exec requires.
        unsafe {
            command.pre_exec(move || {
                libc::signal(number, libc::SIG_IGN);
                Ok(())
            });
        }
        let mut zklock = Group::spawn(&mut command);
        let mut line = String::new();
        BufReader::new(zklock.0.stdout.as_mut().unwrap()).read_line(&mut line).unwrap();
        let mask = u64::from_str_radix(line.trim().trim_start_matches("SigIgn:").trim(), 16).unwrap();
        assert_ne!(mask & (1 << (number - 1)), 0, "{name}: the command does not inherit it ignored: {line}");
        // SAFETY: kill on the child we started and have not reaped.
        unsafe { libc::kill(zklock.0.id() as libc::pid_t, number) };
        let status = zklock.wait(Duration::from_secs(30));
        assert_eq!(status.code(), Some(0), "{name}: zklock acted on it or passed it on");
    }
}
