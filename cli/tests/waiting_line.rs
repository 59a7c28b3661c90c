//! The line zklock draws on a terminal while it waits for a lock: where it stands and who holds,
//! redrawn as the wait goes on; nothing on a pipe or with --quiet.

#[path = "../../tests/common/mod.rs"]
mod common;
mod support;

use common::{server, unique_path};
use support::{zklock, Pty};

/// Runs `zklock --timeout 2500ms [extra] PATH -- true` behind a holder, its stderr on a fresh
/// terminal, and returns what the terminal showed.
fn waits_on_a_terminal(zk: &str, path: &str, extra: &[&str]) -> String {
    let pty = Pty::open();
    let status =
        zklock(zk).args(extra).args(["--timeout", "2500ms", path, "--", "true"]).stderr(pty.stdio()).status().unwrap();
    assert_eq!(status.code(), Some(support::TIMED_OUT));
    pty.output()
}

#[test]
fn a_wait_on_a_terminal_shows_where_it_stands_and_quiet_or_a_pipe_shows_nothing() {
    let zk = server().connect_string();
    let path = unique_path("waiting-line");
    let (_holder, _node) = support::hold(&zk, &[], &path);

    let screen = waits_on_a_terminal(&zk, &path, &[]);
    assert!(screen.contains("zklock: waiting: 1 ahead · holder 0x"), "{screen:?}");
    assert!(screen.contains("waited 2s"), "redrawn as the wait goes on: {screen:?}");
    let after = &screen[screen.rfind("waited").unwrap()..];
    let blank = after.split('\r').nth(1).unwrap_or_default();
    assert!(blank.len() > 40 && blank.trim().is_empty(), "the line is blanked once the wait ends: {screen:?}");
    assert!(after.contains("was still held by another"), "then the busy line, on a clean line: {screen:?}");
    assert!(!screen.contains('\x1b'), "no escape sequence: {screen:?}");

    let quiet = waits_on_a_terminal(&zk, &path, &["--quiet"]);
    assert!(!quiet.contains("waiting"), "{quiet:?}");

    let piped = zklock(&zk).args(["--timeout", "1s", &path, "--", "true"]).output().unwrap();
    assert_eq!(piped.status.code(), Some(support::TIMED_OUT));
    assert!(!String::from_utf8_lossy(&piped.stderr).contains("waiting:"), "{piped:?}");
}
