//! `zklock revoke NODE`: asks a lock's holder to let go, and writes to nothing else.

use crate::common;
use crate::support;

use std::process::Output;
use std::time::Duration;

use common::{connect, eventually, server, unique_path, wait_for_children};
use support::{hold, zklock, Group, USAGE};
use zookeeper_client::{Acls, CreateMode};

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

/// The revocation is the outcome a script acts on: once the request is written, `revoke` exits 0
/// even if its line cannot be printed (a full disk, a reader that left), and says so on stderr.
#[test]
fn revoke_that_cannot_print_its_line_still_says_it_revoked() {
    let zk = server().connect_string();
    let (mut holder, node) = hold(&zk, &[], &unique_path("cli-revoke-full"));
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
    let revoked = zklock(&zk).args(["revoke", &node]).stdout(full).output().unwrap();
    assert!(revoked.status.success(), "{revoked:?}");
    let stderr = String::from_utf8_lossy(&revoked.stderr);
    assert!(stderr.contains("asked the holder") && stderr.contains("cannot write"), "{stderr}");
    assert_eq!(holder.wait(Duration::from_secs(20)).code(), Some(0), "the holder was asked and let go");
}

fn revoke(zk: &str, node: &str) -> Output {
    zklock(zk).args(["revoke", node]).output().unwrap()
}

/// A revocation request overwrites the node's data, so anything but a lock participant's node is
/// refused with one line and the usage code, and keeps its data.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revoke_refuses_every_node_that_is_not_a_lock_participants() {
    let zk = server().connect_string();
    let client = connect().await;
    let path = unique_path("revoke-refused");
    let (_holder, _) = hold(&zk, &[], &path);
    let config = format!("{path}-config");
    client
        .create(&config, br#"{"db":"primary"}"#, &CreateMode::Persistent.with_acls(Acls::anyone_all()))
        .await
        .unwrap();
    // Named as a lock node, but persistent: no holder's session owns it.
    let parent = format!("{path}-persistent");
    client.create(&parent, b"", &CreateMode::Persistent.with_acls(Acls::anyone_all())).await.unwrap();
    let sequential = CreateMode::PersistentSequential.with_acls(Acls::anyone_all());
    let prefix = format!("{parent}/_c_6ba7b810-9dad-11d1-80b4-00c04fd430c8-lock-");
    client.create(&prefix, b"x", &sequential).await.unwrap();
    let named_like_a_lock = format!("{parent}/{}", common::children(&client, &parent).await[0]);
    let election = unique_path("revoke-election");
    let _leader = Group::spawn(zklock(&zk).args(["elect", &election, "--", "sleep", "60"]));
    wait_for_children(&client, &election, 1).await;
    let leader_node = format!("{election}/{}", common::children(&client, &election).await[0]);
    for node in [config.as_str(), &path, &named_like_a_lock, &leader_node, "relative"] {
        let refused = revoke(&zk, node);
        assert_eq!(refused.status.code(), Some(USAGE), "{node}: {refused:?}");
        assert_eq!(refused.stderr.iter().filter(|b| **b == b'\n').count(), 1, "{node}: {refused:?}");
    }
    assert_eq!(client.get_data(&config).await.unwrap().0, br#"{"db":"primary"}"#, "the configuration is untouched");
    let (id, _) = client.get_data(&leader_node).await.unwrap();
    assert_ne!(id, b"__REVOKE__", "the leader's id is untouched");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revoking_a_node_that_does_not_exist_fails() {
    let zk = server().connect_string();
    let path = unique_path("revoke-missing");
    let missing = revoke(&zk, &format!("{path}/_c_6ba7b810-9dad-11d1-80b4-00c04fd430c8-__WRIT__0000000007"));
    assert_eq!(missing.status.code(), Some(1), "{missing:?}");
    assert!(String::from_utf8_lossy(&missing.stderr).contains("does not exist"), "{missing:?}");
    let client = connect().await;
    assert!(client.check_stat(&path).await.unwrap().is_none(), "revoke created nothing");
}

/// A holder that carries on after a revocation request writes its own data back, so `list`
/// shows who holds, not `__REVOKE__`: for a command's lock and for `hold`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_shows_a_holder_that_ignored_a_revocation_as_itself() {
    let zk = server().connect_string();
    let client = connect().await;
    let running = unique_path("revoke-ignored-run");
    let _run = Group::spawn(zklock(&zk).args(["--on-revoke", "ignore", &running, "--", "sleep", "60"]));
    wait_for_children(&client, &running, 1).await;
    let run_node = format!("{running}/{}", common::children(&client, &running).await[0]);
    let (_holder, hold_node) = hold(&zk, &["--on-revoke", "ignore"], &unique_path("revoke-ignored-hold"));
    for node in [run_node, hold_node] {
        assert!(revoke(&zk, &node).status.success());
        let lock_path = &node[..node.rfind('/').unwrap()];
        eventually("the holder shows as itself again", || async {
            let listed = zklock(&zk).args(["list", "--json", lock_path]).output().unwrap();
            let json: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
            json["queues"][0]["nodes"][0]["data"].as_str().unwrap_or("").starts_with("zklock pid ")
        })
        .await;
    }
}
