//! `zklock --kazoo --read` and `--kazoo --write`: a side of kazoo's `ReadLock`/`WriteLock`,
//! shared with real kazoo processes (Debian's python3-kazoo), in both directions.

use crate::common;
use crate::support;

use std::time::Duration;

use common::{connect, server, unique_path, wait_for_children};
use support::kazoo::Kazoo;
use support::{hold, zklock, TIMED_OUT, USAGE};

/// A kazoo reader holds: a zklock reader shares it, a zklock writer waits, and a plain
/// `--kazoo` lock (kazoo's `Lock`, which ignores readers) is refused rather than let in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kazoo_reader_is_shared_by_zklock_readers_and_excludes_zklock_writers() {
    let path = unique_path("cli-kazoo-rw");
    let zk = server().connect_string();
    let _reader = Kazoo::start(&zk, "kazoo-reader", &[&format!("read:{path}")]);
    let run = |options: &[&str]| {
        let output = zklock(&zk).args(options).args(["-n", &path, "--", "true"]).output().unwrap();
        (output.status.code(), String::from_utf8_lossy(&output.stderr).into_owned())
    };
    assert_eq!(run(&["--kazoo", "--read"]).0, Some(0), "readers share");
    let (code, stderr) = run(&["--kazoo", "--write"]);
    assert_eq!(code, Some(TIMED_OUT), "a writer waits for the reader: {stderr}");
    let (code, stderr) = run(&["--kazoo"]);
    assert_eq!(code, Some(USAGE), "{stderr}");
    assert!(stderr.contains("kazoo-read-write"), "{stderr}");
    let (code, stderr) = run(&["--kazoo", "--mutex"]);
    assert_eq!(code, Some(USAGE), "{stderr}");
}

/// A zklock writer holds: a kazoo reader queues behind it and holds only once the writer
/// has gone; a zklock reader beside a kazoo writer waits as well.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_zklock_writer_excludes_kazoo_readers_until_it_goes() {
    let path = unique_path("cli-kazoo-rw");
    let zk = server().connect_string();
    let client = connect().await;
    let (writer, _) = hold(&zk, &["--kazoo", "--write"], &path);
    let reader = {
        let (zk, path) = (zk.clone(), path.clone());
        std::thread::spawn(move || Kazoo::start(&zk, "kazoo-reader", &[&format!("read:{path}")]))
    };
    wait_for_children(&client, &path, 2).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!reader.is_finished(), "the kazoo reader held beside zklock's writer");
    drop(writer);
    let _reader = tokio::task::spawn_blocking(move || reader.join().unwrap()).await.unwrap();
    // The other way round on a path of its own (a killed kazoo's node stays for its session).
    let path = unique_path("cli-kazoo-rw");
    let _writer = Kazoo::start(&zk, "kazoo-writer", &[&format!("write:{path}")]);
    let output = zklock(&zk).args(["--kazoo", "--read", "--timeout", "300ms", &path, "--", "true"]).output().unwrap();
    assert_eq!(output.status.code(), Some(TIMED_OUT), "{output:?}");
}
