//! Standard output that goes away or fills up: no panic, an exit code, and a holder that lets go
//! at once.

use crate::common;
use crate::support;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{connect, server, unique_path, wait_for_children};
use support::{bare_zklock, Group};

/// Exit code of a process whose reader went away, as if SIGPIPE had killed it.
const READER_GONE: i32 = 128 + libc::SIGPIPE;
const CANNOT_WRITE: i32 = 74;

/// zklock with a session long enough that a node gone within the tests' patience was released,
/// not expired.
fn patient_zklock() -> Command {
    let mut command = bare_zklock();
    command.args(["--zk", &server().connect_string(), "--session-timeout", "30s"]);
    command
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hold_piped_into_true_releases_at_once_without_a_panic() {
    let path = unique_path("output-hold-true");
    let line = format!("{} hold {path} | true; echo \"${{PIPESTATUS[0]}}\"", shell_words(&patient_zklock()));
    let output = Command::new("bash").args(["-c", &line]).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), READER_GONE.to_string(), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    let client = connect().await;
    wait_for_children(&client, &path, 0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_whose_reader_goes_after_reading_the_node_releases_at_once() {
    let path = unique_path("output-hold-reader");
    let mut holder = Group::spawn(patient_zklock().args(["hold", &path]).stdout(Stdio::piped()));
    let mut line = String::new();
    BufReader::new(holder.0.stdout.as_mut().unwrap()).read_line(&mut line).unwrap();
    let client = connect().await;
    wait_for_children(&client, &path, 1).await;
    drop(holder.0.stdout.take()); // the script that read the node is done
    assert_eq!(holder.wait(Duration::from_secs(20)).code(), Some(READER_GONE));
    wait_for_children(&client, &path, 0).await;
}

#[test]
fn list_into_a_full_disk_or_a_closed_pipe_exits_without_a_panic() {
    let path = unique_path("output-list");
    let full = patient_zklock().args(["list", &path]).stdout(std::fs::File::create("/dev/full").unwrap()).output();
    let full = full.unwrap();
    assert_eq!(full.status.code(), Some(CANNOT_WRITE), "{full:?}");
    assert_eq!(String::from_utf8_lossy(&full.stderr).lines().count(), 1, "{full:?}");
    let mut list = patient_zklock();
    let mut closed =
        list.args(["list", "--json", &path]).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    drop(closed.stdout.take()); // `| head -1` that has read its line
    let closed = closed.wait_with_output().unwrap();
    assert_eq!(closed.status.code(), Some(READER_GONE), "{closed:?}");
    assert!(closed.stderr.is_empty(), "{closed:?}");
}

/// `command` as a shell line (its arguments need no quoting here).
fn shell_words(command: &Command) -> String {
    let mut words = vec![command.get_program().to_string_lossy().into_owned()];
    words.extend(command.get_args().map(|arg| arg.to_string_lossy().into_owned()));
    words.join(" ")
}
