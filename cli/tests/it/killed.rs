//! zklock killed with SIGKILL (as a supervisor escalates, or the OOM killer does): its command
//! and everything the command started die with it, before anyone else can hold the lock or lead.

use crate::common;
use crate::support;

use std::path::Path;
use std::time::Duration;

use common::interop::temp_log;
use common::{connect, server, unique_path, wait_for_children};
use support::{log_has, read, zklock, Group};

/// A command that logs from itself and from a grandchild every 50 ms, ignoring SIGTERM, and
/// first logs its pid as /proc shows it (so the test can clean up after a zklock that let it run
/// on; in its PID namespace `$$` is another number).
fn stubborn_logger(log: &Path) -> String {
    let log = log.display();
    format!(
        "read -r pid rest < /proc/self/stat; echo \"A pid $pid\" >> {log}; trap '' TERM HUP; \
         (while :; do echo \"A grandchild\" >> {log}; sleep 0.05; done) & \
         while :; do echo \"A child\" >> {log}; sleep 0.05; done"
    )
}

/// Kills the process group of the command whose pid the log names, when dropped: a zklock
/// that lets its command outlive it must not leave it running after the test.
struct Leftovers<'a>(&'a Path);

impl Drop for Leftovers<'_> {
    fn drop(&mut self) {
        let text = read(self.0);
        let Some(pid) = text.lines().find_map(|line| line.strip_prefix("A pid ")) else { return };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{}/stat", pid.trim())) else { return };
        let Some(pgid) = stat.rsplit(')').next().and_then(|rest| rest.split_whitespace().nth(2)) else { return };
        // Never our own group (0) or anyone's but a command's.
        if let Ok(pgid @ 2..) = pgid.parse::<libc::pid_t>() {
            // SAFETY: killpg on the group of a command this test started.
            unsafe {
                libc::killpg(pgid, libc::SIGKILL);
            }
        }
    }
}

/// Kills the first zklock with SIGKILL while its command runs (a second waits on the path), and
/// checks from the shared log that no line of the first command comes after the second's first.
async fn killed_holder_stops_before_the_next_one_runs(mode: &[&str], path: &str, log: &Path) {
    let zk = server().connect_string();
    let _leftovers = Leftovers(log);
    let mut first = Group::spawn(zklock(&zk).args(mode).args([path, "--", "sh", "-c", &stubborn_logger(log)]));
    log_has(log, "A grandchild").await;
    let next = format!("echo B start >> {0}; echo B end >> {0}", log.display());
    let mut second = Group::spawn(zklock(&zk).args(mode).args([path, "--", "sh", "-c", &next]));
    let client = connect().await;
    wait_for_children(&client, path, 2).await;
    first.0.kill().unwrap(); // SIGKILL to zklock alone: nothing it could catch
    assert!(second.wait(Duration::from_secs(30)).success());
    let text = read(log);
    let lines: Vec<&str> = text.lines().collect();
    let b_start = lines.iter().position(|line| *line == "B start").expect("the next one ran");
    let late: Vec<&&str> = lines[b_start..].iter().filter(|line| line.starts_with('A')).collect();
    assert!(late.is_empty(), "the killed zklock's command ran beside the next one: {late:?}\n{text}");
    // Nor later: the old command's lines stop where they were.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let written = |text: &str| text.lines().filter(|line| line.starts_with('A')).count();
    assert_eq!(written(&read(log)), written(&text), "the killed zklock's command still runs");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_holder_killed_with_sigkill_takes_its_command_and_grandchild_along() {
    let log = temp_log("killed-lock");
    killed_holder_stops_before_the_next_one_runs(&[], &unique_path("killed-lock"), &log).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_killed_with_sigkill_takes_its_command_and_grandchild_along() {
    let log = temp_log("killed-leader");
    killed_holder_stops_before_the_next_one_runs(&["elect"], &unique_path("killed-leader"), &log).await;
}
