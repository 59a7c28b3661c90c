//! `zklock elect PATH -- COMMAND`, run as a user would run it, against a real server.

use crate::common;
use crate::support;

use std::process::Stdio;
use std::time::Duration;

use common::interop::temp_log;
use common::{children, connect, server, unique_path, wait_for_children};
use support::{hold, log_has, read, zklock, Group, LOST, TIMED_OUT, USAGE};
use zklock_testcontainers::Proxy;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn elect_runs_the_command_as_leader_with_the_epoch_and_leaves_the_election() {
    let path = unique_path("elect-run");
    let output = zklock(&server().connect_string())
        .args(["elect", &path, "--", "sh", "-c", "echo $ZKLOCK_PATH $ZKLOCK_NODE $ZKLOCK_FENCING_TOKEN; exit 3"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(3), "the command's status: {output:?}");
    let stdout = String::from_utf8(output.stdout).unwrap();
    let fields: Vec<&str> = stdout.split_whitespace().collect();
    assert_eq!(fields[0], path);
    assert!(fields[1].starts_with(&format!("{path}/_c_")) && fields[1].contains("-latch-"), "{stdout}");
    assert!(fields[2].parse::<i64>().unwrap() > 0, "{stdout}");
    let client = connect().await;
    assert!(children(&client, &path).await.is_empty(), "left the election when the command ended");
}

/// Two participants really contend: the second is in the election (its node is there, with its
/// id) while the first's command runs, and its command starts only after the first's ended.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_elect_waits_while_the_first_leads_and_runs_after_it_ends() {
    let path = unique_path("elect-handover");
    let zk = server().connect_string();
    let client = connect().await;
    let log = temp_log("elect-handover");
    let stop = log.with_extension("stop");
    let _ = std::fs::remove_file(&stop);
    let (shown, stop_shown) = (log.display(), stop.display());
    let first_command = format!(
        "echo lead first $ZKLOCK_FENCING_TOKEN >> {shown}; \
         while [ ! -e {stop_shown} ]; do sleep 0.05; done; echo done first >> {shown}"
    );
    let mut first = Group::spawn(zklock(&zk).args(["elect", "--id", "first", &path, "--", "sh", "-c", &first_command]));
    log_has(&log, "lead first").await;
    let second_command = format!("echo lead second $ZKLOCK_FENCING_TOKEN >> {shown}");
    let mut second =
        Group::spawn(zklock(&zk).args(["elect", "--id", "second", &path, "--", "sh", "-c", &second_command]));
    wait_for_children(&client, &path, 2).await;

    let listed = zklock(&zk).args(["list", "--json", &path]).output().unwrap();
    assert!(listed.status.success(), "somebody leads: {listed:?}");
    let json: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(json["queues"][0]["kind"], "leader-latch", "{json}");
    let nodes = json["queues"][0]["nodes"].as_array().unwrap();
    let roles: Vec<(&str, &str)> =
        nodes.iter().map(|node| (node["role"].as_str().unwrap(), node["data"].as_str().unwrap())).collect();
    assert_eq!(roles, [("holder", "first"), ("waiter", "second")], "the ids are the nodes' data");
    assert!(!read(&log).contains("lead second"), "the second ran beside the leader:\n{}", read(&log));

    std::fs::write(&stop, "").unwrap();
    assert!(first.wait(Duration::from_secs(30)).success());
    assert!(second.wait(Duration::from_secs(30)).success());
    let text = read(&log);
    let lines: Vec<Vec<&str>> = text.lines().map(|line| line.split_whitespace().collect()).collect();
    let order: Vec<String> = lines.iter().map(|fields| fields[..2].join(" ")).collect();
    assert_eq!(order, ["lead first", "done first", "lead second"], "{text}");
    let epochs: Vec<i64> = [&lines[0], &lines[2]].iter().map(|fields| fields[2].parse().unwrap()).collect();
    assert!(epochs[0] < epochs[1], "the epoch grows from leader to leader: {epochs:?}");
    assert!(children(&client, &path).await.is_empty(), "both left the election");
}

/// Deleting the leader's node ends its leadership: the command (which would sleep a minute) is
/// stopped and zklock exits 76 once it is gone; the latch's new node goes with zklock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_whose_node_is_deleted_has_its_command_stopped_with_the_loss_code() {
    let path = unique_path("elect-deleted");
    let log = temp_log("elect-deleted");
    let command = format!("echo started >> {}; exec sleep 60", log.display());
    let mut run = Group::spawn(
        zklock(&server().connect_string()).args(["elect", &path, "--", "sh", "-c", &command]).stderr(Stdio::piped()),
    );
    let client = connect().await;
    log_has(&log, "started").await;
    let node = children(&client, &path).await.remove(0);
    client.delete(&format!("{path}/{node}"), None).await.unwrap();
    assert_eq!(run.wait(Duration::from_secs(30)).code(), Some(LOST));
    let stderr = run.stderr();
    assert!(stderr.contains("leadership lost") && stderr.contains("deleted"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line per loss: {stderr}");
    wait_for_children(&client, &path, 0).await;
}

/// A leader cut off from ZooKeeper gives leadership up before its session can expire: its command
/// gets SIGTERM, and zklock exits 76 once it is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_cut_off_from_zookeeper_stops_its_command_with_the_loss_code() {
    let path = unique_path("elect-cut-off");
    let proxy = Proxy::start(server().address()).unwrap();
    let log = temp_log("elect-cut-off");
    let command = format!(
        "trap 'echo stopped >> {log}; kill $!; exit 0' TERM; echo started >> {log}; sleep 60 & wait",
        log = log.display()
    );
    let mut run = Group::spawn(
        zklock(&proxy.connect_string())
            .args(["elect", "--kill-after", "2s", &path, "--", "sh", "-c", &command])
            .stderr(Stdio::piped()),
    );
    log_has(&log, "started").await;
    proxy.blackhole();
    assert_eq!(run.wait(Duration::from_secs(30)).code(), Some(LOST));
    assert!(read(&log).contains("stopped"), "the command got SIGTERM");
    assert!(run.stderr().contains("leadership lost"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn elect_timeout_gives_up_with_the_conflict_exit_code_and_leaves_nothing() {
    let path = unique_path("elect-timeout");
    let zk = server().connect_string();
    let client = connect().await;
    let _leader = Group::spawn(zklock(&zk).args(["elect", "--id", "leader", &path, "--", "sleep", "60"]));
    wait_for_children(&client, &path, 1).await;
    let ran = temp_log("elect-timeout-ran");
    let _ = std::fs::remove_file(&ran);
    for (options, code) in [(vec!["--timeout", "500ms"], TIMED_OUT), (vec!["-w", "300ms", "-E", "9"], 9)] {
        let output =
            zklock(&zk).arg("elect").args(&options).arg(&path).arg("--").arg("touch").arg(&ran).output().unwrap();
        assert_eq!(output.status.code(), Some(code), "{options:?}: {output:?}");
        let stderr = String::from_utf8(output.stderr).unwrap();
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
    }
    assert!(!ran.exists(), "a participant that never led ran its command");
    assert_eq!(children(&client, &path).await.len(), 1, "those that gave up left the election");
}

/// An election and a lock do not see each other's nodes, so one path takes one of them. (A
/// participant's id is HOSTNAME:PID unless --id says otherwise.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_election_and_a_lock_refuse_each_others_path() {
    let zk = server().connect_string();
    let client = connect().await;
    let locked = unique_path("elect-on-a-lock");
    let (_holder, _) = hold(&zk, &[], &locked);
    let elect = zklock(&zk).args(["elect", &locked, "--", "true"]).output().unwrap();
    assert_eq!(elect.status.code(), Some(USAGE), "{elect:?}");
    assert!(String::from_utf8_lossy(&elect.stderr).contains("cannot share"), "{elect:?}");

    let elected = unique_path("lock-on-an-election");
    let leader = Group::spawn(zklock(&zk).args(["elect", &elected, "--", "sleep", "60"]));
    wait_for_children(&client, &elected, 1).await;
    let listed = zklock(&zk).args(["list", "--json", &elected]).output().unwrap();
    let json: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let default_id = format!("{}:{}", host.trim(), leader.0.id());
    assert_eq!(json["queues"][0]["nodes"][0]["data"], default_id.as_str(), "the default id: {json}");
    let lock = zklock(&zk).args(["-n", &elected, "--", "true"]).output().unwrap();
    assert_eq!(lock.status.code(), Some(USAGE), "{lock:?}");
    assert!(String::from_utf8_lossy(&lock.stderr).contains("election"), "{lock:?}");

    let relative = zklock(&zk).args(["elect", "relative", "--", "true"]).output().unwrap();
    assert_eq!(relative.status.code(), Some(USAGE), "{relative:?}");
    let help = String::from_utf8(zklock(&zk).args(["elect", "--help"]).output().unwrap().stdout).unwrap();
    assert!(help.contains("env: ZKLOCK_ID") && help.contains("--timeout"), "{help}");
}
