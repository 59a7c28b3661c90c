//! The `zklock` command, run as a user would run it, against a real server.

#[path = "../../tests/common/mod.rs"]
mod common;
mod support;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::interop::{check_leases, check_log, temp_log};
use common::{connect, eventually, server, unique_path, wait_for_children};
use support::{
    bare_zklock, bare_zklock_free, hold, log_has, read, wait_with_timeout, zklock, Group, LOST, NOT_ALLOWED, TIMED_OUT,
    UNAVAILABLE, USAGE,
};
use zklock_testcontainers::{Proxy, ServerOptions, ZooKeeperServer};
use zookeeper_client::{Acls, Client, CreateMode};

/// A shell command that logs entering and leaving, as the interop peers do.
fn logged(log: &Path, name: &str, mode: &str, seconds: &str) -> [String; 3] {
    let log = log.display();
    [
        "sh".into(),
        "-c".into(),
        format!("echo enter {name} {mode} >> {log}; sleep {seconds}; echo exit {name} {mode} >> {log}"),
    ]
}

/// Starts `count` zklock runs with `options` on `path`, each logging a `mode` section of
/// `seconds`, and waits until all succeeded.
fn run_logged(count: usize, options: &[&str], path: &str, log: &Path, mode: &str, seconds: &str) {
    let zk = server().connect_string();
    let mut runs: Vec<Group> = (0..count)
        .map(|i| {
            let command = logged(log, &format!("run-{i}"), mode, seconds);
            Group::spawn(zklock(&zk).args(options).arg(path).arg("--").args(command))
        })
        .collect();
    for run in &mut runs {
        assert!(run.wait(Duration::from_secs(60)).success());
    }
}

#[test]
fn two_zklock_processes_never_run_their_commands_at_once() {
    let log = temp_log("cli-exclusion");
    run_logged(3, &[], &unique_path("cli-exclusion"), &log, "mutex", "0.3");
    check_log(&log, &[("run-0", 1), ("run-1", 1), ("run-2", 1)]);
}

/// The promise of issue 13: a lost lock's command, which ignores SIGTERM and left a grandchild
/// running, is gone before the next holder's command starts. Each process of both commands
/// writes timestamped lines to one file, so an overlap shows as an A line after the first B line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_lock_kills_the_whole_group_before_the_next_holder_runs() {
    let path = unique_path("cli-no-overlap");
    let proxy = Proxy::start(server().address()).unwrap();
    let log = temp_log("cli-no-overlap");
    let shown = log.display();
    let stubborn = format!(
        "trap '' TERM; \
         (while :; do echo \"A grandchild $(date +%s.%N)\" >> {shown}; sleep 0.05; done) & \
         while :; do echo \"A child $(date +%s.%N)\" >> {shown}; sleep 0.05; done"
    );
    let mut first = Group::spawn(
        bare_zklock()
            .args(["--zk", &proxy.connect_string(), "--session-timeout", "6s", &path, "--", "sh", "-c", &stubborn])
            .stderr(Stdio::piped()),
    );
    let client = connect().await;
    log_has(&log, "A grandchild").await;
    let next = format!("echo \"B start $(date +%s.%N)\" >> {shown}; echo \"B end $(date +%s.%N)\" >> {shown}");
    let mut second = Group::spawn(zklock(&server().connect_string()).args([&path, "--", "sh", "-c", &next]));
    wait_for_children(&client, &path, 2).await;
    proxy.blackhole(); // the first session will expire on the server; the second holds then
    assert_eq!(first.wait(Duration::from_secs(60)).code(), Some(LOST));
    assert!(second.wait(Duration::from_secs(60)).success());
    let text = read(&log);
    let lines: Vec<&str> = text.lines().collect();
    let b_start = lines.iter().position(|line| line.starts_with("B start")).expect("the next holder ran");
    assert!(lines[..b_start].iter().any(|line| line.starts_with("A grandchild")));
    let late: Vec<&&str> = lines[b_start..].iter().filter(|line| line.starts_with('A')).collect();
    assert!(late.is_empty(), "the lost command ran beside the next holder: {late:?}\n{text}");
    let stderr = first.stderr();
    assert!(stderr.contains("lock lost"), "{stderr}");
    println!("{stderr}{}", lines[b_start.saturating_sub(4)..].join("\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_command_gets_the_lock_in_its_environment_and_its_status_is_passed_through() {
    let path = unique_path("cli-env");
    let output: Output = zklock(&server().connect_string())
        .arg(&path)
        .args(["--", "sh", "-c", "echo $ZKLOCK_PATH $ZKLOCK_NODE $ZKLOCK_FENCING_TOKEN; exit 3"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(3));
    let stdout = String::from_utf8(output.stdout).unwrap();
    let fields: Vec<&str> = stdout.split_whitespace().collect();
    assert_eq!(fields[0], path);
    assert!(fields[1].starts_with(&format!("{path}/_c_")), "{stdout}");
    assert!(fields[2].parse::<i64>().unwrap() > 0);
    let client = connect().await;
    assert!(common::children(&client, &path).await.is_empty(), "released on exit");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeout_and_nonblock_give_up_with_the_conflict_exit_code() {
    let path = unique_path("cli-timeout");
    let zk = server().connect_string();
    let (_holder, _) = hold(&zk, &[], &path);
    let client = connect().await;
    for (options, code) in [
        (vec!["--timeout", "500ms"], TIMED_OUT),
        (vec!["-n"], TIMED_OUT),
        (vec!["--nonblock", "-E", "0"], 0),
        (vec!["-n", "--conflict-exit-code", "9"], 9),
    ] {
        let output = zklock(&zk).args(&options).arg(&path).args(["--", "true"]).output().unwrap();
        assert_eq!(output.status.code(), Some(code), "{options:?}");
        let stderr = String::from_utf8(output.stderr).unwrap();
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
    }
    assert_eq!(common::children(&client, &path).await.len(), 1, "the waiters left nothing behind");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn default_write_and_read_behave_like_flock_x_and_s_on_one_path() {
    let path = unique_path("cli-flock");
    let zk = server().connect_string();
    let busy = |options: &[&str]| zklock(&zk).arg("-n").args(options).arg(&path).args(["--", "true"]).status().unwrap();
    let (writer, _) = hold(&zk, &[], &path);
    for options in [&[][..], &["--write"], &["-x"], &["--read"], &["-s"]] {
        assert_eq!(busy(options).code(), Some(TIMED_OUT), "{options:?} beside the default (write) holder");
    }
    drop(writer);
    let client = connect().await;
    wait_for_children(&client, &path, 0).await;
    let (_reader, _) = hold(&zk, &["--read"], &path);
    assert!(busy(&["--read"]).success(), "readers share");
    assert_eq!(busy(&[]).code(), Some(TIMED_OUT), "the default excludes readers");
    assert_eq!(busy(&["--write"]).code(), Some(TIMED_OUT), "--write excludes readers");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mode_that_cannot_share_the_path_is_refused_with_one_line() {
    let zk = server().connect_string();
    let client = connect().await;
    for (held_as, refused) in [
        (vec![], vec![vec!["--semaphore", "2"], vec!["--mutex"], vec!["--kazoo"]]),
        (vec!["--mutex"], vec![vec!["--kazoo"], vec![], vec!["--read"], vec!["--semaphore", "1"]]),
        (vec!["--semaphore", "2"], vec![vec![], vec!["--mutex"]]),
    ] {
        let path = unique_path("cli-modes");
        let (_holder, _) = hold(&zk, &held_as, &path);
        let before = lock_nodes(&client, &path).await;
        for options in refused {
            let output = zklock(&zk).args(&options).arg(&path).args(["--", "true"]).output().unwrap();
            assert_eq!(output.status.code(), Some(USAGE), "{options:?} on a path held as {held_as:?}");
            let stderr = String::from_utf8(output.stderr).unwrap();
            assert_eq!(stderr.lines().count(), 1, "{stderr}");
            assert!(stderr.contains("cannot share"), "{stderr}");
        }
        assert_eq!(lock_nodes(&client, &path).await, before, "the refused left nothing behind");
    }
}

/// The lock nodes and leases under `path` (not the semaphore's folders, which the server deletes
/// as containers when they are empty).
async fn lock_nodes(client: &Client, path: &str) -> Vec<String> {
    let mut nodes = common::children(client, path).await;
    nodes.retain(|name| name != "leases" && name != "locks");
    nodes.extend(common::children(client, &format!("{path}/leases")).await);
    nodes
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_killed_with_sigkill_hands_over_within_the_session_timeout() {
    let path = unique_path("cli-sigkill");
    let zk = server().connect_string();
    let mut holder = Group::spawn(zklock(&zk).arg(&path).args(["--", "sleep", "60"]));
    let client = connect().await;
    wait_for_children(&client, &path, 1).await;
    let mut next = zklock(&zk).arg(&path).args(["--", "true"]).spawn().unwrap();
    wait_for_children(&client, &path, 2).await;
    holder.0.kill().unwrap(); // SIGKILL to zklock alone: its session dies with it, unannounced
    let started = Instant::now();
    let status = wait_with_timeout(&mut next, Duration::from_secs(30));
    assert!(status.success());
    // Session timeout 4 s, plus scheduling slack.
    assert!(started.elapsed() < Duration::from_secs(12), "handed over after {:?}", started.elapsed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_lock_stops_the_command_and_exits_with_the_loss_code() {
    let path = unique_path("cli-lost");
    let proxy = Proxy::start(server().address()).unwrap();
    let log = temp_log("cli-lost");
    let mut run = Group::spawn(
        zklock(&proxy.connect_string())
            .args(["--kill-after", "2s"])
            .arg(&path)
            .arg("--")
            .args([
                "sh",
                "-c",
                &format!(
                    "trap 'echo stopped >> {log}; kill $!; exit 0' TERM; echo started >> {log}; sleep 60 & wait",
                    log = log.display()
                ),
            ])
            .stderr(Stdio::piped()),
    );
    // The command runs only once zklock knows it holds: cutting it off any earlier (its node
    // already on the server, the reply not yet back) would end its acquire, not a hold.
    eventually("the command started", || async { read(&log).contains("started") }).await;
    proxy.blackhole(); // the session will expire on the server
    assert_eq!(run.wait(Duration::from_secs(30)).code(), Some(LOST));
    assert!(read(&log).contains("stopped"), "the command got SIGTERM");
    assert!(run.stderr().contains("lock lost"));
}

/// A terminal sends Ctrl-C to its whole foreground job: zklock's group. The command has a group
/// of its own, so it gets each signal once, from zklock, and holds the lock until it exits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_signal_to_the_job_reaches_the_command_once_and_the_lock_outlives_it() {
    let zk = server().connect_string();
    let client = connect().await;
    for (signal, name) in [
        (libc::SIGINT, "INT"),
        (libc::SIGTERM, "TERM"),
        (libc::SIGHUP, "HUP"),
        (libc::SIGQUIT, "QUIT"),
        (libc::SIGUSR1, "USR1"),
        (libc::SIGUSR2, "USR2"),
    ] {
        let path = unique_path("cli-signals");
        let log = temp_log(&format!("cli-signals-{name}"));
        let stop = log.with_extension("stop");
        let _ = std::fs::remove_file(&stop);
        let (log_shown, stop_shown) = (log.display(), stop.display());
        let script = format!(
            "trap 'echo got >> {log_shown}' {name}; echo ready >> {log_shown}; \
             while [ ! -e {stop_shown} ]; do sleep 0.05; done"
        );
        let mut run = Group::spawn(zklock(&zk).args([&path, "--", "sh", "-c", &script]));
        log_has(&log, "ready").await;
        run.signal_job(signal);
        log_has(&log, "got").await;
        tokio::time::sleep(Duration::from_millis(300)).await; // room for a second delivery
        assert_eq!(common::children(&client, &path).await.len(), 1, "{name}: held while the command runs");
        std::fs::write(&stop, "").unwrap();
        assert!(run.wait(Duration::from_secs(20)).success(), "{name}");
        assert_eq!(read(&log).matches("got").count(), 1, "{name} reached the command once");
        assert!(common::children(&client, &path).await.is_empty(), "{name}: released after the command");
        let _ = std::fs::remove_file(&stop);
    }
}

#[test]
fn a_semaphore_of_three_lets_exactly_three_run_at_once() {
    let log = temp_log("cli-semaphore");
    run_logged(5, &["--semaphore", "3"], &unique_path("cli-semaphore"), &log, "lease", "1");
    let expected: Vec<(String, u32)> = (0..5).map(|i| (format!("run-{i}"), 1)).collect();
    let expected: Vec<(&str, u32)> = expected.iter().map(|(n, c)| (n.as_str(), *c)).collect();
    assert_eq!(check_leases(&log, 3, &expected), 3, "three ran together");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_marks_holders_and_waiters_and_exits_1_when_nobody_holds() {
    let path = unique_path("cli-list");
    let zk = server().connect_string();
    let client = connect().await;
    let list = |extra: &[&str]| zklock(&zk).arg("list").args(extra).arg(&path).output().unwrap();
    assert_eq!(list(&[]).status.code(), Some(1), "nobody holds a new path");
    let (holder, held_node) = hold(&zk, &[], &path);
    let _reader = Group::spawn(zklock(&zk).args(["--read", &path, "--", "true"]));
    let _writer = Group::spawn(zklock(&zk).args([&path, "--", "true"]));
    wait_for_children(&client, &path, 3).await;
    let listed = list(&["--json"]);
    assert!(listed.status.success(), "{listed:?}");
    println!("{}", String::from_utf8_lossy(&listed.stdout));
    let json: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(json["held"], true);
    let queues = json["queues"].as_array().unwrap();
    assert_eq!(queues.len(), 1, "{json}");
    assert_eq!(queues[0]["kind"], "read-write");
    let nodes = queues[0]["nodes"].as_array().unwrap();
    let roles: Vec<(&str, &str)> =
        nodes.iter().map(|node| (node["role"].as_str().unwrap(), node["side"].as_str().unwrap())).collect();
    assert_eq!(roles[0], ("holder", "write"));
    assert_eq!(nodes[0]["node"], held_node.as_str());
    assert!(nodes[0]["data"].as_str().unwrap().starts_with("zklock pid"));
    assert!(roles[1..].iter().all(|(role, _)| *role == "waiter"), "{roles:?}");
    let text = String::from_utf8(list(&[]).stdout).unwrap();
    assert!(text.contains("holder") && text.contains("waiter") && text.contains(&held_node), "{text}");
    drop(holder);
    wait_for_children(&client, &path, 0).await;
    let listed = list(&["--json"]);
    assert_eq!(listed.status.code(), Some(1));
    assert_eq!(serde_json::from_slice::<serde_json::Value>(&listed.stdout).unwrap()["held"], false);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_shows_each_queue_apart() {
    let path = unique_path("cli-list-queues");
    let zk = server().connect_string();
    let client = connect().await;
    // Two kinds on one path can only come from outside zklock (or from before this check):
    // a Curator mutex node made by hand beside a zklock write lock.
    let (_holder, _) = hold(&zk, &[], &path);
    let foreign = format!("{path}/_c_6ba7b810-9dad-11d1-80b4-00c04fd430c8-lock-");
    client.create(&foreign, b"curator", &CreateMode::EphemeralSequential.with_acls(Acls::anyone_all())).await.unwrap();
    let listed = zklock(&zk).args(["list", "--json", &path]).output().unwrap();
    let json: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
    let kinds: Vec<&str> = json["queues"].as_array().unwrap().iter().map(|q| q["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["read-write", "mutex"]);
    for queue in json["queues"].as_array().unwrap() {
        assert_eq!(queue["nodes"][0]["role"], "holder", "{json}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revoke_stops_a_zklock_holder_unless_it_ignores_revocation() {
    let zk = server().connect_string();
    let client = connect().await;
    let (stubborn_path, obliging_path) = (unique_path("cli-revoke-ignore"), unique_path("cli-revoke"));
    let mut stubborn = Group::spawn(zklock(&zk).args(["--on-revoke", "ignore", &stubborn_path, "--", "sleep", "60"]));
    let mut obliging = Group::spawn(zklock(&zk).args([&obliging_path, "--", "sleep", "60"]));
    wait_for_children(&client, &stubborn_path, 1).await;
    wait_for_children(&client, &obliging_path, 1).await;
    for path in [&stubborn_path, &obliging_path] {
        let node = format!("{path}/{}", common::children(&client, path).await[0]);
        let revoked = zklock(&zk).arg("revoke").arg(&node).output().unwrap();
        assert!(revoked.status.success(), "{revoked:?}");
    }
    let status = obliging.wait(Duration::from_secs(20));
    assert_eq!(status.code(), Some(128 + libc::SIGTERM), "sleep got SIGTERM");
    assert!(common::children(&client, &obliging_path).await.is_empty());
    assert!(stubborn.0.try_wait().unwrap().is_none(), "--on-revoke ignore carries on");
    let (mut holder, node) = hold(&zk, &[], &unique_path("cli-revoke-hold"));
    assert!(zklock(&zk).arg("revoke").arg(&node).status().unwrap().success());
    assert!(holder.wait(Duration::from_secs(20)).success(), "hold lets go on revocation");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hold_prints_the_node_and_token_and_releases_on_a_signal() {
    let path = unique_path("cli-hold");
    let zk = server().connect_string();
    let client = connect().await;
    let mut holder = Group::spawn(zklock(&zk).args(["hold", &path]).stdout(Stdio::piped()).stderr(Stdio::null()));
    let mut line = String::new();
    BufReader::new(holder.0.stdout.as_mut().unwrap()).read_line(&mut line).unwrap();
    let fields: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(fields.len(), 2, "{line:?}");
    assert!(fields[0].starts_with(&format!("{path}/_c_")), "{line:?}");
    assert!(fields[1].parse::<i64>().unwrap() > 0, "{line:?}");
    assert_eq!(common::children(&client, &path).await.len(), 1);
    holder.signal_job(libc::SIGTERM);
    assert!(holder.wait(Duration::from_secs(20)).success());
    assert!(common::children(&client, &path).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verbose_says_whom_it_waits_for_and_when_it_acquires_and_releases() {
    let path = unique_path("cli-verbose");
    let zk = server().connect_string();
    let (holder, held_node) = hold(&zk, &[], &path);
    let mut waiter = Group::spawn(zklock(&zk).args(["-v", &path, "--", "true"]).stderr(Stdio::piped()));
    let client = connect().await;
    wait_for_children(&client, &path, 2).await;
    drop(holder);
    assert!(waiter.wait(Duration::from_secs(20)).success());
    let stderr = waiter.stderr();
    assert!(stderr.contains(&format!("held by {held_node}")), "{stderr}");
    assert!(stderr.contains("acquired") && stderr.contains("fencing token"), "{stderr}");
    assert!(stderr.contains("released"), "{stderr}");
}

/// A path whose ACL lets only one digest user create: an anonymous zklock is refused (77), the
/// same with the user's credentials from --auth, ZKLOCK_AUTH or --auth-file runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_digest_protected_path_needs_the_credentials() {
    let zk = server().connect_string();
    let path = unique_path("cli-secure");
    let owner = Client::connector().with_auth("digest", b"deployer:secret").connect(&zk).await.unwrap();
    let parent = &path[..path.rfind('/').unwrap()];
    owner.mkdir(parent, &CreateMode::Persistent.with_acls(Acls::anyone_all())).await.unwrap();
    owner.create(&path, b"", &CreateMode::Persistent.with_acls(Acls::creator_all())).await.unwrap();
    let run = |command: &mut Command| command.args([&path, "--", "true"]).output().unwrap();
    let anonymous = run(&mut zklock(&zk));
    assert_eq!(anonymous.status.code(), Some(NOT_ALLOWED), "{anonymous:?}");
    assert_eq!(anonymous.stderr.iter().filter(|b| **b == b'\n').count(), 1, "{anonymous:?}");
    let stranger = run(zklock(&zk).args(["--auth", "digest:deployer:wrong"]));
    assert_eq!(stranger.status.code(), Some(NOT_ALLOWED), "{stranger:?}");
    assert!(run(zklock(&zk).args(["--auth", "digest:deployer:secret"])).status.success());
    assert!(run(zklock(&zk).env("ZKLOCK_AUTH", "digest:deployer:secret")).status.success());
    let auth_file = temp_log("cli-secure-auth");
    std::fs::write(&auth_file, "# the deploy user\ndigest:deployer:secret\n").unwrap();
    assert!(run(zklock(&zk).arg("--auth-file").arg(&auth_file)).status.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_option_also_comes_from_the_environment_named_in_help() {
    let help = String::from_utf8(bare_zklock().arg("--help").output().unwrap().stdout).unwrap();
    for name in ["ZKLOCK_ZK", "ZKLOCK_AUTH", "ZKLOCK_AUTH_FILE", "ZKLOCK_TLS_CA", "ZKLOCK_TIMEOUT", "ZKLOCK_NONBLOCK"] {
        assert!(help.contains(&format!("env: {name}")), "{name} missing from --help");
    }
    let path = unique_path("cli-env-options");
    let (_holder, _) = hold(&server().connect_string(), &[], &path);
    let busy = bare_zklock()
        .env("ZKLOCK_ZK", server().connect_string())
        .env("ZKLOCK_NONBLOCK", "true")
        .env("ZKLOCK_CONFLICT_EXIT_CODE", "9")
        .args([&path, "--", "true"])
        .status()
        .unwrap();
    assert_eq!(busy.code(), Some(9));
    let fallback =
        bare_zklock().env("ZK_CONNECT", server().connect_string()).args(["-n", &path, "--", "true"]).status().unwrap();
    assert_eq!(fallback.code(), Some(TIMED_OUT), "ZK_CONNECT still names the servers");
}

#[test]
fn bad_input_is_one_line_and_a_documented_code() {
    let zk = "127.0.0.1:1";
    for args in [
        vec!["/x"],
        vec!["--", "true"],
        vec!["relative", "--", "true"],
        vec!["--timeout", "soon", "/x", "--", "true"],
        vec!["--auth", "digest", "/x", "--", "true"],
        vec!["--tls-ca", "/no/such/ca.pem", "/x", "--", "true"],
    ] {
        let output = zklock(zk).args(&args).output().unwrap();
        assert_eq!(output.status.code(), Some(USAGE), "{args:?}");
        assert_eq!(String::from_utf8_lossy(&output.stderr).lines().count(), 1, "{args:?}: {output:?}");
    }
    let output = zklock(zk).args(["--connect-timeout", "1s", "/x", "--", "true"]).output().unwrap();
    assert_eq!(output.status.code(), Some(UNAVAILABLE), "unreachable ZooKeeper");
    assert_eq!(String::from_utf8_lossy(&output.stderr).lines().count(), 1);
    let output = zklock(&server().connect_string())
        .args(["/zklock-tests/cli-missing", "--", "/no/such/command"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(127));
}

/// In a terminal the command is the foreground job while it runs, as under a shell: it can read
/// the terminal (a background group would stop on SIGTTIN for ever), and the terminal's Ctrl-C
/// reaches it once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_in_a_terminal_reads_it_and_gets_ctrl_c_once() {
    let path = unique_path("cli-terminal");
    let log = temp_log("cli-terminal");
    let shown = log.display();
    let command = format!(
        "trap 'echo got INT >> {shown}' INT; \
         while :; do read line; echo \"read $line\" >> {shown}; [ \"$line\" = second ] && break; done"
    );
    let zklock_line = format!(
        "{} --zk {} {path} -- sh -c \"{}\"",
        env!("CARGO_BIN_EXE_zklock"),
        server().connect_string(),
        command.replace('"', "\\\"").replace('$', "\\$")
    );
    let mut terminal = Group::spawn(
        bare_zklock_free(Command::new("script")).args(["-qec", &zklock_line, "/dev/null"]).stdin(Stdio::piped()),
    );
    let mut keyboard = terminal.0.stdin.take().unwrap();
    std::io::Write::write_all(&mut keyboard, b"first\n").unwrap();
    log_has(&log, "read first").await;
    std::io::Write::write_all(&mut keyboard, b"\x03").unwrap(); // Ctrl-C
    log_has(&log, "got INT").await;
    tokio::time::sleep(Duration::from_millis(300)).await; // room for a second delivery
    let typed = std::io::Write::write_all(&mut keyboard, b"second\n");
    assert!(typed.is_ok(), "{typed:?}: {:?} {}", terminal.0.try_wait(), read(&log));
    assert!(terminal.wait(Duration::from_secs(20)).success());
    let text = read(&log);
    assert_eq!(text.matches("got INT").count(), 1, "{text}");
    assert!(text.contains("read second"), "{text}");
}

/// A semaphore's lease carries the same node data as a lock's (who holds it), and takes the same
/// loss policy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_semaphore_lease_says_who_holds_it_and_takes_a_loss_policy() {
    let path = unique_path("cli-semaphore-data");
    let zk = server().connect_string();
    let mut holder = Group::spawn(
        zklock(&zk)
            .args(["--semaphore", "2", "--loss-policy", "any-disconnection"])
            .arg(&path)
            .args(["--", "sleep", "60"]),
    );
    let client = connect().await;
    let leases = format!("{path}/leases");
    wait_for_children(&client, &leases, 1).await;
    let lease = common::children(&client, &leases).await.remove(0);
    let (data, _) = client.get_data(&format!("{leases}/{lease}")).await.unwrap();
    assert!(String::from_utf8_lossy(&data).starts_with("zklock pid "), "{data:?}");
    holder.signal_job(libc::SIGTERM);
    holder.wait(Duration::from_secs(30));
    wait_for_children(&client, &leases, 0).await;
}

/// TLS end to end, against a server with a TLS port (the harness makes a throwaway CA): with
/// `--tls-ca` the command runs under the lock; without it, plaintext to the TLS port cannot
/// connect, and zklock says so with exit 69.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tls_port_is_reached_with_its_ca_and_not_without() {
    let mut options = ServerOptions::default();
    options.tls = true;
    let server = tokio::task::spawn_blocking(move || ZooKeeperServer::start_with(&options)).await.unwrap().unwrap();
    let secure = server.secure_connect_string().expect("a TLS port");
    let ca = server.tls_ca_pem().expect("the CA's certificate");
    let path = unique_path("cli-tls");
    let output =
        zklock(&secure).arg("--tls-ca").arg(ca).arg(&path).args(["--", "sh", "-c", "echo \"$ZKLOCK_NODE\""]).output();
    let output = output.unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(String::from_utf8_lossy(&output.stdout).starts_with(&format!("{path}/")));
    let plaintext = zklock(&secure).args(["--connect-timeout", "3s"]).arg(&path).args(["--", "true"]).output();
    assert_eq!(plaintext.unwrap().status.code(), Some(UNAVAILABLE));
}
