//! The acquire loop and the hold survive what a real cluster does: the leader dies mid-wait,
//! the whole ensemble restarts, a watch fires while the waiter is reconnecting.

use crate::common;

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use common::{connect, eventually, server, unique_path, wait_for_children};
use zklock::hold::Hold;
use zklock::{InterProcessMutex, LockGuard, LossReason};
use zklock_testcontainers::{Ensemble, Proxy};
use zookeeper_client::{Client, SessionState};

const PROMPTLY: Duration = Duration::from_secs(30);

/// One ensemble at a time: two of them (six JVMs) starting beside the other tests' server on a
/// small machine made connects time out.
static ONE_ENSEMBLE: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

async fn connect_to_ensemble(ensemble: &Ensemble) -> Client {
    common::connect_with(&ensemble.connect_string(), Duration::from_secs(15)).await
}

/// The loss the holder has been told of, if any, without waiting.
fn told_lost(guard: &LockGuard) -> Option<LossReason> {
    match pin!(guard.lost()).poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(reason) => Some(reason),
        Poll::Pending => None,
    }
}

async fn wait_until_connected(client: &Client) {
    eventually("the client is connected again", || async { client.state() == SessionState::SyncConnected }).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_gets_the_lock_after_the_leader_dies_mid_wait_and_the_ensemble_restarts() {
    let _one = ONE_ENSEMBLE.lock().await;
    let mut ensemble = Ensemble::start(3).await.expect("start an ensemble");
    let path = unique_path("leader-loss");
    let holder_client = connect_to_ensemble(&ensemble).await;
    let waiter_client = connect_to_ensemble(&ensemble).await;
    let holder = InterProcessMutex::new(&holder_client, &path).unwrap().acquire().await.unwrap();
    let waiter = InterProcessMutex::new(&waiter_client, &path).unwrap();
    let waiting = tokio::spawn(async move { waiter.acquire().await.map(|guard| guard.fencing_token()) });
    wait_for_children(&holder_client, &path, 2).await;

    let leader = ensemble.leader().expect("a leader");
    ensemble.kill(leader);
    ensemble.wait_for_quorum(Duration::from_secs(60)).await.unwrap();
    ensemble.restart(leader).await.unwrap();
    assert!(!waiting.is_finished(), "the waiter must not get a held lock");

    // Every member goes down and comes back with its data; sessions and watches survive.
    for member in 0..ensemble.size() {
        ensemble.stop(member);
    }
    for member in 0..ensemble.size() {
        ensemble.start_member(member).unwrap();
    }
    ensemble.wait_for_quorum(Duration::from_secs(60)).await.unwrap();
    // The holder's session outlives the restart (the server expires it only after a whole
    // session timeout without it, and gives it that time again once it is back), so its node is
    // still there and the waiter still waits, whether or not the holder gave the lock up.
    let observer = connect_to_ensemble(&ensemble).await;
    assert!(observer.check_stat(holder.node_path()).await.unwrap().is_some(), "the holder's node is gone");
    assert!(!waiting.is_finished(), "the waiter got the lock while the holder's node was there");

    // A restart that outlasts a third of the session (a loaded machine) rightly costs the
    // holder its lock under the default policy, and only that: what the holder was told once it
    // is connected again is what its release must report.
    wait_until_connected(&holder_client).await;
    let told = told_lost(&holder);
    let holder_token = holder.fencing_token();
    let released = tokio::time::timeout(PROMPTLY, holder.release()).await.expect("release hung");
    match told {
        None => released.unwrap(),
        Some(reason) => {
            assert!(matches!(reason, LossReason::Disconnected { .. }), "lost for {reason:?}");
            assert!(matches!(released, Err(zklock::Error::LockLost(lost)) if lost == reason), "{released:?}");
        }
    }
    let waiter_token = tokio::time::timeout(PROMPTLY, waiting).await.expect("waiter stuck").unwrap().unwrap();
    assert!(waiter_token > holder_token);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_leader_delays_but_does_not_break_the_handoff() {
    let _one = ONE_ENSEMBLE.lock().await;
    let mut ensemble = Ensemble::start(3).await.expect("start an ensemble");
    let path = unique_path("leader-pause");
    let holder_client = connect_to_ensemble(&ensemble).await;
    let waiter_client = connect_to_ensemble(&ensemble).await;
    let holder = InterProcessMutex::new(&holder_client, &path).unwrap().acquire().await.unwrap();
    let waiter = InterProcessMutex::new(&waiter_client, &path).unwrap();
    let waiting = tokio::spawn(async move { waiter.acquire().await.map(drop) });
    wait_for_children(&holder_client, &path, 2).await;

    let leader = ensemble.leader().expect("a leader");
    ensemble.pause(leader);
    let release = tokio::spawn(holder.release());
    tokio::time::sleep(Duration::from_secs(2)).await;
    ensemble.resume(leader);
    tokio::time::timeout(PROMPTLY, release).await.expect("release hung").unwrap().unwrap();
    tokio::time::timeout(PROMPTLY, waiting).await.expect("waiter stuck").unwrap().unwrap();
}

#[tokio::test]
async fn a_release_while_the_waiter_is_reconnecting_still_wakes_it() {
    let path = unique_path("watch-during-reconnect");
    let holder_client = connect().await;
    let holder = InterProcessMutex::new(&holder_client, &path).unwrap().acquire().await.unwrap();
    let proxy = Proxy::start(server().address()).unwrap();
    let waiter_client = Client::connector()
        .with_session_timeout(Duration::from_secs(15))
        .connect(&proxy.connect_string())
        .await
        .unwrap();
    let waiter = InterProcessMutex::new(&waiter_client, &path).unwrap();
    let waiting = tokio::spawn(async move { waiter.acquire().await.map(drop) });
    wait_for_children(&holder_client, &path, 2).await;

    proxy.cut();
    holder.release().await.unwrap(); // the watch fires while the waiter cannot hear it
    tokio::time::sleep(Duration::from_millis(500)).await;
    proxy.heal(); // on reconnect the client re-sets its watches and the server fires them
    tokio::time::timeout(PROMPTLY, waiting).await.expect("waiter missed the release").unwrap().unwrap();
    wait_for_children(&holder_client, &path, 0).await;
}
