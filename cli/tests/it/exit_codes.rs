//! Exit codes as the help promises them, at the edges: a reader that left, input ZooKeeper
//! cannot take, the wrong kind of path.

use crate::common;
use crate::support;

use std::os::fd::{FromRawFd, OwnedFd};
use std::process::Stdio;

use common::{server, unique_path};
use support::{bare_zklock, hold, zklock, USAGE};

/// A pipe whose reader has already gone: its write end, for a child's stdout.
fn pipe_without_reader() -> Stdio {
    let mut fds = [0; 2];
    // SAFETY: pipe fills two new descriptors, each owned once below.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: both descriptors are ours and open.
    let (reader, writer) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    drop(reader);
    Stdio::from(writer)
}

/// `zklock --help | head -1`: the reader went, which is 141 as everywhere else, not 74.
#[test]
fn help_and_version_to_a_reader_that_left_exit_as_sigpipe_would() {
    for option in ["--help", "--version"] {
        let status = bare_zklock().arg(option).stdout(pipe_without_reader()).status().unwrap();
        assert_eq!(status.code(), Some(128 + libc::SIGPIPE), "{option}");
    }
}

/// A session timeout ZooKeeper cannot take (none, or past an i32 of milliseconds, which wrapped
/// to a second) is bad usage, said before connecting.
#[test]
fn session_timeouts_zookeeper_cannot_take_are_usage_errors() {
    for timeout in ["0", "0ms", "3000000"] {
        let output = bare_zklock().args(["--zk", "127.0.0.1:1", "--session-timeout", timeout, "list", "/x"]).output();
        let output = output.unwrap();
        assert_eq!(output.status.code(), Some(USAGE), "{timeout}: {output:?}");
        assert!(String::from_utf8_lossy(&output.stderr).contains("session timeout"), "{timeout}: {output:?}");
    }
}

/// `leader` on a lock's path is the wrong path, as `elect` there is: 64, not "nobody leads";
/// said as a question's answer (what the path is, where to look), not as an election that
/// "cannot share it" (issue 48, item 7).
#[test]
fn leader_on_a_lock_path_is_a_usage_error() {
    let zk = server().connect_string();
    let path = unique_path("exit-codes-leader-on-lock");
    let (_holder, _) = hold(&zk, &[], &path);
    let output = zklock(&zk).args(["leader", &path]).output().unwrap();
    assert_eq!(output.status.code(), Some(USAGE), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("is a read-write lock") && stderr.contains("nobody leads it"), "{stderr}");
    assert!(stderr.contains(&format!("zklock list {path}")) && !stderr.contains("share"), "{stderr}");
}

/// A path with a character beyond U+FFFF (an emoji) is refused when it is checked, 64 with the
/// reason, before anything is sent; it failed with 70 and "invalid utf8 bytes [237]" (issue 48).
#[test]
fn a_path_with_an_emoji_is_a_usage_error_that_says_why() {
    let output = zklock("127.0.0.1:1").args(["/locks/\u{1f512}", "--", "true"]).output().unwrap();
    assert_eq!(output.status.code(), Some(USAGE), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("outside the Basic Multilingual Plane"), "{stderr}");
}

/// A loss after which another may already hold gets no grace: --help says so where the grace
/// is offered.
#[test]
fn help_says_kill_after_gives_no_grace_when_another_may_hold() {
    let help = String::from_utf8(bare_zklock().arg("--help").stderr(Stdio::null()).output().unwrap().stdout).unwrap();
    let kill_after = &help[help.find("--kill-after").expect("--kill-after in --help")..];
    let said = kill_after.split("--").nth(1).unwrap_or_default().split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(said.contains("SIGKILL at once"), "{said}");
}
