//! What cron would mail: zklock says on stderr only what a person needs to read, in a form a
//! person reads (durations rounded, no colour when NO_COLOR asks), and can say nothing at all.

use crate::common;
use crate::support;

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::Duration;

use common::{server, unique_path};
use support::{zklock, Group};
use zklock_testcontainers::Proxy;

/// Whether `text` has a number with more than three decimals, as `3.333333333s`.
fn has_long_fraction(text: &str) -> bool {
    text.split('.').skip(1).any(|after| after.bytes().take_while(u8::is_ascii_digit).count() > 3)
}

/// A hold cut off from ZooKeeper says how long it was disconnected as a person reads it (`1.3s`
/// of a 4 s session), not as `1.333333333s`, and that this counts from when the connection was
/// found gone, which a silent one takes up to 2/5 of the session (1.6s) to show (issue 48: the
/// message said 3.3s after 7.8s of silence).
#[test]
fn a_loss_says_how_long_in_rounded_units() {
    let path = unique_path("quiet-rounded");
    let proxy = Proxy::start(server().address()).unwrap();
    let mut holder = Group::spawn(
        zklock(&proxy.connect_string()).args(["hold", &path]).stdout(Stdio::piped()).stderr(Stdio::piped()),
    );
    let mut line = String::new();
    BufReader::new(holder.0.stdout.as_mut().unwrap()).read_line(&mut line).unwrap();
    assert!(!line.is_empty(), "held");
    proxy.cut();
    assert_eq!(holder.wait(Duration::from_secs(30)).code(), Some(support::LOST));
    let stderr = holder.stderr();
    assert!(stderr.contains("cut off from ZooKeeper for "), "{stderr}");
    assert!(stderr.contains("since the connection was found gone, after up to 1.6s without an answer"), "{stderr}");
    assert!(!has_long_fraction(&stderr), "{stderr}");
}

/// What cron would mail on every run of `zklock -n` whose lock is busy, and of a session timeout
/// the server changed: nothing with --quiet, nothing when -E 0 makes busy a success; the exit
/// code still tells. Without them, each is said.
#[test]
fn quiet_and_a_successful_busy_code_say_nothing_the_exit_code_tells() {
    let zk = server().connect_string();
    let path = unique_path("quiet-busy");
    let (_holder, _) = support::hold(&zk, &[], &path);
    let busy = |options: &[&str]| zklock(&zk).args(options).args(["-n", &path, "--", "true"]).output().unwrap();
    let said = busy(&[]);
    assert_eq!(said.status.code(), Some(support::TIMED_OUT), "{said:?}");
    assert!(!said.stderr.is_empty(), "busy is said by default");
    for (options, code) in [(&["--quiet"][..], support::TIMED_OUT), (&["-q"], support::TIMED_OUT), (&["-E", "0"], 0)] {
        let output = busy(options);
        assert_eq!(output.status.code(), Some(code), "{options:?}: {output:?}");
        assert_eq!(String::from_utf8_lossy(&output.stderr), "", "{options:?}");
    }
    // The test server grants at most 60 s.
    let listing = |quiet: &[&str]| {
        let mut command = support::bare_zklock();
        command.args(["--zk", &zk, "--session-timeout", "90s", "list"]).args(quiet).arg(&path).output().unwrap()
    };
    let said = listing(&[]);
    assert!(String::from_utf8_lossy(&said.stderr).contains("granted a session timeout of 1m"), "{said:?}");
    let quiet = listing(&["-q"]);
    assert!(quiet.status.success(), "{quiet:?}");
    assert_eq!(String::from_utf8_lossy(&quiet.stderr), "", "--quiet");
}

/// Out of reach past the session timeout, `hold --retake` cannot connect a new session until
/// ZooKeeper is back: it says so once, with the reason, and calls it no expiry, which it cannot
/// know happened (the client gives up on its own); then it holds again.
#[test]
fn an_outage_is_said_as_what_happened_once() {
    let path = unique_path("quiet-outage");
    let proxy = Proxy::start(server().address()).unwrap();
    // Its stderr in a file, read while it runs: the cut lasts until it has said so.
    let log = std::env::temp_dir().join(format!("zklock-{}.stderr", path.replace('/', "_")));
    let mut holder = Group::spawn(
        zklock(&proxy.connect_string())
            .args(["hold", "--retake", &path])
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&log).unwrap()),
    );
    let mut stdout = BufReader::new(holder.0.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    proxy.cut();
    // Past the 4 s session and the client's own give-up, with new sessions refused meanwhile:
    // until zklock says it cannot have a new one.
    support::until("zklock said it cannot have a new session", || {
        std::fs::read_to_string(&log).unwrap_or_default().contains("no new one can be had yet")
    });
    proxy.heal();
    line.clear();
    stdout.read_line(&mut line).unwrap();
    assert!(!line.is_empty(), "held again");
    holder.signal_job(libc::SIGTERM);
    holder.wait(Duration::from_secs(20));
    let stderr = std::fs::read_to_string(&log).unwrap();
    let _ = std::fs::remove_file(&log);
    assert!(!stderr.contains("expiry"), "{stderr}");
    assert_eq!(stderr.matches("no new one can be had yet").count(), 1, "{stderr}");
}

/// On a terminal, zklock's log lines (-v) are coloured, unless NO_COLOR is set (no-color.org);
/// so is --help's text.
#[test]
fn no_color_leaves_a_terminal_uncoloured() {
    let zk = server().connect_string();
    let path = unique_path("quiet-no-color");
    let on_a_terminal = |no_color: bool, args: &[&str]| {
        let pty = support::Pty::open();
        let mut command = zklock(&zk);
        command.args(args).stdin(Stdio::null()).stdout(pty.stdio()).stderr(pty.stdio());
        if no_color {
            command.env("NO_COLOR", "1");
        } else {
            command.env_remove("NO_COLOR");
        }
        let mut child = command.spawn().unwrap();
        drop(command); // its copies of the slave
                       // Read while it writes: a terminal holds only a few KiB unread, and --help is longer.
        let said = pty.output();
        let status = child.wait().unwrap();
        assert!(status.success(), "{args:?}: {said}");
        said
    };
    let verbose = ["-v", &path, "--", "true"];
    let coloured = on_a_terminal(false, &verbose);
    assert!(coloured.contains("acquired") && coloured.contains('\x1b'), "coloured by default: {coloured:?}");
    for args in [&verbose[..], &["--help"]] {
        let plain = on_a_terminal(true, args);
        assert!(plain.contains("zklock") || plain.contains("acquired"), "{args:?}: {plain:?}");
        assert!(!plain.contains('\x1b'), "{args:?} with NO_COLOR: {plain:?}");
    }
}
