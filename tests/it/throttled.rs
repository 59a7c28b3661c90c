//! A request the server refuses unrun (`Throttled`, ZooKeeper 3.6+ with request throttling)
//! leaves no node behind and loses no signal: the proxy has the server refuse exactly one
//! chosen request, and the recipe must still do what was asked.

use crate::common;

use std::future::Future;
use std::time::Duration;

use common::{children, connect, connect_to, eventually, server, unique_path, wait_for_children};
use zklock::hold::Hold;
use zklock::{InterProcessMutex, InterProcessSemaphoreV2, Lease, LockGuard, LossReason};
use zklock_testcontainers::{Proxy, ThrottledOperation};
use zookeeper_client::{Acls, Client, CreateMode};

const PROMPTLY: Duration = Duration::from_secs(5);

/// A proxy to the shared server and a client through it.
async fn proxied() -> (Proxy, Client) {
    let proxy = Proxy::start(server().address()).unwrap();
    let client = connect_to(&proxy.connect_string()).await;
    (proxy, client)
}

/// The last segment of `path`.
fn name(path: &str) -> &str {
    path.rsplit('/').next().unwrap()
}

/// A lock guard or a lease: what the release tests need of either (its node path is the
/// [`Hold`]'s).
trait Held: Hold + 'static {
    fn release(self) -> impl Future<Output = zklock::Result<()>> + Send;
}

impl Held for LockGuard {
    fn release(self) -> impl Future<Output = zklock::Result<()>> + Send {
        LockGuard::release(self)
    }
}

impl Held for Lease {
    fn release(self) -> impl Future<Output = zklock::Result<()>> + Send {
        Lease::release(self)
    }
}

/// Takes a hold on `path` through a proxy, queues a waiter from another session (two nodes in
/// `queue`), throttles the next delete and releases: the release must succeed, leave no node of
/// ours, and hand the turn to the waiter.
async fn a_throttled_release_hands_over<H, Fut>(path: &str, queue: &str, acquire: impl Fn(Client, String) -> Fut)
where
    H: Held,
    Fut: Future<Output = zklock::Result<H>> + Send + 'static,
{
    let (proxy, client) = proxied().await;
    let held = acquire(client, path.to_owned()).await.unwrap();
    let node = held.node_path().to_owned();
    let observer = connect().await;
    let waiting = tokio::spawn(acquire(observer.clone(), path.to_owned()));
    // Every delete our acquire sent is through: the next one is the release's.
    wait_for_children(&observer, queue, 2).await;
    proxy.throttle_next(ThrottledOperation::Delete);

    tokio::time::timeout(PROMPTLY, held.release()).await.expect("release hung").unwrap();
    assert_eq!(proxy.throttled_count(), 1, "the release's delete was not the one throttled");
    assert!(!children(&observer, queue).await.iter().any(|child| child == name(&node)), "our node is left");
    let next = tokio::time::timeout(PROMPTLY, waiting).await.expect("the waiter never got its turn").unwrap();
    next.unwrap().release().await.unwrap();
}

#[tokio::test]
async fn a_release_whose_delete_is_throttled_still_deletes_the_node() {
    let path = unique_path("throttled-release");
    a_throttled_release_hands_over(&path, &path, |client, path| async move {
        InterProcessMutex::new(&client, &path)?.acquire().await
    })
    .await;
}

#[tokio::test]
async fn a_lease_release_whose_delete_is_throttled_still_deletes_the_lease() {
    let path = unique_path("throttled-lease");
    // The waiter is in leases/ once it holds the semaphore's mutex, which our acquire released.
    a_throttled_release_hands_over(&path, &format!("{path}/leases"), |client, path| async move {
        InterProcessSemaphoreV2::new(&client, &path, 1)?.acquire().await
    })
    .await;
}

#[tokio::test]
async fn an_acquire_whose_create_is_throttled_still_acquires_with_exactly_one_node() {
    let path = unique_path("throttled-create");
    let observer = connect().await;
    // The lock path exists, so the create throttled is our node's, not one of its parents'.
    observer.mkdir(&path, &CreateMode::Persistent.with_acls(Acls::anyone_all())).await.unwrap();
    let (proxy, client) = proxied().await;
    proxy.throttle_next(ThrottledOperation::Create);

    let guard = tokio::time::timeout(PROMPTLY, InterProcessMutex::new(&client, &path).unwrap().acquire())
        .await
        .expect("acquire hung")
        .unwrap();
    assert_eq!(proxy.throttled_count(), 1, "the create was not throttled");
    assert_eq!(children(&observer, &path).await, [name(guard.node_path())]);
    guard.release().await.unwrap();
    assert!(children(&observer, &path).await.is_empty());
}

#[tokio::test]
async fn a_loss_watch_whose_get_data_is_throttled_still_reports_the_deletion() {
    let path = unique_path("throttled-loss-watch");
    let (proxy, client) = proxied().await;
    let guard = InterProcessMutex::new(&client, &path).unwrap().acquire().await.unwrap();
    proxy.throttle_next(ThrottledOperation::GetData);
    // The first lost() sets the node watch with a getData, which is refused.
    let listening = tokio::time::timeout(Duration::from_millis(300), guard.lost()).await;
    assert!(listening.is_err(), "lost() resolved while held");
    eventually("the loss watch's getData was throttled", || async { proxy.throttled_count() == 1 }).await;

    connect().await.delete(guard.node_path(), None).await.unwrap();
    let reason = tokio::time::timeout(PROMPTLY, guard.lost()).await.expect("the deletion was never reported");
    assert_eq!(reason, LossReason::NodeDeleted);
}
