//! `zklock list` and `zklock deadlocks` on a kazoo `Semaphore` made by real kazoo processes
//! (Debian's python3-kazoo) beside zklock, and `zklock --semaphore N --kazoo`, which shares it;
//! `zklock leader --kazoo` on a kazoo `Election`.

use crate::common;
use crate::support;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use common::interop::temp_log;
use common::{children, connect, eventually, server, unique_path};
use support::{hold, zklock, TIMED_OUT, USAGE};
use zklock::hold::Hold;
use zklock::{InterProcessSemaphoreV2, NodeSchema};

/// A kazoo participant (`interop/kazoo_locker.py`) of one round on `path`, holding its lease
/// for `hold_ms`; killed when dropped.
struct Kazoo(Child);

impl Kazoo {
    fn start(path: &str, mode: &str, hold_ms: u64, log: &Path, name: &str) -> Kazoo {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../interop/kazoo_locker.py");
        let mut child = Command::new("/usr/bin/python3")
            .arg(script)
            .args([&server().connect_string(), path, mode, "1", &hold_ms.to_string()])
            .arg(log)
            .arg(name)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start /usr/bin/python3 (install python3-kazoo: scripts/install-deps)");
        let mut ready = String::new();
        BufReader::new(child.stdout.as_mut().unwrap()).read_line(&mut ready).unwrap();
        assert_eq!(ready.trim(), format!("ready {name}"), "{name} was not ready");
        writeln!(child.stdin.as_mut().unwrap(), "go").unwrap();
        Kazoo(child)
    }
}

impl Drop for Kazoo {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

async fn entered(log: &Path, name: &str) {
    let line = format!("enter {name} ");
    eventually(&format!("{name} holds a lease"), || async {
        std::fs::read_to_string(log).is_ok_and(|text| text.contains(&line))
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_shows_a_kazoo_semaphores_leases_and_waiters_and_deadlocks_reads_its_gate() {
    let root = unique_path("cli-list-kazoo");
    let path = format!("{root}/semaphore");
    let gate = format!("{path}-__lock__");
    let log = temp_log("cli-list-kazoo");
    let zk = server().connect_string();
    let client = connect().await;
    let _holder = Kazoo::start(&path, "semaphore:2", 60_000, &log, "kazoo-holder");
    entered(&log, "kazoo-holder").await;
    let semaphore = InterProcessSemaphoreV2::builder(&client, &path, 2).node_schema(NodeSchema::Kazoo).build().unwrap();
    let lease = semaphore.try_acquire().await.unwrap().expect("a lease is free");
    // Two takers wait: kazoo holding the gate (for room), zklock's command behind it.
    let _taker = Kazoo::start(&path, "semaphore:2", 0, &log, "kazoo-taker");
    eventually("kazoo waits on the gate", || async { children(&client, &gate).await.len() == 1 }).await;
    let _waiter = support::Group::spawn(zklock(&zk).args(["--semaphore", "2", "--kazoo", &path, "--", "true"]));
    eventually("zklock waits on the gate", || async { children(&client, &gate).await.len() == 2 }).await;

    let listed = zklock(&zk).args(["list", "--json", &path]).output().unwrap();
    assert!(listed.status.success(), "{listed:?}");
    let json: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
    let queues = json["queues"].as_array().unwrap();
    assert_eq!(queues.len(), 1, "{json}");
    assert_eq!(queues[0]["kind"], "kazoo-semaphore", "{json}");
    assert_eq!(queues[0]["leases"], 2, "the maximum kazoo stored on the path: {json}");
    let nodes = queues[0]["nodes"].as_array().unwrap();
    let roles: Vec<(&str, bool)> = nodes
        .iter()
        .map(|node| (node["role"].as_str().unwrap(), node["node"].as_str().unwrap().starts_with(&gate)))
        .collect();
    assert_eq!(roles, [("holder", false), ("holder", false), ("waiter", true), ("waiter", true)], "{json}");
    let holders: Vec<&str> = nodes[..2].iter().map(|node| node["node"].as_str().unwrap()).collect();
    assert!(holders.contains(&lease.node_path()), "{json}");
    assert!(nodes[..2].iter().any(|node| node["data"] == "kazoo-holder"), "kazoo's identifier: {json}");
    // kazoo's Semaphore gives its gate lock its identifier as bytes, which the lock prints.
    assert_eq!(nodes[2]["data"], "b'kazoo-taker'", "the first on the gate waits for room: {json}");
    assert_eq!(nodes[3]["data"], "", "zklock's gate node carries no data (as in Curator's layout): {json}");
    assert!(nodes.iter().all(|node| node["token"].as_i64().is_some()), "{json}");
    // Every field documented, of its type, beside a read-write lock's document (which has `side`);
    // the kind is named in the table.
    let read_write = unique_path("cli-list-kazoo-rw");
    let (_writer, _) = hold(&zk, &[], &read_write);
    let listed = zklock(&zk).args(["list", "--json", &read_write]).output().unwrap();
    support::assert_documented("zklock.list/1", &[json.clone(), serde_json::from_slice(&listed.stdout).unwrap()]);
    let docs = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/cli.md")).unwrap();
    let kinds = docs.lines().find(|line| line.starts_with("| `queues[].kind`")).unwrap();
    assert!(kinds.contains("kazoo-semaphore"), "{kinds}");
    let text = String::from_utf8(zklock(&zk).args(["list", &path]).output().unwrap().stdout).unwrap();
    assert!(text.contains("kazoo-semaphore lock (--semaphore N --kazoo)") && text.contains("waiter"), "{text}");

    // The gate reads as a kazoo lock, whose first node (holding it, waiting for room) waits on
    // no node; the leases are no lock's queue: no ring, one lock read.
    let scanned = zklock(&zk).args(["deadlocks", "--json", &root]).output().unwrap();
    let report: serde_json::Value = serde_json::from_slice(&scanned.stdout).unwrap();
    assert_eq!(scanned.status.code(), Some(0), "{report}");
    assert_eq!((report["found"].as_str(), report["locks"].as_u64()), (Some("none"), Some(1)), "{report}");
    lease.release().await.unwrap();
    let _ = std::fs::remove_file(&log);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn semaphore_with_kazoo_shares_kazoos_semaphore_and_is_refused_another_n() {
    let path = unique_path("cli-kazoo-semaphore");
    let log = temp_log("cli-kazoo-semaphore");
    let zk = server().connect_string();
    let client = connect().await;
    let _holder = Kazoo::start(&path, "semaphore:2", 60_000, &log, "kazoo-holder");
    entered(&log, "kazoo-holder").await;
    let run = |options: &[&str]| zklock(&zk).args(options).arg(&path).args(["--", "true"]).output().unwrap();
    assert!(run(&["-n", "--semaphore", "2", "--kazoo"]).status.success(), "one of kazoo's two leases is free");
    let (_second, node) = hold(&zk, &["--semaphore", "2", "--kazoo"], &path);
    assert!(node.starts_with(&format!("{path}/")) && node.len() == path.len() + 33, "a kazoo lease: {node}");
    assert_eq!(
        run(&["-n", "--semaphore", "2", "--kazoo"]).status.code(),
        Some(TIMED_OUT),
        "kazoo and zklock hold both"
    );
    for (options, says) in [
        (&["--semaphore", "3", "--kazoo"][..], "stores max_leases 2, not 3"),
        (&["--semaphore", "2"][..], "cannot share"),
        (&["--kazoo"][..], "cannot share"),
    ] {
        let output = run(options);
        let stderr = String::from_utf8(output.stderr).unwrap();
        assert_eq!(output.status.code(), Some(USAGE), "{options:?}: {stderr}");
        assert!(stderr.contains(says) && stderr.lines().count() == 1, "{options:?}: {stderr}");
    }
    assert_eq!(children(&client, &path).await.len(), 2, "a refused acquire left a lease");
    assert!(children(&client, &format!("{path}-__lock__")).await.is_empty(), "a refused acquire left a gate node");
    let _ = std::fs::remove_file(&log);
}

/// A kazoo `Election` leading: `leader --kazoo` names kazoo's leader by its identifier, with
/// its node and fencing token, in text and JSON; without `--kazoo` the path is refused as not a
/// latch's, rather than said to have nobody leading.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leader_names_the_leader_of_a_kazoo_election() {
    let path = unique_path("cli-leader-kazoo");
    let log = temp_log("cli-leader-kazoo");
    let zk = server().connect_string();
    let leader = |options: &[&str]| zklock(&zk).arg("leader").args(options).arg(&path).output().unwrap();
    assert_eq!(leader(&["--kazoo"]).status.code(), Some(1), "nobody leads yet");
    let _leading = Kazoo::start(&path, "election", 60_000, &log, "kazoo-leader");
    entered(&log, "kazoo-leader").await;
    let text = leader(&["--kazoo"]);
    assert!(text.status.success(), "{text:?}");
    let text = String::from_utf8(text.stdout).unwrap();
    let fields: Vec<&str> = text.split_whitespace().collect();
    assert_eq!(fields.len(), 3, "{text}");
    assert_eq!(fields[0], "kazoo-leader", "{text}");
    assert!(fields[1].starts_with(&path) && fields[1].contains("__lock__"), "{text}");
    let json = leader(&["--kazoo", "--json"]);
    let json: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(json["leader"]["id"], "kazoo-leader", "{json}");
    assert_eq!(json["leader"]["node"], fields[1], "{json}");
    assert_eq!(json["leader"]["token"].to_string(), fields[2], "{json}");
    let refused = leader(&[]);
    assert_eq!(refused.status.code(), Some(USAGE), "{refused:?}");
}
