//! Running a command under a lock with `zklock PATH -- COMMAND`: exclusion, the lock's
//! environment, giving up, flock's sides, one kind of lock per path, semaphores.

use crate::common;
use crate::support;

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use common::interop::{check_leases, check_log, temp_log};
use common::{connect, server, unique_path, wait_for_children};
use support::{hold, zklock, Group, TIMED_OUT, USAGE};
use zookeeper_client::Client;

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
        // One line, or none when -E 0 makes busy a success (tests/quiet.rs).
        assert_eq!(stderr.lines().count(), usize::from(code != 0), "{stderr}");
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
        (
            vec!["--kazoo", "--read"],
            vec![vec!["--kazoo"], vec![], vec!["--mutex"], vec!["--semaphore", "1", "--kazoo"]],
        ),
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

#[test]
fn a_semaphore_of_three_lets_exactly_three_run_at_once() {
    let log = temp_log("cli-semaphore");
    run_logged(5, &["--semaphore", "3"], &unique_path("cli-semaphore"), &log, "lease", "1");
    let expected: Vec<(String, u32)> = (0..5).map(|i| (format!("run-{i}"), 1)).collect();
    let expected: Vec<(&str, u32)> = expected.iter().map(|(n, c)| (n.as_str(), *c)).collect();
    assert_eq!(check_leases(&log, 3, &expected), 3, "three ran together");
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

/// Every mode runs on an eighth of the usual 8 MiB main-thread stack: a debug build copies a
/// future's whole state machine onto the stack at each poll, and the semaphore's mode once
/// overflowed 8 MiB (the main thread polls the command's future). 1 MiB is four times what the
/// deepest mode uses now (measured with `ulimit -s`), so the check fails on a regression of that
/// size, not on a small change.
#[test]
fn every_mode_runs_on_an_eighth_of_the_usual_stack() {
    use std::os::unix::process::CommandExt as _;
    let zk = server().connect_string();
    let path = unique_path("cli-stack");
    let (mutex, kazoo, semaphore) = (format!("{path}-mutex"), format!("{path}-kazoo"), format!("{path}-semaphore"));
    let (election, held) = (format!("{path}-election"), format!("{path}-held"));
    // Each mode with the exit code it gives here: the runs hold and let go; `hold` finds the
    // path held (a holder is started beside it), `list` and `leader` find nobody, `deadlocks`
    // no lock under the path (its runs let go).
    let modes: [(&[&str], i32); 10] = [
        (&[&path, "--", "true"], 0),
        (&["--read", &path, "--", "true"], 0),
        (&["--mutex", &mutex, "--", "true"], 0),
        (&["--kazoo", &kazoo, "--", "true"], 0),
        (&["--semaphore", "2", &semaphore, "--", "true"], 0),
        (&["elect", &election, "--", "true"], 0),
        (&["hold", "--timeout", "0", &held], TIMED_OUT),
        (&["list", &path], 1),
        (&["leader", &election], 1),
        (&["deadlocks", &path], 3),
    ];
    let (_holder, _) = hold(&zk, &[], &held);
    for (mode, code) in modes {
        let mut command = zklock(&zk);
        command.args(mode);
        // SAFETY: getrlimit and setrlimit are async-signal-safe; nothing else runs between fork
        // and exec.
        unsafe {
            command.pre_exec(|| {
                let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
                if libc::getrlimit(libc::RLIMIT_STACK, &mut limit) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                limit.rlim_cur = limit.rlim_max.min(1 << 20);
                if libc::setrlimit(libc::RLIMIT_STACK, &limit) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let output = command.output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(code), "zklock {mode:?}: {:?} {stderr}", output.status);
    }
}
