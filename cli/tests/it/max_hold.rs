//! `--max-hold DUR`: a command that outlasts the bound is stopped as on a loss, zklock exits 76
//! saying why, and the lock is free; the bound is in the node, and `zklock list` shows it.

use crate::common;
use crate::support;

use std::process::Stdio;
use std::time::Duration;

use common::{server, unique_path};
use support::{hold, zklock, Group, LOST};

const HANG: Duration = Duration::from_secs(30);

#[test]
fn a_command_held_past_max_hold_is_stopped_and_zklock_exits_76_with_the_lock_free() {
    let zk = server().connect_string();
    let path = unique_path("cli-max-hold");
    let dir = std::env::temp_dir().join(format!("zklock-max-hold-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pid_file = dir.join("pid");
    // The command's pid as the host knows it: in zklock's PID namespace `$$` is 2.
    let script = format!("read -r pid rest < /proc/self/stat; echo $pid > {}; exec sleep 600", pid_file.display());
    let mut run =
        Group::spawn(zklock(&zk).args(["--max-hold", "1s", &path, "--", "sh", "-c", &script]).stderr(Stdio::piped()));
    let status = run.wait(HANG);
    let stderr = run.stderr();
    assert_eq!(status.code(), Some(LOST), "{stderr}");
    assert!(stderr.contains("lock held for its maximum time (1s)"), "{stderr}");
    // The command was stopped, not left behind.
    let pid: i32 = std::fs::read_to_string(&pid_file).unwrap().trim().parse().unwrap();
    // SAFETY: signal 0 only asks whether the process exists.
    assert_eq!(unsafe { libc::kill(pid, 0) }, -1, "the command {pid} still runs");
    // And the lock is free.
    let next = zklock(&zk).args(["-n", &path, "--", "true"]).output().unwrap();
    assert!(next.status.success(), "{next:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn list_shows_a_holders_bound() {
    let zk = server().connect_string();
    let path = unique_path("cli-max-hold-list");
    let (_holder, node) = hold(&zk, &["--max-hold", "90s"], &path);
    let text = zklock(&zk).args(["list", &path]).output().unwrap();
    let text = String::from_utf8(text.stdout).unwrap();
    let line = text.lines().find(|line| line.contains(node.rsplit('/').next().unwrap())).expect(&text);
    assert!(line.contains("holder") && line.contains(" of at most 1m30s"), "{text}");
    assert!(line.contains("held ") && line.contains("for at most 1m30s"), "the node's data says it too: {text}");

    let json = zklock(&zk).args(["list", "--json", &path]).output().unwrap();
    let json: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(json["queues"][0]["nodes"][0]["max_hold_ms"], 90_000, "{json}");
}
