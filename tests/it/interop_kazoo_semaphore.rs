//! zklock's semaphore in kazoo's layout (`.node_schema(NodeSchema::Kazoo)`) and the real kazoo
//! `Semaphore` (Debian's python3-kazoo) share one semaphore: never more leases than the maximum
//! among both libraries' holders, turns passing both ways under contention, a lease zklock loses
//! (its session expired, its node deleted) going to kazoo, and a different `max_leases` refused
//! by each side, as kazoo refuses it, with nothing left behind.

use crate::common;

use std::time::Duration;

use common::interop::{check_leases, check_turns, finish, logged_section, temp_log, Peer, StartLine};
use common::session::lost_to_the_expiry;
use common::{children, connect, connect_through, eventually, server, unique_path};
use zklock::hold::Hold;
use zklock::{Error, InterProcessSemaphoreV2, LossReason, NodeSchema};
use zklock_testcontainers::{expire_session, Proxy};

const ITERATIONS: u32 = 15;
const LEASES: u32 = 2;
/// Bounds every wait for a lease and for a peer to finish its rounds.
const PEER_TIMEOUT: Duration = Duration::from_secs(60);
/// Switches between zklock and kazoo holders the shared log must show each way.
const SWITCHES: usize = 5;

fn kazoo_semaphore(client: &zklock::zookeeper_client::Client, path: &str, max_leases: u32) -> InterProcessSemaphoreV2 {
    InterProcessSemaphoreV2::builder(client, path, max_leases).node_schema(NodeSchema::Kazoo).build().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zklock_and_kazoo_semaphores_never_hold_more_than_max_leases() {
    let path = unique_path("kazoo-semaphore");
    let log = temp_log("kazoo-semaphore");
    let start = StartLine::new(3);
    // Each kazoo peer also counts the leases on the server while it holds one, and fails if
    // there are more than the maximum.
    let mode = format!("semaphore:{LEASES}");
    let mut peers = [
        Peer::kazoo("kazoo-1", &path, &mode, ITERATIONS, 20, &log, &[]),
        Peer::kazoo("kazoo-2", &path, &mode, ITERATIONS, 20, &log, &[]),
    ];
    let mut rust = Vec::new();
    for name in ["zklock-1", "zklock-2", "zklock-3"] {
        let (path, log, start) = (path.clone(), log.clone(), start.clone());
        rust.push(tokio::spawn(async move {
            let client = connect().await;
            let semaphore = kazoo_semaphore(&client, &path, LEASES);
            start.ready().await;
            for _ in 0..ITERATIONS {
                let lease = semaphore.acquire_timeout(PEER_TIMEOUT).await.unwrap().expect("zklock starved");
                assert_eq!(lease.node_path().rsplit('/').next().unwrap().len(), 32, "a kazoo lease name");
                let held = children(&client, &path).await.len();
                assert!(held <= LEASES as usize, "{held} leases on the server while {name} holds one");
                logged_section(&log, name, "semaphore", Duration::from_millis(20)).await;
                lease.release().await.unwrap();
            }
        }));
    }
    start.open(&mut peers).await;
    finish(rust, peers, PEER_TIMEOUT).await;
    let expected = [
        ("kazoo-1", ITERATIONS),
        ("kazoo-2", ITERATIONS),
        ("zklock-1", ITERATIONS),
        ("zklock-2", ITERATIONS),
        ("zklock-3", ITERATIONS),
    ];
    let most = check_leases(&log, LEASES as usize, &expected);
    let turns = check_turns(&log, SWITCHES);
    eprintln!("at most {most} leases held at once; {turns:?}");
    assert_eq!(most, LEASES as usize, "the leases were never all taken: no contention");
    assert!(turns.shared_across > 0, "zklock and kazoo never held leases at once");
    let observer = connect().await;
    assert!(children(&observer, &path).await.is_empty(), "a lease was left behind");
    assert!(children(&observer, &format!("{path}-__lock__")).await.is_empty(), "a gate node was left behind");
    let _ = std::fs::remove_file(&log);
}

/// How a zklock holder loses its lease in [`a_lost_zklock_lease_goes_to_the_waiting_kazoo`].
#[derive(Clone, Copy, Debug)]
enum Loss {
    SessionExpires,
    OperatorDeletesTheLease,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_whose_session_expires_goes_to_the_waiting_kazoo() {
    a_lost_zklock_lease_goes_to_the_waiting_kazoo(Loss::SessionExpires).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_whose_node_an_operator_deletes_goes_to_the_waiting_kazoo() {
    a_lost_zklock_lease_goes_to_the_waiting_kazoo(Loss::OperatorDeletesTheLease).await;
}

/// zklock holds the only lease; a kazoo taker waits for it (holding the gate); the lease is lost
/// to `loss`: zklock's lease reports the loss, and kazoo takes the lease.
async fn a_lost_zklock_lease_goes_to_the_waiting_kazoo(loss: Loss) {
    let path = unique_path("kazoo-semaphore-loss");
    let log = temp_log(&format!("kazoo-semaphore-{loss:?}"));
    let proxy = Proxy::start(server().address()).unwrap();
    let client = connect_through(&proxy, Duration::from_secs(20)).await;
    let observer = connect().await;
    let lease = kazoo_semaphore(&client, &path, 1).try_acquire().await.unwrap().expect("the semaphore is free");

    let mut kazoo = Peer::kazoo("kazoo-taker", &path, "semaphore:1", 1, 0, &log, &[]);
    kazoo.start().await;
    // Once kazoo holds the gate it waits for room: the lease zklock holds keeps it out.
    let gate = format!("{path}-__lock__");
    eventually("kazoo waits on the gate", || async { children(&observer, &gate).await.len() == 1 }).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!std::fs::read_to_string(&log).unwrap_or_default().contains("enter"), "kazoo took a lease zklock holds");

    match loss {
        Loss::SessionExpires => expire_session(&client, &proxy).await.unwrap(),
        Loss::OperatorDeletesTheLease => observer.delete(lease.node_path(), None).await.unwrap(),
    }
    let reason = tokio::time::timeout(PEER_TIMEOUT, lease.lost()).await.expect("the loss was never told");
    match loss {
        Loss::SessionExpires => assert!(lost_to_the_expiry(reason), "{reason:?}"),
        Loss::OperatorDeletesTheLease => assert_eq!(reason, LossReason::NodeDeleted),
    }
    tokio::task::block_in_place(|| kazoo.wait_success(PEER_TIMEOUT));
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("enter kazoo-taker semaphore"), "kazoo never took the lease\n{text}");
    drop(lease);
    let _ = std::fs::remove_file(&log);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kazoo_refuses_a_max_leases_other_than_the_one_zklock_stored() {
    let path = unique_path("kazoo-semaphore-mismatch");
    let log = temp_log("kazoo-semaphore-mismatch");
    let client = connect().await;
    kazoo_semaphore(&client, &path, 2).acquire().await.unwrap().release().await.unwrap();

    let mut kazoo = Peer::kazoo("kazoo-3", &path, "semaphore:3", 1, 0, &log, &[]);
    kazoo.start().await;
    let exited = tokio::time::timeout(PEER_TIMEOUT, async {
        while !kazoo.has_exited() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
    exited.await.expect("kazoo neither refused nor took the lease");
    let text = std::fs::read_to_string(&log).unwrap();
    assert_eq!(text, "refused kazoo-3 semaphore\n", "kazoo took a lease of a semaphore of 2 as one of 3");
    let _ = std::fs::remove_file(&log);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zklock_refuses_a_max_leases_other_than_the_one_kazoo_stored_and_leaves_nothing() {
    let path = unique_path("kazoo-semaphore-mismatch");
    let log = temp_log("kazoo-semaphore-stored");
    let kazoo = Peer::kazoo("kazoo-3", &path, "semaphore:3", 1, 0, &log, &[]);
    let mut kazoo = [kazoo];
    StartLine::new(0).open(&mut kazoo).await;
    finish(Vec::new(), kazoo, PEER_TIMEOUT).await;

    let client = connect().await;
    let semaphore = kazoo_semaphore(&client, &path, 2);
    let refused = |outcome: Result<_, Error>| match outcome {
        Err(Error::MaxLeasesMismatch { path: refused, stored, max_leases: 2 }) => {
            assert_eq!((refused.as_str(), stored.as_str()), (path.as_str(), "3"));
        }
        other => panic!("not refused: {:?}", other.map(|_: Option<zklock::Lease>| ())),
    };
    refused(semaphore.try_acquire().await);
    refused(semaphore.acquire_timeout(Duration::from_secs(5)).await);
    refused(semaphore.acquire().await.map(Some));
    let err = semaphore.try_acquire().await.unwrap_err();
    assert!(err.to_string().contains("stores max_leases 3, not 2"), "{err}");
    assert!(children(&client, &path).await.is_empty(), "a refused acquire left a lease");
    assert!(children(&client, &format!("{path}-__lock__")).await.is_empty(), "a refused acquire left a gate node");
    // The one it shares the semaphore with (the same maximum) takes a lease as before.
    let lease = kazoo_semaphore(&client, &path, 3).try_acquire().await.unwrap();
    assert!(lease.is_some(), "a semaphore of 3 on a path that stores 3 is refused");
    let _ = std::fs::remove_file(&log);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timed_out_or_dropped_acquire_behind_kazoo_leaves_no_node() {
    let path = unique_path("kazoo-semaphore-gave-up");
    let log = temp_log("kazoo-semaphore-gave-up");
    let mut holder = Peer::kazoo("kazoo-holder", &path, "semaphore:1", 1, 60_000, &log, &[]);
    holder.start().await;
    eventually("kazoo holds the lease", || async {
        std::fs::read_to_string(&log).is_ok_and(|text| text.contains("enter kazoo-holder"))
    })
    .await;
    let client = connect().await;
    let gate = format!("{path}-__lock__");
    let kazoo_lease = children(&client, &path).await;
    assert_eq!(kazoo_lease.len(), 1);

    let semaphore = kazoo_semaphore(&client, &path, 1);
    assert!(semaphore.acquire_timeout(Duration::from_millis(500)).await.unwrap().is_none(), "kazoo holds it");
    assert!(semaphore.try_acquire().await.unwrap().is_none(), "kazoo holds it");
    assert_eq!(children(&client, &path).await, kazoo_lease, "a timed-out acquire left a lease");
    assert!(children(&client, &gate).await.is_empty(), "a timed-out acquire left its gate node");

    let waiting = tokio::spawn({
        let semaphore = semaphore.clone();
        async move { semaphore.acquire().await }
    });
    eventually("zklock waits for room, holding the gate", || async { children(&client, &gate).await.len() == 1 }).await;
    waiting.abort();
    assert!(waiting.await.unwrap_err().is_cancelled());
    eventually("the dropped acquire's gate node goes", || async { children(&client, &gate).await.is_empty() }).await;
    assert_eq!(children(&client, &path).await, kazoo_lease, "a dropped acquire left a lease");
    drop(holder);
    let _ = std::fs::remove_file(&log);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acquire_many_beside_a_kazoo_holder_is_all_or_none_with_a_token_per_lease() {
    let path = unique_path("kazoo-semaphore-many");
    let log = temp_log("kazoo-semaphore-many");
    let mut holder = Peer::kazoo("kazoo-holder", &path, "semaphore:3", 1, 60_000, &log, &[]);
    holder.start().await;
    eventually("kazoo holds a lease", || async {
        std::fs::read_to_string(&log).is_ok_and(|text| text.contains("enter kazoo-holder"))
    })
    .await;
    let client = connect().await;
    let semaphore = kazoo_semaphore(&client, &path, 3);
    // Three leases cannot be had beside kazoo's: the two taken first are returned.
    assert!(semaphore.acquire_many_timeout(3, Duration::from_millis(500)).await.unwrap().is_none());
    assert_eq!(children(&client, &path).await.len(), 1, "an all-or-none acquire kept some leases");
    let leases = semaphore.acquire_many_timeout(2, PEER_TIMEOUT).await.unwrap().expect("two leases are free");
    assert_eq!(semaphore.available().await.unwrap(), 0);
    assert_eq!(semaphore.participants().await.unwrap().len(), 3, "kazoo's lease and our two");
    for lease in &leases {
        let stat = client.check_stat(lease.node_path()).await.unwrap().expect("the lease node exists");
        assert_eq!(lease.fencing_token(), stat.czxid, "a lease's token is its node's czxid");
        assert_eq!(stat.ephemeral_owner, client.session_id().0);
    }
    assert!(leases[0].fencing_token() < leases[1].fencing_token());
    for lease in leases {
        lease.release().await.unwrap();
    }
    assert_eq!(children(&client, &path).await.len(), 1, "kazoo's lease alone is left");
    drop(holder);
    let _ = std::fs::remove_file(&log);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zklock_makes_the_path_and_the_gate_persistent_as_kazoo_does() {
    // A container would be reaped once empty, under a kazoo taker that has just ensured it and
    // is about to create its node there. The test server reaps empty containers every second
    // (DESIGN.md, "Test servers"); the stat does not tell a container apart, so three reaping
    // rounds are let pass.
    let path = unique_path("kazoo-semaphore-paths");
    let client = connect().await;
    kazoo_semaphore(&client, &path, 2).acquire().await.unwrap().release().await.unwrap();
    tokio::time::sleep(Duration::from_secs(3)).await;
    for node in [path.clone(), format!("{path}-__lock__")] {
        assert!(client.check_stat(&node).await.unwrap().is_some(), "{node} was reaped as an empty container");
    }
    assert_eq!(client.get_data(&path).await.unwrap().0, b"2", "the maximum, as kazoo stores it");
}

/// A path node made anew while a participant runs (an operator's `deleteall`, then a kazoo
/// `Semaphore` of 3 that makes it again with its maximum) is checked again by the same semaphore
/// object: its next acquire is refused as a new object's would be, with nothing left behind.
/// Before, the check was made once per object, and the next acquire took a lease as one of 2
/// on a semaphore of 3.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_path_made_anew_with_another_maximum_is_checked_again() {
    let path = unique_path("kazoo-semaphore-remade");
    let client = connect().await;
    let semaphore = kazoo_semaphore(&client, &path, 2);
    semaphore.acquire().await.unwrap().release().await.unwrap();
    client.delete(&path, None).await.unwrap();
    let log = temp_log("kazoo-semaphore-remade");
    let mut kazoo = [Peer::kazoo("kazoo-3", &path, "semaphore:3", 1, 0, &log, &[])];
    StartLine::new(0).open(&mut kazoo).await;
    finish(Vec::new(), kazoo, PEER_TIMEOUT).await;
    match semaphore.try_acquire().await {
        Err(Error::MaxLeasesMismatch { stored, max_leases: 2, .. }) => assert_eq!(stored, "3"),
        other => panic!("not refused: {:?}", other.map(|lease| lease.is_some())),
    }
    assert!(children(&client, &path).await.is_empty(), "a refused acquire left a lease");
    // Refused once it held the gate, whose release (as a dropped guard's) is sent as it returns.
    let gate = format!("{path}-__lock__");
    eventually("the gate's node is gone", || async { children(&client, &gate).await.is_empty() }).await;
    let _ = std::fs::remove_file(&log);
}
