//! What operators expect from flock, etcdctl and consul lock: the command without `--`, `-c`,
//! `-z`, `--timeout 0` as `-n`, completions and a manual page, leading without a command,
//! `leader`, `hold --json`, clap's errors on one readable line.

use crate::common;
use crate::support;

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::Duration;

use common::{children, connect, server, unique_path, wait_for_children};
use support::{bare_zklock, hold, zklock, Group, TIMED_OUT, USAGE};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_command_comes_as_flock_takes_it() {
    let zk = server().connect_string();
    let path = unique_path("conventions-flock");
    let echo = "echo \"$ZKLOCK_PATH\" \"$@\"";
    for args in
        [vec![&path[..], "sh", "-c", echo, "sh", "-x", "--y"], vec![&path, "--", "sh", "-c", echo, "sh", "-x", "--y"]]
    {
        let output = zklock(&zk).args(&args).output().unwrap();
        assert!(output.status.success(), "{args:?}: {output:?}");
        assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), format!("{path} -x --y"), "{args:?}");
    }
    let shell = bare_zklock().args(["-z", &zk, &path, "-c", "echo \"$ZKLOCK_PATH\" | tr / _"]).output().unwrap();
    assert!(shell.status.success(), "{shell:?}");
    assert_eq!(String::from_utf8_lossy(&shell.stdout).trim(), path.replace('/', "_"));
    let client = connect().await;
    assert!(children(&client, &path).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeout_zero_is_nonblock() {
    let zk = server().connect_string();
    let path = unique_path("conventions-timeout-zero");
    let (_holder, _) = hold(&zk, &[], &path);
    let nonblock = zklock(&zk).args(["-n", &path, "true"]).output().unwrap();
    let zero = zklock(&zk).args(["--timeout", "0", &path, "true"]).output().unwrap();
    assert_eq!(nonblock.status.code(), Some(TIMED_OUT));
    assert_eq!(zero.status.code(), Some(TIMED_OUT));
    assert_eq!(zero.stderr, nonblock.stderr, "one message for one outcome");
}

#[test]
fn completions_and_the_manual_page_come_from_the_definitions() {
    for shell in ["bash", "zsh", "fish"] {
        let output = bare_zklock().args(["completions", shell]).output().unwrap();
        assert!(output.status.success(), "{shell}: {output:?}");
        let script = String::from_utf8_lossy(&output.stdout);
        assert!(script.contains("zklock") && script.contains("semaphore"), "{shell}: {script}");
    }
    let page = bare_zklock().arg("manpage").output().unwrap();
    assert!(page.status.success(), "{page:?}");
    let page = String::from_utf8_lossy(&page.stdout);
    assert!(page.contains(".TH zklock 1") && page.contains("semaphore"), "{page}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn elect_without_a_command_leads_until_signalled_and_leader_names_it() {
    let zk = server().connect_string();
    let client = connect().await;
    let path = unique_path("conventions-elect");
    assert_eq!(zklock(&zk).args(["leader", &path]).output().unwrap().status.code(), Some(1), "nobody leads yet");
    let mut campaign = Group::spawn(zklock(&zk).args(["elect", "--id", "web-3", &path]).stdout(Stdio::piped()));
    let mut line = String::new();
    BufReader::new(campaign.0.stdout.as_mut().unwrap()).read_line(&mut line).unwrap();
    let (node, epoch) = line.trim().split_once(' ').unwrap_or_else(|| panic!("{line:?}"));
    let leader = zklock(&zk).args(["leader", &path]).output().unwrap();
    assert!(leader.status.success(), "{leader:?}");
    assert_eq!(String::from_utf8_lossy(&leader.stdout).trim(), format!("web-3 {node} {epoch}"));
    let json = zklock(&zk).args(["leader", "--json", &path]).output().unwrap();
    let json: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(json["leader"]["id"], "web-3", "{json}");
    assert_eq!(json["leader"]["token"].to_string(), epoch, "{json}");
    campaign.signal_job(libc::SIGTERM);
    assert_eq!(campaign.wait(Duration::from_secs(20)).code(), Some(support::TERMINATED));
    wait_for_children(&client, &path, 0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hold_json_prints_one_object_with_the_node_and_token() {
    let zk = server().connect_string();
    let path = unique_path("conventions-hold-json");
    let mut holder = Group::spawn(zklock(&zk).args(["hold", "--json", &path]).stdout(Stdio::piped()));
    let mut line = String::new();
    BufReader::new(holder.0.stdout.as_mut().unwrap()).read_line(&mut line).unwrap();
    let json: serde_json::Value = serde_json::from_str(&line).unwrap_or_else(|_| panic!("{line:?}"));
    assert_eq!(json["path"], path.as_str());
    assert!(json["node"].as_str().unwrap().starts_with(&format!("{path}/_c_")), "{json}");
    assert!(json["token"].as_i64().unwrap() > 0, "{json}");
    holder.signal_job(libc::SIGTERM);
    assert_eq!(holder.wait(Duration::from_secs(20)).code(), Some(support::TERMINATED));
}

#[test]
fn usage_shows_only_forms_that_work_and_errors_keep_clap_tips_apart() {
    let help = String::from_utf8(bare_zklock().arg("--help").output().unwrap().stdout).unwrap();
    assert!(!help.contains("[LOCK_PATH] <COMMAND>"), "{help}");
    assert!(help.contains("LOCK_PATH [--] COMMAND") && help.contains("-c SHELL_COMMAND"), "{help}");
    let bogus = bare_zklock().args(["--bogus", "/x", "true"]).output().unwrap();
    assert_eq!(bogus.status.code(), Some(USAGE));
    let stderr = String::from_utf8_lossy(&bogus.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("found; tip:"), "the tip is apart from the error: {stderr}");
}
