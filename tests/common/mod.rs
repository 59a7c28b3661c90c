//! Helpers shared by the integration tests: one real ZooKeeper per test binary (started by
//! `zklock-testcontainers`), clients, unique lock paths, and node inspection.
#![allow(dead_code)] // each test binary uses its own subset

pub mod interop;
pub mod session;

use std::future::Future;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use std::collections::BTreeMap;

use zklock_testcontainers::{shared_server, Proxy, ZooKeeperServer};
use zookeeper_client::Client;

/// How long after an operator deleted a node a local handoff may still pass that node on: the
/// notification's delay, in which the process cannot know (docs/local-handoff.md).
/// `tests/it/handoff_window.rs` measures that delay on the test server and holds it below this;
/// the fault soak forgives a pass only inside it, which is half the soak's handoff time.
pub const NOTIFICATION_WINDOW: Duration = Duration::from_millis(100);

pub fn server() -> &'static ZooKeeperServer {
    static TEST_ROOT: std::sync::Once = std::sync::Once::new();
    let server = shared_server();
    TEST_ROOT.call_once(|| make_test_root(&server.connect_string()));
    server
}

/// Where every [`unique_path`] lives.
pub const TEST_ROOT: &str = "/zklock-tests";

/// Makes [`TEST_ROOT`] a persistent node open to anyone, before any test creates a node under
/// it. Made on demand instead, by the first lock created under it, it would be a container
/// with that lock's ACL: a test of a digest-only lock that came first (or first after the
/// server reaped the empty container) locked every other test out ("create parents ... not
/// authorized"). On a thread of its own: the caller may be inside a runtime.
fn make_test_root(connect_string: &str) {
    let connect_string = connect_string.to_owned();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async {
            let client = connect_to(&connect_string).await;
            let open = zookeeper_client::CreateMode::Persistent.with_acls(zookeeper_client::Acls::anyone_all());
            match client.create(TEST_ROOT, b"", &open).await {
                Ok(_) | Err(zookeeper_client::Error::NodeExists) => {}
                Err(err) => panic!("create {TEST_ROOT}: {err}"),
            }
        })
    })
    .join()
    .unwrap();
}

/// A new session on the shared server.
pub async fn connect() -> Client {
    connect_to(&server().connect_string()).await
}

/// A new session at `connect_string` (a server, an ensemble, a proxy) with a 20 s session.
pub async fn connect_to(connect_string: &str) -> Client {
    connect_with(connect_string, Duration::from_secs(20)).await
}

/// A new session at `connect_string` with this session timeout.
pub async fn connect_with(connect_string: &str, session_timeout: Duration) -> Client {
    Client::connector()
        .with_session_timeout(session_timeout)
        .connect(connect_string)
        .await
        .unwrap_or_else(|err| panic!("connect to {connect_string}: {err}"))
}

/// A session through `proxy` (to be cut off, partitioned or expired) with this session timeout.
pub async fn connect_through(proxy: &Proxy, session_timeout: Duration) -> Client {
    connect_with(&proxy.connect_string(), session_timeout).await
}

/// The sessions that watch each path under `prefix` (itself included) on the shared server.
pub fn watchers_under(prefix: &str) -> BTreeMap<String, Vec<String>> {
    let below = format!("{prefix}/");
    let mut watchers = server().watchers();
    watchers.retain(|path, _| path == prefix || path.starts_with(&below));
    watchers
}

/// The name the test harness knows test `name` of the module `module` (its `module_path!()`) by,
/// to run that test again in a child process (`--exact`): the module's path without the crate's.
pub fn harness_name(module: &str, name: &str) -> String {
    match module.split_once("::") {
        Some((_, within)) => format!("{within}::{name}"),
        None => name.to_owned(),
    }
}

/// A lock path no other test uses.
pub fn unique_path(name: &str) -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
    format!("{TEST_ROOT}/{name}-{}-{nanos}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed))
}

/// The children of `path`, sorted by name; empty when it does not exist.
pub async fn children(client: &Client, path: &str) -> Vec<String> {
    match client.list_children(path).await {
        Ok(mut children) => {
            children.sort();
            children
        }
        Err(zookeeper_client::Error::NoNode) => Vec::new(),
        Err(err) => panic!("list {path}: {err}"),
    }
}

/// Polls `condition` until it holds, for at most 10 seconds; panics with `what` otherwise.
pub async fn eventually<F, Fut>(what: &str, mut condition: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    for _ in 0..200 {
        if condition().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("timed out waiting until {what}");
}

/// Waits until `path` has exactly `count` children.
pub async fn wait_for_children(client: &Client, path: &str, count: usize) {
    eventually(&format!("{path} has {count} children"), || async { children(client, path).await.len() == count }).await;
}

/// How many holders are inside at once, measured by ZooKeeper rather than in the process: each
/// holder, once it holds, creates an ephemeral node under a directory of its own and counts the
/// nodes there, and deletes its node before it lets go. A count can only be lower than the
/// holders really inside, never higher.
pub struct Inside {
    dir: String,
}

impl Inside {
    /// A new, empty directory of holders.
    pub async fn new(client: &Client, name: &str) -> Inside {
        let dir = unique_path(name);
        let persistent = zookeeper_client::CreateMode::Persistent.with_acls(zookeeper_client::Acls::anyone_all());
        client.mkdir(&dir, &persistent).await.unwrap_or_else(|err| panic!("create {dir}: {err}"));
        Inside { dir }
    }

    /// Marks a holder inside; returns its mark and how many were inside then, itself included.
    pub async fn enter(&self, client: &Client) -> (String, usize) {
        let ephemeral =
            zookeeper_client::CreateMode::EphemeralSequential.with_acls(zookeeper_client::Acls::anyone_all());
        let (_, sequence) = client.create(&format!("{}/h-", self.dir), b"", &ephemeral).await.unwrap();
        let mark = format!("{}/h-{sequence}", self.dir);
        (mark, self.count(client).await)
    }

    /// How many holders are inside now.
    pub async fn count(&self, client: &Client) -> usize {
        children(client, &self.dir).await.len()
    }

    /// Marks a holder out.
    pub async fn leave(&self, client: &Client, mark: &str) {
        client.delete(mark, None).await.unwrap_or_else(|err| panic!("delete {mark}: {err}"));
    }
}
