//! `zklock list` and `zklock revoke`.

#[path = "../../tests/common/mod.rs"]
mod common;
mod support;

use std::time::Duration;

use common::{connect, server, unique_path, wait_for_children};
use support::{hold, zklock, Group};
use zookeeper_client::{Acls, CreateMode};

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
