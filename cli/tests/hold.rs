//! `zklock hold PATH` and what `-v` says.

#[path = "../../tests/common/mod.rs"]
mod common;
mod support;

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::Duration;

use common::{connect, server, unique_path, wait_for_children};
use support::{hold, zklock, Group};

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
