//! Locked-down locks (and leader elections) resist other identities: with digest auth, identity A takes each recipe
//! with creator-only ACLs (everyone may read); identity B and an anonymous client can neither
//! delete A's nodes nor create nodes in A's lock path, so they cannot take the lock or jump the
//! queue, and zklock tells them with a typed error; A's recipe keeps working.

use crate::common;

use std::future::Future;

use common::{children, connect, server, unique_path};
use zklock::hold::Hold;
use zklock::zookeeper_client::{Acls, Client, CreateMode, Error as ZkError};
use zklock::{
    revoke, AclProvider, Error, InterProcessMultiLock, InterProcessMutex, InterProcessReadWriteLock,
    InterProcessSemaphoreMutex, InterProcessSemaphoreV2, LeaderLatch, LeaderSelector,
};

struct Identities {
    a: Client,
    b: Client,
    anonymous: Client,
}

async fn as_user(user: &str) -> Client {
    Client::connector()
        .with_session_timeout(std::time::Duration::from_secs(20))
        .with_auth("digest", format!("{user}:secret-of-{user}").as_bytes())
        .connect(&server().connect_string())
        .await
        .expect("connect with digest auth")
}

/// A, B and an anonymous client; the tests' root is open (`common::TEST_ROOT`), so that A
/// creates the lock path's parents itself (with its ACL).
async fn identities() -> Identities {
    let anonymous = connect().await;
    Identities { a: as_user("alice").await, b: as_user("bob").await, anonymous }
}

/// What a locked-down lock must show while A holds `a_node` in `queue_dir`: every intruder is
/// refused a delete of A's node, a create in the queue (raw, and through zklock's `try_take`),
/// and a revocation; it may still read the queue, which holds A's node alone.
async fn intruders_are_locked_out<Take, TakeFut, List, ListFut>(
    ids: &Identities,
    queue_dir: &str,
    a_node: &str,
    try_take: Take,
    participants: List,
) where
    Take: Fn(Client) -> TakeFut,
    TakeFut: Future<Output = zklock::Result<bool>>,
    List: Fn(Client) -> ListFut,
    ListFut: Future<Output = zklock::Result<Vec<String>>>,
{
    for (who, intruder) in [("B", &ids.b), ("anonymous", &ids.anonymous)] {
        let deleted = intruder.delete(a_node, None).await;
        println!("{who} deletes A's node {a_node}: {deleted:?}");
        assert_eq!(deleted, Err(ZkError::NoAuth), "{who} deleted A's node");

        let jump = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
        let created =
            intruder.create(&format!("{queue_dir}/_c_00000000-0000-0000-0000-000000000000-lock-"), b"", &jump).await;
        assert_eq!(created.map(|_| ()), Err(ZkError::NoAuth), "{who} created a node in A's queue");

        let taken = try_take(intruder.clone()).await;
        println!("{who} takes the lock through zklock: {taken:?}");
        assert!(
            matches!(&taken, Err(Error::ZooKeeper { source: ZkError::NoAuth, .. })),
            "{who} got {taken:?} instead of a NoAuth error"
        );

        let revoked = revoke(intruder, a_node).await;
        assert!(matches!(revoked, Err(Error::ZooKeeper { source: ZkError::NoAuth, .. })), "{who}: {revoked:?}");

        let seen = participants(intruder.clone()).await.expect("others may read the queue");
        assert_eq!(seen, vec![a_node.to_owned()], "{who} sees A's node alone");
    }
    assert_eq!(children(&ids.a, queue_dir).await.len(), 1, "nothing but A's node in the queue");
}

fn locked_down() -> AclProvider {
    AclProvider::creator_all_anyone_read()
}

#[tokio::test]
async fn a_locked_down_mutex_resists_other_identities() {
    let ids = identities().await;
    let path = &unique_path("secure-mutex");
    let mutex = InterProcessMutex::builder(&ids.a, path)
        .options(zklock::LockOptions::new().acl_provider(locked_down()))
        .build()
        .unwrap();
    let guard = mutex.acquire().await.unwrap();

    let take =
        move |client: Client| async move { Ok(InterProcessMutex::new(&client, path)?.try_acquire().await?.is_some()) };
    let list = move |client: Client| async move { InterProcessMutex::new(&client, path)?.participants().await };
    intruders_are_locked_out(&ids, path, guard.node_path(), take, list).await;

    assert!(guard.is_held());
    guard.release().await.unwrap();
    mutex.acquire().await.unwrap().release().await.unwrap();
}

#[tokio::test]
async fn a_locked_down_read_write_lock_resists_other_identities() {
    let ids = identities().await;
    let path = &unique_path("secure-rwlock");
    let lock = InterProcessReadWriteLock::builder(&ids.a, path)
        .options(zklock::LockOptions::new().acl_provider(locked_down()))
        .build()
        .unwrap();
    let writing = lock.write_lock().acquire().await.unwrap();

    let take = move |client: Client| async move {
        Ok(InterProcessReadWriteLock::new(&client, path)?.read_lock().try_acquire().await?.is_some())
    };
    let list = move |client: Client| async move {
        InterProcessReadWriteLock::new(&client, path)?.write_lock().participants().await
    };
    intruders_are_locked_out(&ids, path, writing.node_path(), take, list).await;

    writing.release().await.unwrap();
    let reading = lock.read_lock().acquire().await.unwrap();
    reading.release().await.unwrap();
}

#[tokio::test]
async fn a_locked_down_semaphore_resists_other_identities() {
    let ids = identities().await;
    let path = &unique_path("secure-semaphore");
    let semaphore = InterProcessSemaphoreV2::builder(&ids.a, path, 2)
        .options(zklock::LockOptions::new().acl_provider(locked_down()))
        .build()
        .unwrap();
    let lease = semaphore.acquire().await.unwrap();

    let take = move |client: Client| async move {
        Ok(InterProcessSemaphoreV2::new(&client, path, 2)?.try_acquire().await?.is_some())
    };
    let list =
        move |client: Client| async move { InterProcessSemaphoreV2::new(&client, path, 2)?.participants().await };
    intruders_are_locked_out(&ids, &format!("{path}/leases"), lease.node_path(), take, list).await;

    // A's second lease still comes: the intruders took none of the two.
    let second = semaphore.try_acquire().await.unwrap().expect("a lease is free");
    second.release().await.unwrap();
    lease.release().await.unwrap();
}

#[tokio::test]
async fn a_locked_down_semaphore_mutex_resists_other_identities() {
    let ids = identities().await;
    let path = &unique_path("secure-semaphore-mutex");
    let mutex = InterProcessSemaphoreMutex::builder(&ids.a, path)
        .options(zklock::LockOptions::new().acl_provider(locked_down()))
        .build()
        .unwrap();
    let lease = mutex.acquire().await.unwrap();

    let take = move |client: Client| async move {
        Ok(InterProcessSemaphoreMutex::new(&client, path)?.try_acquire().await?.is_some())
    };
    let list =
        move |client: Client| async move { InterProcessSemaphoreMutex::new(&client, path)?.participants().await };
    intruders_are_locked_out(&ids, &format!("{path}/leases"), lease.node_path(), take, list).await;

    lease.release().await.unwrap();
    mutex.acquire().await.unwrap().release().await.unwrap();
}

#[tokio::test]
async fn a_locked_down_multi_lock_resists_other_identities() {
    let ids = identities().await;
    let base = unique_path("secure-multi");
    let (first, second) = (format!("{base}/a"), format!("{base}/b"));
    let multi = InterProcessMultiLock::builder(&ids.a, &[first.as_str(), second.as_str()])
        .options(zklock::LockOptions::new().acl_provider(locked_down()))
        .build()
        .unwrap();
    let guard = multi.acquire().await.unwrap();

    let (first, second) = (first.as_str(), second.as_str());
    for (index, path) in [first, second].into_iter().enumerate() {
        let take = move |client: Client| async move {
            Ok(InterProcessMultiLock::from_paths(&client, &[first, second])?.try_acquire().await?.is_some())
        };
        let list = move |client: Client| async move { InterProcessMutex::new(&client, path)?.participants().await };
        intruders_are_locked_out(&ids, path, guard.guards()[index].node_path(), take, list).await;
    }

    guard.release().await.unwrap();
    multi.acquire().await.unwrap().release().await.unwrap();
}

/// The election's queue as the other recipes' `participants()` give it.
fn node_paths(participants: Vec<zklock::queue::QueueNode>) -> Vec<String> {
    participants.into_iter().map(|participant| participant.node_path).collect()
}

#[tokio::test]
async fn a_locked_down_leader_latch_resists_other_identities() {
    let ids = identities().await;
    let path = &unique_path("secure-latch");
    let latch = LeaderLatch::builder(&ids.a, path, "a")
        .options(zklock::LockOptions::new().acl_provider(locked_down()))
        .build()
        .unwrap();
    latch.start().await.unwrap();
    let leadership = latch.await_leadership().await.unwrap();

    let take =
        move |client: Client| async move { LeaderLatch::new(&client, path, "intruder")?.start().await.map(|()| true) };
    let list = move |client: Client| async move {
        Ok(node_paths(LeaderLatch::new(&client, path, "reader")?.participants().await?))
    };
    intruders_are_locked_out(&ids, path, leadership.node_path(), take, list).await;

    assert!(leadership.is_held() && latch.has_leadership());
    latch.close().await.unwrap();
    assert!(children(&ids.a, path).await.is_empty());
}

#[tokio::test]
async fn a_locked_down_leader_selector_resists_other_identities() {
    let ids = identities().await;
    let path = &unique_path("secure-selector");
    let selector = LeaderSelector::builder(&ids.a, path, "a")
        .options(zklock::LockOptions::new().acl_provider(locked_down()))
        .build()
        .unwrap();
    let (terms, mut leading) = tokio::sync::mpsc::unbounded_channel();
    selector
        .start(move |leadership| {
            let _ = terms.send(leadership);
            std::future::pending()
        })
        .await
        .unwrap();
    let leadership = leading.recv().await.unwrap();

    let take = move |client: Client| async move {
        LeaderSelector::new(&client, path, "intruder")?.start(|_| async {}).await.map(|()| true)
    };
    let list = move |client: Client| async move {
        Ok(node_paths(LeaderSelector::new(&client, path, "reader")?.participants().await?))
    };
    intruders_are_locked_out(&ids, path, leadership.node_path(), take, list).await;

    assert!(leadership.is_held() && selector.has_leadership());
    selector.close().await.unwrap();
    assert!(!leadership.is_held());
    assert!(children(&ids.a, path).await.is_empty());
}

#[tokio::test]
async fn parents_may_have_an_acl_of_their_own() {
    let ids = identities().await;
    let path = unique_path("secure-split");
    // Lock nodes readable by everyone, the lock path hidden from anyone but A.
    let readable = AclProvider::creator_all_anyone_read().lock_nodes().to_vec();
    let provider = AclProvider::new(readable, Acls::creator_all().to_vec());
    let mutex = InterProcessMutex::builder(&ids.a, &path)
        .options(zklock::LockOptions::new().acl_provider(provider))
        .build()
        .unwrap();
    let guard = mutex.acquire().await.unwrap();

    let (node_acl, _) = ids.a.get_acl(guard.node_path()).await.unwrap();
    assert_eq!(node_acl.len(), 2, "the lock node has the node ACL: {node_acl:?}");
    let (path_acl, _) = ids.a.get_acl(&path).await.unwrap();
    assert_eq!(path_acl.len(), 1, "the lock path has the parents' ACL: {path_acl:?}");
    let listed = InterProcessMutex::new(&ids.b, &path).unwrap().participants().await;
    assert!(matches!(listed, Err(Error::ZooKeeper { source: ZkError::NoAuth, .. })), "{listed:?}");
    assert!(ids.b.get_data(guard.node_path()).await.is_ok(), "the node itself is readable");
    guard.release().await.unwrap();
}

#[test]
fn empty_acl_lists_are_refused_by_every_builder() {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let client = runtime.block_on(connect());
    let empty = || zklock::LockOptions::new().acl_provider(AclProvider::new(Vec::new(), Acls::anyone_all().to_vec()));
    let refused = |outcome: Result<(), Error>| assert!(matches!(outcome, Err(Error::InvalidOptions(_))), "{outcome:?}");
    refused(InterProcessMutex::builder(&client, "/a").options(empty()).build().map(drop));
    refused(InterProcessReadWriteLock::builder(&client, "/a").options(empty()).build().map(drop));
    refused(InterProcessSemaphoreV2::builder(&client, "/a", 1).options(empty()).build().map(drop));
    refused(InterProcessSemaphoreMutex::builder(&client, "/a").options(empty()).build().map(drop));
    refused(InterProcessMultiLock::builder(&client, &["/a"]).options(empty()).build().map(drop));
    refused(
        InterProcessMutex::builder(&client, "/a")
            .options(zklock::LockOptions::new().acls(Vec::new()))
            .build()
            .map(drop),
    );
    refused(LeaderLatch::builder(&client, "/a", "id").options(empty()).build().map(drop));
    refused(LeaderSelector::builder(&client, "/a", "id").options(empty()).build().map(drop));
}
