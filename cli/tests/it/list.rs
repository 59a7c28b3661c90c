//! `zklock list`: who holds, who waits.

use crate::common;
use crate::support;

use common::{connect, server, unique_path, wait_for_children};
use support::kazoo::Kazoo;
use support::{hold, zklock, Group};
use zookeeper_client::{Acls, CreateMode};

use zklock::hold::Hold;

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
    // Whose each node is and since when, the queue in order: the holder's node is the oldest.
    assert!(nodes.iter().all(|node| node["session"].as_str().is_some_and(|id| id.starts_with("0x"))), "{json}");
    assert!(nodes.iter().all(|node| node["for_ms"].as_u64().is_some()), "{json}");
    let created: Vec<u64> = nodes.iter().map(|node| node["created_ms"].as_u64().unwrap()).collect();
    assert!(created.windows(2).all(|pair| pair[0] <= pair[1]), "queue order is creation order: {json}");
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
    // Two kinds on one path can only come from outside zklock (a `zklock hold` ends as soon as
    // another kind arrives): a Curator write lock node and a Curator mutex node made by hand.
    let ephemeral = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
    client.mkdir(&path, &CreateMode::Persistent.with_acls(Acls::anyone_all())).await.unwrap();
    let writer = format!("{path}/_c_0b5e3c1e-58a4-4c4f-9b1a-8d1f00000000-__WRIT__");
    client.create(&writer, b"curator", &ephemeral).await.unwrap();
    let foreign = format!("{path}/_c_6ba7b810-9dad-11d1-80b4-00c04fd430c8-lock-");
    client.create(&foreign, b"curator", &ephemeral).await.unwrap();
    let listed = zklock(&zk).args(["list", "--json", &path]).output().unwrap();
    let json: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
    let kinds: Vec<&str> = json["queues"].as_array().unwrap().iter().map(|q| q["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["read-write", "mutex"]);
    for queue in json["queues"].as_array().unwrap() {
        assert_eq!(queue["nodes"][0]["role"], "holder", "{json}");
    }
}

/// kazoo's read-write layout, from real kazoo processes: a `WriteLock` holder and a `ReadLock`
/// waiting behind it are one queue of kind `kazoo-read-write`, with their sides.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_shows_a_kazoo_read_write_lock_as_one_queue_with_its_sides() {
    let path = unique_path("cli-list-kazoo-rw");
    let zk = server().connect_string();
    let client = connect().await;
    let _writer = Kazoo::start(&zk, "kazoo-writer", &[&format!("write:{path}")]);
    // Its first step, free to take, only tells that the process is up.
    let mut reader = Kazoo::start(&zk, "kazoo-reader", &[&format!("write:{path}-other"), &format!("read:{path}")]);
    reader.go();
    wait_for_children(&client, &path, 2).await;
    let listed = zklock(&zk).args(["list", "--json", &path]).output().unwrap();
    assert!(listed.status.success(), "{listed:?}");
    let json: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
    let queues = json["queues"].as_array().unwrap();
    assert_eq!(queues.len(), 1, "{json}");
    assert_eq!(queues[0]["kind"], "kazoo-read-write", "{json}");
    let nodes: Vec<(&str, &str, &str)> = queues[0]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|node| (node["role"].as_str().unwrap(), node["side"].as_str().unwrap(), node["data"].as_str().unwrap()))
        .collect();
    assert_eq!(nodes, [("holder", "write", "kazoo-writer"), ("waiter", "read", "kazoo-reader")], "{json}");
}

/// A semaphore of two leases with a third participant waiting: two holders, the third a
/// waiter, and each node's fencing token, pid and host as fields.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_json_shows_a_semaphores_holders_with_token_pid_and_host() {
    let path = unique_path("cli-list-semaphore");
    let zk = server().connect_string();
    let client = connect().await;
    let (first, _) = hold(&zk, &["--semaphore", "2"], &path);
    let (second, _) = hold(&zk, &["--semaphore", "2"], &path);
    let _third = Group::spawn(zklock(&zk).args(["--semaphore", "2", &path, "--", "true"]));
    wait_for_children(&client, &format!("{path}/leases"), 3).await;
    let listed = zklock(&zk).args(["list", "--json", &path]).output().unwrap();
    let json: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
    let queue = &json["queues"][0];
    assert_eq!(queue["kind"], "semaphore", "{json}");
    assert_eq!(queue["leases"], 2, "{json}");
    let leases: Vec<&serde_json::Value> = queue["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|node| node["node"].as_str().unwrap().contains("/leases/"))
        .collect();
    let roles: Vec<&str> = leases.iter().map(|node| node["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["holder", "holder", "waiter"], "{json}");
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    for (node, holder) in leases.iter().zip([&first, &second]) {
        assert_eq!(node["pid"], holder.0.id(), "{json}");
        assert_eq!(node["host"], host.trim(), "{json}");
        assert!(node["token"].as_i64().unwrap() > 0, "{json}");
    }
}

/// `list --json` prints what docs/cli.md documents: a read-write lock's queue (with `side`)
/// and a semaphore's (with `leases`) have every field of the table, of its type, and no other.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_json_is_the_documented_schema() {
    let zk = server().connect_string();
    let client = connect().await;
    let read_write = unique_path("cli-list-schema");
    let (_writer, _) = hold(&zk, &[], &read_write);
    let _reader = Group::spawn(zklock(&zk).args(["--read", &read_write, "--", "true"]));
    wait_for_children(&client, &read_write, 2).await;
    let semaphore = unique_path("cli-list-schema");
    let (_lease, _) = hold(&zk, &["--semaphore", "2"], &semaphore);
    let mut documents = Vec::new();
    for path in [&read_write, &semaphore] {
        let listed = zklock(&zk).args(["list", "--json", path]).output().unwrap();
        documents.push(serde_json::from_slice(&listed.stdout).unwrap());
    }
    support::assert_documented("zklock.list/1", &documents);
}

/// A lock built with `fail_on_deadlock` names its nodes with an owner-tagged uuid (version 8,
/// not version 4): `zklock list` reads them as any lock nodes, holder and waiter in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_shows_nodes_whose_uuids_carry_owner_tags() {
    let path = unique_path("cli-list-tagged");
    let zk = server().connect_string();
    let (client, other) = (connect().await, connect().await);
    let tagged = |client| zklock::InterProcessMutex::builder(client, &path).fail_on_deadlock(&path).build().unwrap();
    let held = tagged(&client).acquire().await.unwrap();
    let waiter = tagged(&other);
    let waiting = tokio::spawn(async move { waiter.acquire().await.map(drop) });
    wait_for_children(&client, &path, 2).await;
    let listed = zklock(&zk).args(["list", "--json", &path]).output().unwrap();
    assert!(listed.status.success(), "{listed:?}");
    let json: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
    let nodes = json["queues"][0]["nodes"].as_array().unwrap();
    let roles: Vec<&str> = nodes.iter().map(|node| node["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["holder", "waiter"], "{json}");
    assert!(nodes.iter().all(|node| node["node"].as_str().unwrap().contains("-87a6-")), "tagged: {json}");
    assert!(held.node_path().ends_with(nodes[0]["node"].as_str().unwrap()), "{json}");
    held.release().await.unwrap();
    waiting.await.unwrap().unwrap();
}

/// A zklock run by another's command lives in that one's PID namespace, where its own pid is 2
/// or 3: `list` names it by the pid the host sees, the one an operator can find and signal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_zklock_run_by_a_zklocks_command_is_listed_by_the_pid_the_host_sees() {
    let outer = unique_path("cli-list-outer");
    let inner = unique_path("cli-list-inner");
    let zk = server().connect_string();
    let client = connect().await;
    let _outer = Group::spawn(
        zklock(&zk).args([&outer, "--", env!("CARGO_BIN_EXE_zklock"), "--zk", &zk, &inner]).args(["--", "sleep", "30"]),
    );
    wait_for_children(&client, &inner, 1).await;
    let listed = zklock(&zk).args(["list", "--json", &inner]).output().unwrap();
    let json: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
    let pid = json["queues"][0]["nodes"][0]["pid"].as_u64().unwrap_or_else(|| panic!("{json}"));
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let args: Vec<&[u8]> = cmdline.split(|byte| *byte == 0).collect();
    assert!(
        args.contains(&inner.as_bytes()),
        "pid {pid} is not the inner zklock: {:?}",
        String::from_utf8_lossy(&cmdline)
    );
}

/// Issue 48, item 6: `zklock list` on a folder of locks said "nobody holds or waits" (exit 1).
/// It lists the queues of every lock under the folder, each under its own path (`path` in
/// JSON), in path order, and exits 0 when one is held; a folder with none still says nobody.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_on_a_folder_lists_every_lock_under_it() {
    let folder = unique_path("cli-list-folder");
    let zk = server().connect_string();
    let locks = [format!("{folder}/a"), format!("{folder}/deeper/b"), format!("{folder}/deeper/c")];
    let _holders: Vec<_> = locks.iter().map(|lock| hold(&zk, &[], lock)).collect();
    let listed = zklock(&zk).args(["list", "--json", &folder]).output().unwrap();
    assert!(listed.status.success(), "{listed:?}");
    let json: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!((&json["path"], &json["held"]), (&serde_json::json!(folder), &serde_json::json!(true)), "{json}");
    let paths: Vec<&str> =
        json["queues"].as_array().unwrap().iter().map(|queue| queue["path"].as_str().unwrap()).collect();
    assert_eq!(paths, locks.iter().map(String::as_str).collect::<Vec<_>>(), "{json}");
    let text = String::from_utf8(zklock(&zk).args(["list", &folder]).output().unwrap().stdout).unwrap();
    for lock in &locks {
        assert!(text.contains(&format!("{lock}: read-write lock")), "{lock} in {text}");
    }
    let empty = zklock(&zk).args(["list", &format!("{folder}-none")]).output().unwrap();
    assert_eq!(empty.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&empty.stdout).contains("nobody holds or waits"));
}
