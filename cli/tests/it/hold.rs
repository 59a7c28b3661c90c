//! `zklock hold PATH`, what `-v` says, and holding for as long as it runs.

use crate::common;
use crate::support;

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::Duration;

use common::{connect, server, unique_path, wait_for_children};
use support::{hold, zklock, Group};
use zklock_testcontainers::Proxy;

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
    assert_eq!(holder.wait(Duration::from_secs(20)).code(), Some(support::TERMINATED));
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

/// Reads `holder`'s output lines in a thread of their own: each line arrives on the channel.
fn lines_of(holder: &mut Group) -> std::sync::mpsc::Receiver<String> {
    let stdout = holder.0.stdout.take().unwrap();
    let (send, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if send.send(line).is_err() {
                return;
            }
        }
    });
    lines
}

/// Waits until the server has expired the session that owns `node` (its node is gone): the
/// event a cut-off holder is kept cut off for, however long the server takes to get there.
async fn expired(node: &str) {
    let observer = connect().await;
    common::eventually(&format!("the server expired the session of {node}"), || async {
        observer.check_stat(node).await.unwrap().is_none()
    })
    .await;
}

/// The node of the next line `what` prints within 30 s.
fn next_node(lines: &std::sync::mpsc::Receiver<String>, what: &str) -> String {
    let line = lines.recv_timeout(Duration::from_secs(30)).unwrap_or_else(|_| panic!("{what} printed no line"));
    line.split_whitespace().next().unwrap_or_else(|| panic!("{what} printed {line:?}")).to_owned()
}

/// Cut off past their session's expiry: "held" means held without a gap, so `hold` and `elect`
/// without a command exit 76 by default; with `--retake` they take the lock (lead) again on a new
/// session and print the new node; the old node went with the old session, and a signal still
/// lets go of the new one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hold_and_elect_end_with_the_loss_code_when_their_session_expired() {
    for mode in ["hold", "elect"] {
        let path = unique_path(&format!("cli-held-{mode}"));
        let proxy = Proxy::start(server().address()).unwrap();
        let mut holder = Group::spawn(
            zklock(&proxy.connect_string()).args([mode, &path]).stdout(Stdio::piped()).stderr(Stdio::piped()),
        );
        let lines = lines_of(&mut holder);
        let node = next_node(&lines, mode);
        proxy.blackhole();
        expired(&node).await;
        proxy.heal();
        assert_eq!(holder.wait(Duration::from_secs(30)).code(), Some(support::LOST), "{mode}");
        assert!(lines.try_recv().is_err(), "{mode}: took it again");
        let stderr = holder.stderr();
        assert!(stderr.contains("lost") && !stderr.contains("taking it again"), "{mode}: {stderr}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retake_takes_it_again_after_their_session_expired() {
    let client = connect().await;
    for mode in ["hold", "elect"] {
        let path = unique_path(&format!("cli-campaign-{mode}"));
        let proxy = Proxy::start(server().address()).unwrap();
        let mut holder = Group::spawn(
            zklock(&proxy.connect_string())
                .args([mode, "--retake", &path])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped()),
        );
        let lines = lines_of(&mut holder);
        let first = next_node(&lines, mode);
        // Cut off past the 4 s session timeout: the server expires the session.
        proxy.blackhole();
        expired(&first).await;
        proxy.heal();
        let second = next_node(&lines, mode);
        assert_ne!(first, second, "{mode}");
        assert!(client.check_stat(&first).await.unwrap().is_none(), "{mode}: the old node went with its session");
        let owner = client.check_stat(&second).await.unwrap().expect("the new node exists").ephemeral_owner;
        assert_eq!(common::children(&client, &path).await.len(), 1, "{mode}: one node");
        holder.signal_job(libc::SIGTERM);
        assert_eq!(holder.wait(Duration::from_secs(20)).code(), Some(support::TERMINATED), "{mode}");
        assert!(common::children(&client, &path).await.is_empty(), "{mode}: released");
        assert_ne!(owner, 0);
        let stderr = holder.stderr();
        assert!(stderr.contains("taking it again"), "{mode}: {stderr}");
    }
}

/// An operator deleting the holder's node still ends `hold`, with the loss code: that is how one
/// makes a holder let go.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hold_whose_node_an_operator_deleted_ends_with_the_loss_code() {
    let path = unique_path("cli-hold-deleted");
    let zk = server().connect_string();
    let client = connect().await;
    let (mut holder, node) = hold(&zk, &[], &path);
    client.delete(&node, None).await.unwrap();
    assert_eq!(holder.wait(Duration::from_secs(20)).code(), Some(support::LOST));
}

/// Another kind of lock, or a semaphore of another N, arriving on the path while `hold` or a
/// command holds it would run beside it unseen: the holder ends with 76 and says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_layout_arriving_while_holding_ends_the_hold_loudly() {
    let zk = server().connect_string();
    let client = connect().await;
    let mutex_node = "_c_6ba7b810-9dad-11d1-80b4-00c04fd430c8-lock-";
    let lease_node = "leases/_c_6ba7b810-9dad-11d1-80b4-00c04fd430c8-lease-";
    let cases: [(&str, &[&str], &str, &str); 3] = [
        ("hold", &["hold"], mutex_node, ""),
        ("semaphore", &["hold", "--semaphore", "2"], lease_node, "zklock pid 1 on elsewhere, one of 3 leases"),
        ("command", &["--"], mutex_node, ""),
    ];
    for (case, mode, intruder, data) in cases {
        let path = unique_path(&format!("cli-intruder-{case}"));
        let mut command = zklock(&zk);
        match mode[0] {
            "--" => command.args([&path, "--", "sh", "-c", "echo held; exec sleep 60"]),
            _ => command.args(mode).arg(&path),
        };
        let mut holder = Group::spawn(command.stdout(Stdio::piped()).stderr(Stdio::piped()));
        // Held (and checked alone) before the intruder comes.
        next_node(&lines_of(&mut holder), case);
        let node = format!("{path}/{intruder}");
        let create = zookeeper_client::CreateMode::EphemeralSequential.with_acls(zookeeper_client::Acls::anyone_all());
        client.create(&node, data.as_bytes(), &create).await.unwrap();
        assert_eq!(holder.wait(Duration::from_secs(20)).code(), Some(support::LOST), "{case}");
        let stderr = holder.stderr();
        assert!(stderr.contains("no longer alone"), "{case}: {stderr}");
    }
}
