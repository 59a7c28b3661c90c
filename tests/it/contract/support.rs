//! What the contracts share: the nodes a lock has on the server, sessions through a proxy, and
//! the test binary re-run as a child process.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use zklock_testcontainers::__private::spawn_tied_to_process;
use zklock_testcontainers::Proxy;
use zookeeper_client::Client;

use crate::common::{children, eventually, server};
use crate::contract::lock::LockUnderTest;

/// Generous bound for "promptly": a hang exceeds it, a slow machine does not.
pub const PROMPTLY: Duration = Duration::from_secs(10);

/// Every node the recipe has on the server for `path`, full paths, sorted.
pub async fn nodes<L: LockUnderTest>(client: &Client, path: &str) -> Vec<String> {
    let mut all = Vec::new();
    for dir in L::node_dirs(path) {
        all.extend(children(client, &dir).await.into_iter().map(|child| format!("{dir}/{child}")));
    }
    all.sort();
    all
}

/// Waits until the recipe's nodes for `path` are exactly `expected` (in any order).
pub async fn wait_for_nodes<L: LockUnderTest>(client: &Client, path: &str, expected: &[String]) {
    let mut expected = expected.to_vec();
    expected.sort();
    eventually(&format!("the nodes of {path} are {expected:?}"), || async {
        nodes::<L>(client, path).await == expected
    })
    .await;
}

/// Waits until more than `held` nodes are there: a waiter has queued behind the holder.
pub async fn wait_until_queued<L: LockUnderTest>(client: &Client, path: &str, held: usize) {
    eventually(&format!("a waiter queued on {path}"), || async { nodes::<L>(client, path).await.len() > held }).await;
}

pub fn start_proxy() -> Proxy {
    Proxy::start(server().address()).unwrap()
}

/// Set in a child process: which part it plays, and where (see [`spawn_child`]).
const ROLE: &str = "ZKLOCK_CONTRACT_ROLE";
const ZK: &str = "ZKLOCK_CONTRACT_ZK";
const PATH: &str = "ZKLOCK_CONTRACT_PATH";
const DIR: &str = "ZKLOCK_CONTRACT_DIR";
const PARTY: &str = "ZKLOCK_CONTRACT_PARTY";

/// What a child process was started to do.
#[derive(Debug)]
pub struct ChildOrders {
    pub role: String,
    /// The parent's server: a child must not start a server of its own.
    pub connect_string: String,
    pub path: String,
    /// A directory the parent and its children share (ready and go files, the log).
    pub dir: PathBuf,
    pub party: usize,
}

impl ChildOrders {
    /// The orders of this process when it is a child, else `None`.
    pub fn of_this_process() -> Option<ChildOrders> {
        let role = std::env::var(ROLE).ok()?;
        let var = |name| std::env::var(name).unwrap_or_else(|_| panic!("{name} unset in a child"));
        Some(ChildOrders {
            role,
            connect_string: var(ZK),
            path: var(PATH),
            dir: var(DIR).into(),
            party: var(PARTY).parse().unwrap(),
        })
    }

    pub fn ready_file(&self) -> PathBuf {
        ready_file(&self.dir, self.party)
    }

    /// Waits for the parent's go (bounded: a parent that died leaves no child running).
    pub async fn wait_for_go(&self) {
        let go = self.dir.join("go");
        let deadline = Instant::now() + Duration::from_secs(60);
        while !go.exists() {
            assert!(Instant::now() < deadline, "no go from the parent");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}

pub fn ready_file(dir: &Path, party: usize) -> PathBuf {
    dir.join(format!("ready-{party}"))
}

/// A fresh directory for the parent and its children.
pub fn shared_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(crate::common::unique_path(name).trim_start_matches('/').replace('/', "-"));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs this test binary again as a child that runs only `test_name`, which finds its orders
/// in the environment. Its stderr goes to `{dir}/child-{party}.err`.
pub fn spawn_child(test_name: &str, role: &str, path: &str, dir: &Path, party: usize) -> Child {
    let stderr = std::fs::File::create(dir.join(format!("child-{party}.err"))).unwrap();
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .args(["--exact", test_name, "--nocapture", "--test-threads", "1"])
        .env(ROLE, role)
        .env(ZK, server().connect_string())
        .env(PATH, path)
        .env(DIR, dir)
        .env(PARTY, party.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr);
    spawn_tied_to_process(command).unwrap()
}

/// Waits for every child's ready file, then tells them all to go.
pub async fn start_children(dir: &Path, parties: usize) {
    eventually("every child is ready", || async { (0..parties).all(|party| ready_file(dir, party).exists()) }).await;
    std::fs::write(dir.join("go"), b"").unwrap();
}

/// Waits (bounded) for a child to exit successfully; kills it and fails otherwise.
pub async fn expect_success(mut child: Child, dir: &Path, party: usize, within: Duration) {
    let deadline = Instant::now() + within;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let stderr = std::fs::read_to_string(dir.join(format!("child-{party}.err"))).unwrap_or_default();
    match status {
        Some(status) if status.success() => {}
        Some(status) => panic!("child {party} failed ({status}):\n{stderr}"),
        None => panic!("child {party} did not finish within {within:?}:\n{stderr}"),
    }
}
