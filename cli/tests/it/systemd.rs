//! zklock as a systemd service's main process, stopped as systemd stops it: `KillMode=mixed`
//! (SIGTERM to zklock alone) or `control-group` (SIGTERM to every process of the unit), then,
//! after `TimeoutStopSec`, SIGKILL to every process left. A command that ignores SIGTERM must
//! not keep the lock past zklock's `--kill-after`: zklock kills its tree, deletes its node and
//! closes its session before systemd's SIGKILL, so a restarted unit takes the lock at once
//! rather than after the session timeout. `systemd-run` needs systemd as PID 1, which test
//! machines and containers lack: the unit's process tree is simulated here, signal for signal.
//! docs/zklock@.service is the unit the docs recommend: its values are checked against
//! zklock's defaults, and its own stop is run.

use crate::common;
use crate::support;

use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use common::interop::temp_log;
use common::{connect, server, unique_path};
use support::{bare_zklock, log_has, read, Group};

/// What a command killed with SIGKILL exits with, passed on by zklock.
const KILLED: i32 = 128 + libc::SIGKILL;

/// How systemd signals a unit's processes when it stops it.
#[derive(Clone, Copy, Debug)]
enum KillMode {
    /// SIGTERM to the main process (zklock) alone.
    Mixed,
    /// SIGTERM to every process of the unit at once.
    ControlGroup,
}

/// A command that ignores SIGTERM, with a child that ignores it too, each logging its pid as
/// /proc shows it (in the command's PID namespace `$$` is another number), and the command its
/// lock node.
fn ignoring_sigterm(log: &Path) -> String {
    let log = log.display();
    format!(
        "trap '' TERM; read -r pid rest < /proc/self/stat; echo \"command $pid $ZKLOCK_NODE\" >> {log}; \
         (read -r pid rest < /proc/self/stat; echo \"grandchild $pid\" >> {log}; while :; do sleep 0.05; done) & \
         while :; do sleep 0.05; done"
    )
}

/// The pids the command and its child logged, and the command's lock node.
fn logged(log: &Path) -> (Vec<libc::pid_t>, String) {
    let text = read(log);
    let field = |who: &str, n: usize| {
        let line = text.lines().find(|line| line.starts_with(who)).unwrap_or_else(|| panic!("{who} in {text}"));
        line.split_whitespace().nth(n).unwrap_or_else(|| panic!("{line}")).to_owned()
    };
    let pids = [field("command ", 1), field("grandchild ", 1)].map(|pid| pid.parse().unwrap());
    (pids.to_vec(), field("command ", 2))
}

/// The unit's processes, as its cgroup would list them: `main` and all its descendants.
fn unit_processes(main: libc::pid_t) -> Vec<libc::pid_t> {
    let parents: Vec<(libc::pid_t, libc::pid_t)> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok()?.parse().ok())
        .filter_map(|pid: libc::pid_t| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            Some((pid, stat[stat.rfind(')')? + 1..].split_whitespace().nth(1)?.parse().ok()?))
        })
        .collect();
    let mut unit = vec![main];
    let mut next = 0;
    while let Some(&parent) = unit.get(next) {
        unit.extend(parents.iter().filter(|(_, of)| *of == parent).map(|(pid, _)| *pid));
        next += 1;
    }
    unit
}

/// Sends `signal` to every process of the unit once, as systemd does to a cgroup: again over
/// the unit's processes until no new one shows up.
fn signal_unit(main: libc::pid_t, signal: libc::c_int) {
    let mut signalled = Vec::new();
    loop {
        let new: Vec<libc::pid_t> = unit_processes(main).into_iter().filter(|pid| !signalled.contains(pid)).collect();
        if new.is_empty() {
            return;
        }
        for &pid in &new {
            // SAFETY: kill of a process of the tree this test started.
            unsafe { libc::kill(pid, signal) };
        }
        signalled.extend(new);
    }
}

/// Stops the unit whose main process `zklock` is, as systemd does with `mode` and
/// `timeout_stop` (TimeoutStopSec): SIGTERM, then SIGKILL to every process still there once
/// the timeout has passed. zklock's status (killed with SIGKILL if it waited that long).
fn stop_unit(zklock: &mut Group, mode: KillMode, timeout_stop: Duration) -> ExitStatus {
    let main = zklock.0.id() as libc::pid_t;
    match mode {
        // SAFETY: kill of the zklock this test started, not yet reaped.
        KillMode::Mixed => unsafe {
            libc::kill(main, libc::SIGTERM);
        },
        KillMode::ControlGroup => signal_unit(main, libc::SIGTERM),
    }
    let asked = Instant::now();
    while asked.elapsed() < timeout_stop {
        if let Some(status) = zklock.0.try_wait().unwrap() {
            return status;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    signal_unit(main, libc::SIGKILL);
    zklock.wait(Duration::from_secs(10))
}

/// Whether `pid` is gone (not even a zombie).
fn gone(pid: libc::pid_t) -> bool {
    // SAFETY: signal 0 only checks for the process.
    unsafe { libc::kill(pid, 0) == -1 && *libc::__errno_location() == libc::ESRCH }
}

/// Starts `zklock` (a unit's ExecStart) with the command that ignores SIGTERM, stops it as
/// systemd would, and checks that it released before it exited: its node gone by the time it
/// has, nothing of the command left, and another zklock taking the lock at once (`-n`) while the
/// first's session, had it not been closed, would still be alive.
async fn stopped_unit_releases_at_once(zklock: Command, path: &str, mode: KillMode, timeout_stop: Duration) {
    stopped_unit_hands_over_at_once(zklock, path, mode, timeout_stop, &["-n"]).await;
}

/// As [`stopped_unit_releases_at_once`], for a mode whose next participant takes the path
/// with `next` (an election's `elect --timeout`).
async fn stopped_unit_hands_over_at_once(
    mut zklock: Command,
    path: &str,
    mode: KillMode,
    timeout_stop: Duration,
    next: &[&str],
) {
    let log = temp_log(&format!("systemd-{}", path.rsplit('/').next().unwrap()));
    let client = connect().await;
    let mut unit = Group::spawn(zklock.args(["--", "sh", "-c", &ignoring_sigterm(&log)]).stderr(Stdio::piped()));
    log_has(&log, "grandchild ").await;
    let (pids, node) = logged(&log);
    assert!(client.check_stat(&node).await.unwrap().is_some(), "{node} held while the command runs");
    let stopped = Instant::now();
    let status = stop_unit(&mut unit, mode, timeout_stop);
    println!("{mode:?}: zklock ended {:?} after the stop ({status:?})", stopped.elapsed());
    let exists = client.check_stat(&node).await.unwrap();
    let stderr = unit.stderr();
    assert!(exists.is_none(), "{mode:?}: {node} still there once zklock ended ({status:?}): {stderr}");
    assert_eq!(status.code(), Some(KILLED), "{mode:?}: zklock exits with its killed command's status: {stderr}");
    assert!(stderr.contains("did not end within --kill-after"), "{stderr}");
    assert!(pids.iter().all(|&pid| gone(pid)), "{mode:?}: the command's processes {pids:?} outlived zklock");
    let next = bare_zklock().args(["--zk", &server().connect_string()]).args(next).args([path, "--", "true"]).status();
    assert!(next.unwrap().success(), "{mode:?}: the lock is free for the restarted unit");
}

/// zklock with a session far longer than its grace: a lock freed by the end of that session
/// would not be free when the test looks.
fn zklock_with_long_session(path: &str) -> Command {
    let mut zklock = bare_zklock();
    zklock.args(["--zk", &server().connect_string(), "--session-timeout", "40s", "--kill-after", "1s", path]);
    zklock
}

/// systemd's TimeoutStopSec in these tests: longer than the grace, shorter than the session.
const TIMEOUT_STOP: Duration = Duration::from_secs(20);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_mode_mixed_with_a_command_that_ignores_sigterm_releases_before_the_timeout() {
    for namespace in ["0", "1"] {
        let path = unique_path("systemd-mixed");
        let mut zklock = zklock_with_long_session(&path);
        zklock.env("ZKLOCK_PID_NAMESPACE", namespace);
        stopped_unit_releases_at_once(zklock, &path, KillMode::Mixed, TIMEOUT_STOP).await;
    }
}

/// The same stop for `elect` with a command: the latch's node goes before zklock ends, and
/// the next participant leads at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_mode_mixed_with_a_leader_that_ignores_sigterm_hands_over_before_the_timeout() {
    let path = unique_path("systemd-mixed-elect");
    let mut zklock = bare_zklock();
    zklock.args(["--zk", &server().connect_string(), "--session-timeout", "40s", "--kill-after", "1s", "elect", &path]);
    stopped_unit_hands_over_at_once(zklock, &path, KillMode::Mixed, TIMEOUT_STOP, &["elect", "--timeout", "5s"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_mode_control_group_with_a_command_that_ignores_sigterm_releases_before_the_timeout() {
    let path = unique_path("systemd-control-group");
    stopped_unit_releases_at_once(zklock_with_long_session(&path), &path, KillMode::ControlGroup, TIMEOUT_STOP).await;
}

/// A second SIGTERM (an operator who will not wait for the grace) kills the command at once:
/// with a grace of an hour, zklock ends only because of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_sigterm_kills_the_command_and_releases_at_once() {
    let path = unique_path("systemd-second-term");
    let log = temp_log("systemd-second-term");
    let shown = log.display();
    let command = format!(
        "trap 'echo got TERM >> {shown}' TERM; echo \"command 0 $ZKLOCK_NODE\" >> {shown}; \
         (trap '' TERM; while :; do sleep 0.05; done) & while :; do sleep 0.05; done"
    );
    let client = connect().await;
    let mut zklock = bare_zklock();
    zklock.args(["--zk", &server().connect_string(), "--session-timeout", "40s", "--kill-after", "1h", &path]);
    let mut unit = Group::spawn(zklock.args(["--", "sh", "-c", &command]).stderr(Stdio::piped()));
    log_has(&log, "command ").await;
    let node = read(&log).split_whitespace().nth(2).unwrap().to_owned();
    let main = unit.0.id() as libc::pid_t;
    // SAFETY: kill of the zklock this test started, not yet reaped.
    unsafe { libc::kill(main, libc::SIGTERM) };
    log_has(&log, "got TERM").await;
    assert!(client.check_stat(&node).await.unwrap().is_some(), "held in the grace");
    // SAFETY: as above.
    unsafe { libc::kill(main, libc::SIGTERM) };
    let status = unit.wait(Duration::from_secs(20));
    let stderr = unit.stderr();
    assert_eq!(status.code(), Some(KILLED), "{stderr}");
    assert!(stderr.contains("SIGTERM again"), "{stderr}");
    assert!(client.check_stat(&node).await.unwrap().is_none(), "{node} released before zklock ended");
}

/// docs/zklock@.service, as (section, key, value) lines.
fn recommended_unit() -> Vec<(String, String, String)> {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/zklock@.service")).unwrap();
    let mut section = String::new();
    let mut lines = Vec::new();
    for line in text.lines().map(str::trim).filter(|line| !line.is_empty() && !line.starts_with('#')) {
        if let Some(name) = line.strip_prefix('[').and_then(|rest| rest.strip_suffix(']')) {
            section = name.to_owned();
            continue;
        }
        let (key, value) = line.split_once('=').unwrap_or_else(|| panic!("not key=value: {line}"));
        lines.push((section.clone(), key.to_owned(), value.to_owned()));
    }
    lines
}

/// The value of `[Service]`'s `key` in the recommended unit.
fn service(unit: &[(String, String, String)], key: &str) -> String {
    let mut values = unit.iter().filter(|(section, name, _)| section == "Service" && name == key);
    let (_, _, value) = values.next().unwrap_or_else(|| panic!("{key}= in [Service]"));
    assert!(values.next().is_none(), "{key}= set twice");
    value.clone()
}

/// A systemd time span as the unit writes them ("20s").
fn seconds(span: &str) -> Duration {
    let whole = span.strip_suffix('s').unwrap_or_else(|| panic!("{span}: write seconds, 20s"));
    Duration::from_secs(whole.parse().unwrap())
}

/// zklock's default for `--option`, as --help says it ("[default: 10s]").
fn default_of(option: &str) -> Duration {
    let help = String::from_utf8(bare_zklock().arg("--help").output().unwrap().stdout).unwrap();
    let from = &help[help.find(&format!("--{option} <")).unwrap_or_else(|| panic!("--{option} in --help"))..];
    let default = from.split("[default: ").nth(1).unwrap().split(']').next().unwrap();
    seconds(default)
}

/// What the unit recommends agrees with zklock's defaults and exit codes: the grace below
/// TimeoutStopSec with room for the release, only a stop's status counted as success.
#[test]
fn the_recommended_unit_stops_before_systemd_kills() {
    let unit = recommended_unit();
    assert_eq!(service(&unit, "Type"), "exec");
    assert_eq!(service(&unit, "KillMode"), "mixed");
    let exec: Vec<String> = service(&unit, "ExecStart").split_whitespace().map(str::to_owned).collect();
    assert_eq!(exec[0], "/usr/local/bin/zklock");
    assert!(exec.contains(&"--".to_owned()), "the command after --: {exec:?}");
    let grace = match exec.iter().position(|word| word == "--kill-after") {
        Some(at) => seconds(&exec[at + 1]),
        None => default_of("kill-after"),
    };
    let timeout_stop = seconds(&service(&unit, "TimeoutStopSec"));
    assert!(grace + Duration::from_secs(5) <= timeout_stop, "--kill-after {grace:?}, TimeoutStopSec {timeout_stop:?}");
    assert!(grace < Duration::from_secs(90), "below systemd's default TimeoutStopSec too");
    assert!(default_of("session-timeout") > Duration::ZERO);
    assert_eq!(service(&unit, "SuccessExitStatus"), (128 + libc::SIGTERM).to_string());
    assert!(seconds(&service(&unit, "RestartSec")) >= Duration::from_secs(3), "5 starts in 10s is systemd's limit");
}

/// A configuration error is not restarted for ever (every 5 s): the codes zklock exits with on
/// a bad option (64), a refusal (77) and a command that is not there (127) are the unit's
/// RestartPreventExitStatus; a loss (76) and a deadlock's victim (79) are restarted.
#[test]
fn the_recommended_unit_does_not_restart_a_configuration_error() {
    let unit = recommended_unit();
    let prevented: Vec<i32> =
        service(&unit, "RestartPreventExitStatus").split_whitespace().map(|code| code.parse().unwrap()).collect();
    let bad_option = bare_zklock().args(["--session-timeout", "soon", "/p", "--", "true"]).output().unwrap();
    let bad_option = bad_option.status.code().unwrap();
    assert_eq!(bad_option, 64);
    for code in [bad_option, 77, 126, 127] {
        assert!(prevented.contains(&code), "{code} is not in RestartPreventExitStatus {prevented:?}");
    }
    for code in [69, 76, 79, 128 + libc::SIGTERM] {
        assert!(!prevented.contains(&code), "{code} is restarted");
    }
}

/// The recommended unit's own stop, its ExecStart run with the lock path and the command put in
/// for %i, stopped with its KillMode and TimeoutStopSec.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_recommended_units_stop_releases_at_once() {
    let unit = recommended_unit();
    let path = unique_path("systemd-recommended");
    let exec = service(&unit, "ExecStart");
    let words: Vec<&str> = exec.split_whitespace().take_while(|word| *word != "--").collect();
    let mut zklock = bare_zklock();
    zklock.env("ZKLOCK_ZK", server().connect_string());
    for word in &words[1..] {
        zklock.arg(word.replace("/locks/%i", &path));
    }
    let mode = match service(&unit, "KillMode").as_str() {
        "mixed" => KillMode::Mixed,
        "control-group" => KillMode::ControlGroup,
        other => panic!("KillMode={other} is not simulated here"),
    };
    stopped_unit_releases_at_once(zklock, &path, mode, seconds(&service(&unit, "TimeoutStopSec"))).await;
}
