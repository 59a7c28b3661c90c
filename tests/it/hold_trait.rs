//! `zklock::hold::Hold`, what every hold offers, used as a program that runs under any kind of
//! hold would: through `&dyn Hold`, for a lock's guard, a semaphore's lease and a term of
//! leadership.

use crate::common;

use std::time::Duration;

use common::{connect, unique_path};
use zklock::hold::Hold;
use zklock::zookeeper_client::{Acls, CreateMode};
use zklock::{revoke, InterProcessMutex, InterProcessSemaphoreV2, LeaderLatch, LossReason};

/// What every hold tells of a node of ours that stands: its path and token, held, a fenced write
/// that commits; then, once an operator deletes the node, the loss.
async fn tells_of_its_node_and_its_loss(hold: &dyn Hold, path: &str, token: i64, beside: &str) {
    let client = connect().await;
    assert_eq!(hold.node_path(), path);
    assert_eq!(hold.fencing_token(), token);
    assert!(hold.is_held());
    let mut write = hold.multi_writer();
    write.add_set_data(beside, hold.node_path().as_bytes(), None).unwrap();
    hold.commit(write).await.unwrap();
    assert_eq!(client.get_data(beside).await.unwrap().0, path.as_bytes());
    client.delete(path, None).await.unwrap();
    let reason = tokio::time::timeout(Duration::from_secs(10), hold.lost()).await.expect("never told of the loss");
    assert_eq!(reason, LossReason::NodeDeleted);
    assert!(!hold.is_held());
    let mut write = hold.multi_writer();
    write.add_set_data(beside, b"after the loss", None).unwrap();
    assert!(matches!(hold.commit(write).await, Err(zklock::Error::LockLost(LossReason::NodeDeleted))));
}

/// A persistent node beside the lock path, for fenced writes.
async fn node_beside(path: &str) -> String {
    let client = connect().await;
    let beside = format!("{path}-written");
    // The lock path made persistent first, so that its parent stays while `beside` is created
    // (the test server reaps empty containers every second).
    client.mkdir(path, &CreateMode::Persistent.with_acls(Acls::anyone_all())).await.unwrap();
    client.create(&beside, b"", &CreateMode::Persistent.with_acls(Acls::anyone_all())).await.unwrap();
    beside
}

#[tokio::test]
async fn a_guard_a_lease_and_a_term_tell_the_same_through_the_trait() {
    let client = connect().await;

    let path = unique_path("hold-trait-mutex");
    let beside = node_beside(&path).await;
    let guard = InterProcessMutex::new(&client, &path).unwrap().acquire().await.unwrap();
    let (node, token) = (guard.node_path().to_owned(), guard.fencing_token());
    tells_of_its_node_and_its_loss(&guard, &node, token, &beside).await;

    let path = unique_path("hold-trait-semaphore");
    let beside = node_beside(&path).await;
    let lease = InterProcessSemaphoreV2::new(&client, &path, 2).unwrap().acquire().await.unwrap();
    let (node, token) = (lease.node_path().to_owned(), lease.fencing_token());
    tells_of_its_node_and_its_loss(&lease, &node, token, &beside).await;

    let path = unique_path("hold-trait-latch");
    let beside = node_beside(&path).await;
    let latch = LeaderLatch::new(&client, &path, "one").unwrap();
    latch.start().await.unwrap();
    let leadership = latch.await_leadership().await.unwrap();
    let (node, token) = (leadership.node_path().to_owned(), leadership.fencing_token());
    tells_of_its_node_and_its_loss(&leadership, &node, token, &beside).await;
    latch.close().await.unwrap();
}

#[tokio::test]
async fn a_term_given_up_is_no_longer_held_but_was_not_lost() {
    let client = connect().await;
    let latch = LeaderLatch::new(&client, &unique_path("hold-trait-closed"), "one").unwrap();
    latch.start().await.unwrap();
    let leadership = latch.await_leadership().await.unwrap();
    let hold: &dyn Hold = &leadership;
    assert!(hold.is_held());
    latch.close().await.unwrap();
    assert!(!hold.is_held(), "a closed latch's term is over");
    assert!(tokio::time::timeout(Duration::from_millis(300), hold.lost()).await.is_err(), "a term given up is no loss");
}

#[tokio::test]
async fn a_revocation_request_reaches_a_guard_and_a_lease_but_never_a_leader() {
    let client = connect().await;
    let guard = InterProcessMutex::new(&client, &unique_path("hold-trait-revoke")).unwrap().acquire().await.unwrap();
    let lease = InterProcessSemaphoreV2::new(&client, &unique_path("hold-trait-revoke-lease"), 1)
        .unwrap()
        .acquire()
        .await
        .unwrap();
    let latch = LeaderLatch::new(&client, &unique_path("hold-trait-revoke-latch"), "one").unwrap();
    latch.start().await.unwrap();
    let leadership = latch.await_leadership().await.unwrap();
    let holds: [&dyn Hold; 3] = [&guard, &lease, &leadership];
    for hold in holds {
        revoke(&client, hold.node_path()).await.unwrap();
    }
    for hold in &holds[..2] {
        tokio::time::timeout(Duration::from_secs(10), hold.revocation_requested())
            .await
            .unwrap_or_else(|_| panic!("{} never heard the request", hold.node_path()));
    }
    assert!(
        tokio::time::timeout(Duration::from_millis(300), holds[2].revocation_requested()).await.is_err(),
        "leadership cannot be revoked"
    );
    latch.close().await.unwrap();
}
