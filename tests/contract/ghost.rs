//! No ghost holders: a participant whose queue node an operator deleted while it waited never
//! holds on that node. Curator lists again after every wake-up and finds its node gone; a
//! waiter that took the lock on its predecessor's deletion alone held beside the next in line.

use zookeeper_client::Client;

use crate::common::{connect, unique_path};
use crate::lock::{Held, LockUnderTest};
use crate::support::{nodes, wait_until_queued, PROMPTLY};

/// The recipe's nodes for `path` that the session of `owner` owns.
async fn nodes_of<L: LockUnderTest>(observer: &Client, path: &str, owner: &Client) -> Vec<String> {
    let mut owned = Vec::new();
    for node in nodes::<L>(observer, path).await {
        if let Ok(Some(stat)) = observer.check_stat(&node).await {
            if stat.ephemeral_owner == owner.session_id().0 {
                owned.push(node);
            }
        }
    }
    owned
}

/// Every node of `held` exists on the server: the hold is on something real.
async fn assert_nodes_exist<H: Held>(observer: &Client, held: &H, who: &str) {
    for node in held.node_paths() {
        let stat = observer.check_stat(&node).await.unwrap();
        assert!(stat.is_some(), "{who} holds on {node}, which does not exist (a ghost holder)");
    }
}

/// A holds; W and then X queue behind it. An operator deletes every node of W's. When A
/// releases, X holds, and W holds only after X, on a node of its own that exists and with a
/// fencing token above X's; W never holds beside X.
pub async fn a_waiter_whose_node_was_deleted_never_holds_on_it<L: LockUnderTest>() {
    let path = unique_path("contract-ghost");
    let observer = connect().await;
    let (a_client, w_client, x_client) = (connect().await, connect().await, connect().await);
    let a = L::party(&a_client, &path, 0).acquire().await.unwrap();
    let held = nodes::<L>(&observer, &path).await.len();

    let w_lock = L::party(&w_client, &path, 1);
    let w = tokio::spawn(async move { w_lock.acquire().await });
    wait_until_queued::<L>(&observer, &path, held).await;
    let queued = nodes::<L>(&observer, &path).await.len();
    let x_lock = L::party(&x_client, &path, 2);
    let x = tokio::spawn(async move { x_lock.acquire().await });
    wait_until_queued::<L>(&observer, &path, queued).await;

    let deleted = nodes_of::<L>(&observer, &path, &w_client).await;
    assert!(!deleted.is_empty(), "W has no node to delete");
    for node in &deleted {
        // A semaphore's taker deletes its mutex node itself once it has queued its lease.
        match observer.delete(node, None).await {
            Ok(()) | Err(zookeeper_client::Error::NoNode) => {}
            Err(err) => panic!("delete {node}: {err}"),
        }
    }
    a.release().await.unwrap();

    let x_held = tokio::time::timeout(PROMPTLY, x).await.expect("X never held").unwrap().unwrap();
    assert_nodes_exist(&observer, &x_held, "X").await;
    // W may have taken the lock by now only as a ghost: its node is gone and X holds.
    if w.is_finished() {
        let w_held = w.await.unwrap().unwrap();
        panic!(
            "W held beside X: W's token {} (nodes {:?}, deleted {deleted:?}), X's {}",
            w_held.fencing_token(),
            w_held.node_paths(),
            x_held.fencing_token()
        );
    }
    let x_token = x_held.fencing_token();
    x_held.release().await.unwrap();

    let w_held = tokio::time::timeout(PROMPTLY, w).await.expect("W never held after X").unwrap().unwrap();
    assert_nodes_exist(&observer, &w_held, "W").await;
    assert!(w_held.node_paths().iter().all(|node| !deleted.contains(node)), "W holds on a node the operator deleted");
    assert!(w_held.fencing_token() > x_token, "W's token is not above X's, who held before it");
    w_held.release().await.unwrap();
}

/// A taker that holds a semaphore's mutex and waits for room, whose mutex node an operator
/// deletes, gives up its lease and starts over behind the taker that now holds the mutex:
/// otherwise both wait beside each other's lease node for ever (a semaphore of one, two leases
/// queued).
pub async fn a_semaphore_taker_whose_mutex_node_was_deleted_starts_over() {
    let path = unique_path("contract-ghost-gate");
    let observer = connect().await;
    let (a_client, w_client, x_client) = (connect().await, connect().await, connect().await);
    let semaphore = |client: &Client| zklock::InterProcessSemaphoreV2::new(client, &path, 1).unwrap();
    let a = semaphore(&a_client).acquire().await.unwrap();
    let w_semaphore = semaphore(&w_client);
    let w = tokio::spawn(async move { w_semaphore.acquire().await });
    // W holds the mutex and has its lease node queued.
    let leases = format!("{path}/leases");
    crate::common::wait_for_children(&observer, &leases, 2).await;
    let gate = format!("{path}/locks");
    let w_gate = crate::common::children(&observer, &gate).await;
    assert_eq!(w_gate.len(), 1, "W holds the semaphore's mutex");
    let x_semaphore = semaphore(&x_client);
    let x = tokio::spawn(async move { x_semaphore.acquire().await });
    crate::common::wait_for_children(&observer, &gate, 2).await;

    observer.delete(&format!("{gate}/{}", w_gate[0]), None).await.unwrap();
    a.release().await.unwrap();
    let x_held = tokio::time::timeout(PROMPTLY, x).await.expect("X never took a lease").unwrap().unwrap();
    assert!(!w.is_finished(), "W took a lease beside X in a semaphore of one");
    let x_token = x_held.fencing_token();
    x_held.release().await.unwrap();
    let w_held = tokio::time::timeout(PROMPTLY, w).await.expect("W never took a lease after X").unwrap().unwrap();
    assert!(w_held.fencing_token() > x_token, "W's lease is not newer than X's");
    w_held.release().await.unwrap();
}
