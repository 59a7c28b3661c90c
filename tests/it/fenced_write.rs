//! Writes fenced inside ZooKeeper: a transaction from `multi_writer()` commits only while the
//! lock node exists, so a holder that lost the lock without noticing writes nothing.

use crate::common;

use common::{connect, connect_to, server, unique_path};
use zklock::hold::Hold;
use zklock::zookeeper_client::{Acls, Client, CreateMode, Error as ZkError};
use zklock::{Error, InterProcessMutex, InterProcessSemaphoreV2, LockGuard, LossReason};
use zklock_testcontainers::{expire_session, Proxy};

/// A persistent data node beside the lock, holding `value`.
async fn data_node(client: &Client, lock_path: &str, value: &[u8]) -> String {
    let path = format!("{lock_path}-data");
    client.mkdir(lock_path, &CreateMode::Persistent.with_acls(Acls::anyone_all())).await.unwrap();
    client.create(&path, value, &CreateMode::Persistent.with_acls(Acls::anyone_all())).await.unwrap();
    path
}

/// A client holding a fresh lock, and a data node beside it holding `before`.
async fn holding(name: &str) -> (Client, String, LockGuard) {
    let path = unique_path(name);
    let client = connect().await;
    let data = data_node(&client, &path, b"before").await;
    let guard = InterProcessMutex::new(&client, &path).unwrap().acquire().await.unwrap();
    (client, data, guard)
}

async fn read(client: &Client, path: &str) -> Vec<u8> {
    client.get_data(path).await.unwrap().0
}

#[tokio::test]
async fn a_holder_commits_every_operation_of_a_fenced_write() {
    let (client, data, guard) = holding("fenced-ok").await;

    let mut write = guard.multi_writer();
    write.add_set_data(&data, b"after", None).unwrap();
    write.add_create(&format!("{data}-log"), b"1", &CreateMode::Persistent.with_acls(Acls::anyone_all())).unwrap();
    let results = guard.commit(write).await.unwrap();

    assert_eq!(results.len(), 2, "the caller's two results, without the lock check's");
    assert_eq!(read(&client, &data).await, b"after");
    assert_eq!(read(&client, &format!("{data}-log")).await, b"1");
    guard.release().await.unwrap();
}

#[tokio::test]
async fn a_holder_whose_node_was_deleted_cannot_commit() {
    let (_client, data, guard) = holding("fenced-deleted").await;
    let operator = connect().await;
    // The holder has not noticed yet: its node watch is set only after a second.
    operator.delete(guard.node_path(), None).await.unwrap();
    assert!(guard.is_held(), "the test needs a holder that has not noticed the loss");

    let mut write = guard.multi_writer();
    write.add_set_data(&data, b"stale", None).unwrap();
    let outcome = guard.commit(write).await;
    println!("fenced write of a holder whose node was deleted: {outcome:?}");

    let err = outcome.expect_err("a holder without a node must not commit");
    assert!(matches!(err, Error::LockLost(LossReason::NodeDeleted)), "{err:?}");
    assert!(err.to_string().contains("lock lost"), "{err}");
    assert_eq!(read(&operator, &data).await, b"before", "nothing was written");
    assert!(!guard.is_held(), "the guard now knows");
    assert!(matches!(guard.release().await, Err(Error::LockLost(LossReason::NodeDeleted))));
}

#[tokio::test]
async fn a_holder_whose_session_expired_cannot_commit() {
    let path = unique_path("fenced-expired");
    let proxy = Proxy::start(server().address()).unwrap();
    let client = connect_to(&proxy.connect_string()).await;
    let observer = connect().await;
    let data = data_node(&observer, &path, b"before").await;
    let guard = InterProcessMutex::new(&client, &path).unwrap().acquire().await.unwrap();
    let mut write = guard.multi_writer();
    write.add_set_data(&data, b"stale", None).unwrap();

    expire_session(&client, &proxy).await.unwrap();
    let outcome = guard.commit(write).await;
    println!("fenced write of a holder whose session expired: {outcome:?}");

    assert!(matches!(outcome, Err(Error::LockLost(LossReason::SessionExpired))), "{outcome:?}");
    assert_eq!(read(&observer, &data).await, b"before", "nothing was written");
}

#[tokio::test]
async fn a_failed_write_of_the_caller_is_not_a_lost_lock() {
    let (client, data, guard) = holding("fenced-failed").await;

    let mut write = guard.multi_writer();
    write.add_set_data(&data, b"after", None).unwrap();
    write.add_create(&data, b"", &CreateMode::Persistent.with_acls(Acls::anyone_all())).unwrap();
    let outcome = guard.commit(write).await;

    assert!(matches!(outcome, Err(Error::WriteFailed { index: 1, source: ZkError::NodeExists })), "{outcome:?}");
    assert_eq!(read(&client, &data).await, b"before", "all or nothing");
    assert!(guard.is_held());
    guard.release().await.unwrap();
}

#[tokio::test]
async fn a_lease_fences_writes_too() {
    let path = unique_path("fenced-lease");
    let client = connect().await;
    let operator = connect().await;
    let data = data_node(&client, &path, b"before").await;
    let semaphore = InterProcessSemaphoreV2::new(&client, &format!("{path}/semaphore"), 2).unwrap();
    let lease = semaphore.acquire().await.unwrap();

    let mut write = lease.multi_writer();
    write.add_set_data(&data, b"leased", None).unwrap();
    lease.commit(write).await.unwrap();
    assert_eq!(read(&client, &data).await, b"leased");

    operator.delete(lease.node_path(), None).await.unwrap();
    let mut write = lease.multi_writer();
    write.add_set_data(&data, b"stale", None).unwrap();
    let outcome = lease.commit(write).await;
    assert!(matches!(outcome, Err(Error::LockLost(LossReason::NodeDeleted))), "{outcome:?}");
    assert_eq!(read(&client, &data).await, b"leased");
}

#[tokio::test]
async fn a_fenced_write_is_checked_against_the_hold_that_made_it() {
    let (client, data, made_it) = holding("fenced-own-hold").await;
    let other = InterProcessMutex::new(&client, &unique_path("fenced-other-hold")).unwrap().acquire().await.unwrap();
    let operator = connect().await;
    operator.delete(made_it.node_path(), None).await.unwrap();

    // Sent through another hold's `commit`, the write still checks the node of the hold that
    // made it, and the loss it proves is that hold's.
    let mut write = made_it.multi_writer();
    write.add_set_data(&data, b"stale", None).unwrap();
    let outcome = other.commit(write).await;

    assert!(matches!(outcome, Err(Error::LockLost(LossReason::NodeDeleted))), "{outcome:?}");
    assert_eq!(read(&operator, &data).await, b"before", "nothing was written");
    assert!(!made_it.is_held(), "the hold that made the write lost its node");
    assert!(other.is_held(), "the hold that sent it did not");
    other.release().await.unwrap();
}
