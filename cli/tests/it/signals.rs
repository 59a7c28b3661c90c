//! Signals as a supervisor and a shell expect them: answered at once in every wait, even while
//! ZooKeeper is out of reach.

use crate::common;
use crate::support;

use std::io::{BufRead, BufReader, Read};
use std::process::Stdio;
use std::sync::mpsc::Receiver;
use std::time::Duration;

use common::{server, unique_path};
use support::{zklock, Group};
use zklock_testcontainers::Proxy;

/// The lines `from` gives, each on the channel as it comes.
fn lines(from: impl Read + Send + 'static) -> Receiver<String> {
    let (send, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(from).lines().map_while(Result::ok) {
            if send.send(line).is_err() {
                return;
            }
        }
    });
    lines
}

/// Waits (at most a minute) for a line that contains `what`.
fn line_with(lines: &Receiver<String>, what: &str) -> String {
    loop {
        let line = lines.recv_timeout(Duration::from_secs(60)).unwrap_or_else(|_| panic!("no line with {what:?}"));
        if line.contains(what) {
            return line;
        }
    }
}

/// `hold --retake` cut off past its loss waits for ZooKeeper to take the lock again; a
/// supervisor's SIGTERM then still ends it (128+15) while the server stays out of reach.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hold_answers_sigterm_while_zookeeper_is_out_of_reach() {
    let path = unique_path("cli-sigterm-cut-off");
    let proxy = Proxy::start(server().address()).unwrap();
    let mut holder = Group::spawn(
        zklock(&proxy.connect_string()).args(["hold", "--retake", &path]).stdout(Stdio::piped()).stderr(Stdio::piped()),
    );
    let stdout = lines(holder.0.stdout.take().unwrap());
    let stderr = lines(holder.0.stderr.take().unwrap());
    line_with(&stdout, &path);
    proxy.blackhole();
    line_with(&stderr, "taking it again");
    holder.signal_job(libc::SIGTERM);
    assert_eq!(holder.wait(Duration::from_secs(30)).code(), Some(128 + libc::SIGTERM), "ended while cut off");
    drop(proxy);
}

/// A signal ends `hold` (and `elect` without a command) with 128+N whether it waited or held:
/// a script's `kill; wait` learns "ended by the signal" in one code, as from any job, and tells
/// it from a loss (76) or a revocation obeyed (0).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signal_ends_hold_and_elect_with_128_plus_n_waiting_or_holding() {
    let zk = server().connect_string();
    let client = common::connect().await;
    for mode in ["hold", "elect"] {
        let path = unique_path(&format!("signals-one-code-{mode}"));
        let mut holding = Group::spawn(zklock(&zk).args([mode, &path]).stdout(Stdio::piped()).stderr(Stdio::null()));
        let held = lines(holding.0.stdout.take().unwrap());
        held.recv_timeout(Duration::from_secs(30)).expect("held");
        let mut waiting = Group::spawn(zklock(&zk).args([mode, &path]).stdout(Stdio::null()).stderr(Stdio::null()));
        common::wait_for_children(&client, &path, 2).await;
        for (state, group) in [("waiting", &mut waiting), ("holding", &mut holding)] {
            group.signal_job(libc::SIGTERM);
            assert_eq!(group.wait(Duration::from_secs(20)).code(), Some(128 + libc::SIGTERM), "{mode} {state}");
        }
        common::wait_for_children(&client, &path, 0).await;
    }
}
