//! The `zklock` command, run as a user would run it, against a real server.

mod common;

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

use common::interop::{check_leases, check_log, temp_log};
use common::{connect, server, unique_path, wait_for_children};
use zklock_testcontainers::Proxy;

const TIMED_OUT: i32 = 75;
const LOST: i32 = 76;
const USAGE: i32 = 64;

fn zklock(zk: &str) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_zklock"));
    command.arg("--zk").arg(zk).arg("--session-timeout").arg("4s");
    // Its own process group, so a test can kill zklock and its command together.
    command.process_group(0);
    command
}

/// A shell command that logs entering and leaving, as the interop peers do.
fn logged(log: &Path, name: &str, mode: &str, seconds: &str) -> [String; 3] {
    let log = log.display();
    [
        "sh".into(),
        "-c".into(),
        format!("echo enter {name} {mode} >> {log}; sleep {seconds}; echo exit {name} {mode} >> {log}"),
    ]
}

/// Kills a process group when dropped (zklock and its command), so no test leaves one behind.
struct Group(Child);

impl Drop for Group {
    fn drop(&mut self) {
        // SAFETY: killpg on the group of a child we started.
        unsafe {
            libc::killpg(self.0.id() as libc::pid_t, libc::SIGKILL);
        }
        let _ = self.0.wait();
    }
}

fn wait_with_timeout(child: &mut Child, timeout: Duration) -> ExitStatus {
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(started.elapsed() < timeout, "zklock still running after {timeout:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_zklock_processes_never_run_their_commands_at_once() {
    let path = unique_path("cli-exclusion");
    let log = temp_log("cli-exclusion");
    let zk = server().connect_string();
    let mut runs: Vec<Group> = (0..3)
        .map(|i| {
            let name = format!("run-{i}");
            Group(zklock(&zk).arg(&path).arg("--").args(logged(&log, &name, "mutex", "0.3")).spawn().unwrap())
        })
        .collect();
    for run in &mut runs {
        assert!(wait_with_timeout(&mut run.0, Duration::from_secs(60)).success());
    }
    check_log(&log, &[("run-0", 1), ("run-1", 1), ("run-2", 1)]);
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
async fn timeout_exits_with_its_own_code_in_time() {
    let path = unique_path("cli-timeout");
    let zk = server().connect_string();
    let _holder = Group(zklock(&zk).arg(&path).args(["--", "sleep", "30"]).spawn().unwrap());
    let client = connect().await;
    wait_for_children(&client, &path, 1).await;
    let started = Instant::now();
    let output = zklock(&zk).args(["--timeout", "500ms"]).arg(&path).args(["--", "true"]).output().unwrap();
    assert_eq!(output.status.code(), Some(TIMED_OUT));
    assert!(started.elapsed() < Duration::from_secs(10), "took {:?}", started.elapsed());
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("timed out"), "{stderr}");
    assert_eq!(common::children(&client, &path).await.len(), 1, "the waiter left nothing behind");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_killed_with_sigkill_hands_over_within_the_session_timeout() {
    let path = unique_path("cli-sigkill");
    let zk = server().connect_string();
    let mut holder = Group(zklock(&zk).arg(&path).args(["--", "sleep", "60"]).spawn().unwrap());
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
    let mut run = Group(
        zklock(&proxy.connect_string())
            .args(["--kill-after", "2s"])
            .arg(&path)
            .arg("--")
            .args([
                "sh",
                "-c",
                &format!("trap 'echo stopped >> {}; kill $!; exit 0' TERM; sleep 60 & wait", log.display()),
            ])
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let client = connect().await;
    wait_for_children(&client, &path, 1).await;
    proxy.blackhole(); // the session will expire on the server
    let status = wait_with_timeout(&mut run.0, Duration::from_secs(30));
    assert_eq!(status.code(), Some(LOST));
    assert!(std::fs::read_to_string(&log).unwrap_or_default().contains("stopped"), "the command got SIGTERM");
    let mut stderr = String::new();
    std::io::Read::read_to_string(run.0.stderr.as_mut().unwrap(), &mut stderr).unwrap();
    assert!(stderr.contains("lock lost"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_to_zklock_reaches_the_command_and_the_lock_is_released() {
    let path = unique_path("cli-sigterm");
    let mut run = Group(zklock(&server().connect_string()).arg(&path).args(["--", "sleep", "60"]).spawn().unwrap());
    let client = connect().await;
    wait_for_children(&client, &path, 1).await;
    // SAFETY: kill(2) on our child.
    unsafe {
        libc::kill(run.0.id() as libc::pid_t, libc::SIGTERM);
    }
    let status = wait_with_timeout(&mut run.0, Duration::from_secs(20));
    assert_eq!(status.code(), Some(128 + libc::SIGTERM), "sleep died of the forwarded SIGTERM");
    assert!(common::children(&client, &path).await.is_empty(), "released before exit");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_semaphore_of_three_lets_exactly_three_run_at_once() {
    let path = unique_path("cli-semaphore");
    let log = temp_log("cli-semaphore");
    let zk = server().connect_string();
    let mut runs: Vec<Group> = (0..5)
        .map(|i| {
            let name = format!("run-{i}");
            let command = logged(&log, &name, "lease", "1");
            Group(zklock(&zk).args(["--semaphore", "3"]).arg(&path).arg("--").args(command).spawn().unwrap())
        })
        .collect();
    for run in &mut runs {
        assert!(wait_with_timeout(&mut run.0, Duration::from_secs(60)).success());
    }
    let expected: Vec<(String, u32)> = (0..5).map(|i| (format!("run-{i}"), 1)).collect();
    let expected: Vec<(&str, u32)> = expected.iter().map(|(n, c)| (n.as_str(), *c)).collect();
    assert_eq!(check_leases(&log, 3, &expected), 3, "three ran together");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_and_revoke_work_from_the_shell() {
    let path = unique_path("cli-list");
    let zk = server().connect_string();
    let _holder = Group(zklock(&zk).arg(&path).args(["--", "sleep", "30"]).spawn().unwrap());
    let client = connect().await;
    wait_for_children(&client, &path, 1).await;
    let listed = zklock(&zk).arg("list").arg(&path).output().unwrap();
    assert!(listed.status.success(), "{listed:?}");
    let stdout = String::from_utf8(listed.stdout).unwrap();
    assert!(stdout.contains(&format!("{path}/_c_")) && stdout.contains("zklock pid"), "{stdout:?} {:?}", listed.stderr);
    let node = stdout.split_whitespace().nth(1).unwrap();
    let revoked = zklock(&zk).arg("revoke").arg(node).output().unwrap();
    assert!(revoked.status.success(), "{revoked:?}");
}

#[test]
fn bad_input_is_one_line_and_a_documented_code() {
    let zk = "127.0.0.1:1";
    for args in
        [vec!["/x"], vec!["--", "true"], vec!["relative", "--", "true"], vec!["--timeout", "soon", "/x", "--", "true"]]
    {
        let output = zklock(zk).args(&args).output().unwrap();
        assert_eq!(output.status.code(), Some(USAGE), "{args:?}");
        assert_eq!(String::from_utf8_lossy(&output.stderr).lines().count(), 1, "{args:?}: {output:?}");
    }
    let output = zklock(zk).args(["--connect-timeout", "1s", "/x", "--", "true"]).output().unwrap();
    assert_eq!(output.status.code(), Some(69), "unreachable ZooKeeper");
    assert_eq!(String::from_utf8_lossy(&output.stderr).lines().count(), 1);
    let output = zklock(&server().connect_string())
        .args(["/zklock-tests/cli-missing", "--", "/no/such/command"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(127));
}
