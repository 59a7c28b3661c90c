//! Every option is honoured before or after the subcommand's name, or refused with one line that
//! names where it goes; the command line overrides the environment.

use crate::common;
use crate::support;

use std::process::{Command, Output, Stdio};
use std::time::Duration;

use common::{children, connect, server, unique_path, wait_for_children};
use support::{hold, wait_with_timeout, zklock, Group, TIMED_OUT, USAGE};

/// `zklock OPTIONS SUBCOMMAND ARGS` and `zklock SUBCOMMAND OPTIONS ARGS`.
fn both_places(options: &[&str], subcommand: &str, args: &[&str]) -> [Command; 2] {
    let zk = server().connect_string();
    let mut before = zklock(&zk);
    before.args(options).arg(subcommand).args(args);
    let mut after = zklock(&zk);
    after.arg(subcommand).args(options).args(args);
    [before, after]
}

/// Runs `command` to its end, which must come within 30 s (an ignored -n waits for ever).
fn finish(command: &mut Command) -> Output {
    let mut child = command.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let _ = wait_with_timeout(&mut child, Duration::from_secs(30));
    child.wait_with_output().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiting_options_apply_to_hold_and_elect_wherever_they_are_written() {
    let zk = server().connect_string();
    let client = connect().await;
    let locked = unique_path("placement-locked");
    let (_holder, _) = hold(&zk, &[], &locked);
    let elected = unique_path("placement-elected");
    let _leader = Group::spawn(zklock(&zk).args(["elect", "--id", "leader", &elected, "--", "sleep", "60"]));
    wait_for_children(&client, &elected, 1).await;
    for (options, subcommand, path, code) in [
        (&["-n"][..], "hold", &locked, TIMED_OUT),
        (&["--timeout", "300ms"], "hold", &locked, TIMED_OUT),
        (&["-n", "-E", "9"], "hold", &locked, 9),
        (&["--timeout", "0"], "hold", &locked, TIMED_OUT),
        (&["--timeout", "300ms", "-E", "9"], "elect", &elected, 9),
    ] {
        let args: &[&str] = if subcommand == "elect" { &[path, "true"] } else { &[path] };
        for (place, mut command) in ["before", "after"].into_iter().zip(both_places(options, subcommand, args)) {
            let output = finish(&mut command);
            assert_eq!(output.status.code(), Some(code), "{options:?} {place} {subcommand}: {output:?}");
        }
    }
    assert_eq!(children(&client, &locked).await.len(), 1, "those that gave up left nothing");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lock_kind_options_apply_to_hold_wherever_they_are_written() {
    for (options, node_under) in
        [(&["--semaphore", "2"][..], "/leases/"), (&["--mutex"], "-lock-"), (&["--read"], "__READ__")]
    {
        for (place, mut command) in ["before", "after"].into_iter().zip(both_places(options, "hold", &[])) {
            let path = unique_path("placement-kind");
            let mut holder = Group::spawn(command.arg(&path).stdout(Stdio::piped()));
            let mut line = String::new();
            std::io::BufRead::read_line(&mut std::io::BufReader::new(holder.0.stdout.as_mut().unwrap()), &mut line)
                .unwrap();
            assert!(line.contains(node_under), "{options:?} {place} hold: {line:?}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn elect_options_apply_wherever_they_are_written() {
    let client = connect().await;
    for (place, mut command) in
        ["before", "after"].into_iter().zip(both_places(&["--id", "web-3", "--json"], "elect", &[]))
    {
        let path = unique_path("placement-elect");
        let mut leader = Group::spawn(command.arg(&path).stdout(Stdio::piped()));
        let mut line = String::new();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(leader.0.stdout.as_mut().unwrap()), &mut line)
            .unwrap();
        let printed: serde_json::Value = serde_json::from_str(&line).unwrap_or_else(|_| panic!("{place}: {line:?}"));
        let (id, _) = client.get_data(printed["node"].as_str().unwrap()).await.unwrap();
        assert_eq!(id, b"web-3", "--id {place} elect");
        let mut listed = both_places(&["--json"], "list", &[&path]);
        for listing in &mut listed {
            let json: serde_json::Value = serde_json::from_slice(&finish(listing).stdout).unwrap();
            assert_eq!(json["queues"][0]["nodes"][0]["data"], "web-3", "--json {place} list");
        }
        leader.signal_job(libc::SIGTERM);
        assert_eq!(leader.wait(Duration::from_secs(20)).code(), Some(support::TERMINATED));
    }
}

#[test]
fn an_option_for_another_mode_is_refused_naming_where_it_goes() {
    let path = unique_path("placement-refused");
    for (options, subcommand, args, goes_with) in [
        (&["--semaphore", "2"][..], "list", &[&path[..]][..], "zklock hold"),
        (&["-n"], "list", &[&path], "zklock hold"),
        (&["--on-revoke", "ignore"], "revoke", &["/x/_c_a-lock-0000000001"], "zklock hold"),
        (&["--id", "x"], "hold", &[&path], "zklock elect"),
        (&["--kill-after", "1s"], "hold", &[&path], "zklock elect"),
        (&["--json"], "revoke", &["/x/_c_a-lock-0000000001"], "zklock list"),
    ] {
        for (place, mut command) in ["before", "after"].into_iter().zip(both_places(options, subcommand, args)) {
            let output = finish(&mut command);
            assert_eq!(output.status.code(), Some(USAGE), "{options:?} {place} {subcommand}: {output:?}");
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert_eq!(stderr.lines().count(), 1, "{stderr}");
            assert!(stderr.contains(goes_with), "{options:?} {place} {subcommand}: {stderr}");
        }
    }
    let run = finish(zklock(&server().connect_string()).args(["--json", &path, "true"]));
    assert_eq!(run.status.code(), Some(USAGE), "{run:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_command_line_overrides_the_environment_and_booleans_read_as_people_write_them() {
    let zk = server().connect_string();
    let path = unique_path("placement-env");
    let (_holder, _) = hold(&zk, &[], &path);
    for yes in ["1", "true", "yes", "on", "TRUE"] {
        let busy = finish(zklock(&zk).env("ZKLOCK_NONBLOCK", yes).args([&path, "true"]));
        assert_eq!(busy.status.code(), Some(TIMED_OUT), "ZKLOCK_NONBLOCK={yes}: {busy:?}");
        let waited = finish(zklock(&zk).env("ZKLOCK_NONBLOCK", yes).args(["--timeout", "300ms", &path, "true"]));
        let stderr = String::from_utf8_lossy(&waited.stderr);
        assert!(stderr.contains("after 300ms"), "--timeout beats ZKLOCK_NONBLOCK={yes}: {stderr}");
    }
    for no in ["0", "false", "no", "off"] {
        let waited = finish(zklock(&zk).env("ZKLOCK_NONBLOCK", no).args(["--timeout", "300ms", &path, "true"]));
        assert_eq!(waited.status.code(), Some(TIMED_OUT), "ZKLOCK_NONBLOCK={no}: {waited:?}");
        assert!(String::from_utf8_lossy(&waited.stderr).contains("after 300ms"), "{waited:?}");
    }
    let refused = finish(zklock(&zk).env("ZKLOCK_NONBLOCK", "maybe").args([&path, "true"]));
    assert_eq!(refused.status.code(), Some(USAGE), "{refused:?}");
    let written = finish(zklock(&zk).env("ZKLOCK_READ", "1").args(["--write", "-n", &path, "true"]));
    assert_eq!(written.status.code(), Some(TIMED_OUT), "--write beats ZKLOCK_READ: {written:?}");
    let both = finish(zklock(&zk).args(["-n", "--timeout", "1s", &path, "true"]));
    assert_eq!(both.status.code(), Some(USAGE), "{both:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shell_command_and_on_revoke_apply_wherever_they_are_written() {
    let zk = server().connect_string();
    let client = connect().await;
    for (place, mut command) in
        ["before", "after"].into_iter().zip(both_places(&["-c", "echo \"$ZKLOCK_PATH\""], "elect", &[]))
    {
        let path = unique_path("placement-shell");
        let output = finish(command.arg(&path));
        assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), path, "-c {place} elect: {output:?}");
    }
    for (place, mut command) in
        ["before", "after"].into_iter().zip(both_places(&["--on-revoke", "ignore"], "hold", &[]))
    {
        let path = unique_path("placement-revoke");
        let mut holder = Group::spawn(command.arg(&path).stdout(Stdio::piped()));
        let mut line = String::new();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(holder.0.stdout.as_mut().unwrap()), &mut line)
            .unwrap();
        let node = line.split_whitespace().next().unwrap().to_owned();
        assert!(finish(zklock(&zk).args(["revoke", &node])).status.success());
        // The holder carries on: its node stays, with its own data written back.
        common::eventually("the holder wrote its data back", || async {
            let (data, _) = client.get_data(&node).await.unwrap();
            data.starts_with(b"zklock pid ")
        })
        .await;
        assert!(holder.0.try_wait().unwrap().is_none(), "--on-revoke ignore {place} hold");
    }
}
