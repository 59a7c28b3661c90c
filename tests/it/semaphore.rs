//! InterProcessSemaphoreV2 and InterProcessSemaphoreMutex: Curator's layout, never more leases
//! than allowed, all-or-none, not reentrant where Curator's is not.

use crate::common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{children, connect, unique_path, Inside};
use tokio::sync::Barrier;
use tokio::task::JoinHandle;
use zklock::hold::Hold;
use zklock::{Error, InterProcessSemaphoreMutex, InterProcessSemaphoreV2, Lease};
use zookeeper_client::Client;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn never_more_leases_than_the_semaphore_has() {
    const LEASES: u32 = 3;
    const TASKS: usize = 6;
    let path = unique_path("semaphore");
    // Counted on the server, by every holder once it holds.
    let inside = Arc::new(Inside::new(&connect().await, "semaphore-inside").await);
    let most = Arc::new(AtomicUsize::new(0));
    let ready = Arc::new(Barrier::new(TASKS));
    let mut tasks = Vec::new();
    for _ in 0..TASKS {
        let (path, inside, most, ready) = (path.clone(), inside.clone(), most.clone(), ready.clone());
        tasks.push(tokio::spawn(async move {
            let client = connect().await;
            let semaphore = InterProcessSemaphoreV2::new(&client, &path, LEASES).unwrap();
            ready.wait().await;
            for round in 0..4 {
                let lease = semaphore.acquire().await.unwrap();
                let (mark, now) = inside.enter(&client).await;
                most.fetch_max(now, Ordering::SeqCst);
                if round == 0 {
                    // Every party started at once: the first holders stay until all the leases
                    // are taken, so that sharing really happens.
                    let all_taken = Instant::now() + Duration::from_secs(10);
                    while inside.count(&client).await < LEASES as usize && Instant::now() < all_taken {
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                    most.fetch_max(inside.count(&client).await, Ordering::SeqCst);
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
                inside.leave(&client, &mark).await;
                lease.release().await.unwrap();
            }
        }));
    }
    for task in tasks {
        tokio::time::timeout(Duration::from_secs(60), task).await.expect("the holders never finished").unwrap();
    }
    let most = most.load(Ordering::SeqCst);
    assert_eq!(most, LEASES as usize, "most holders inside at once, as ZooKeeper saw them");
    let client = connect().await;
    assert!(children(&client, &format!("{path}/leases")).await.is_empty());
}

#[tokio::test]
async fn leases_follow_curators_layout_and_several_are_all_or_none() {
    let path = unique_path("semaphore-many");
    let client = connect().await;
    let semaphore = InterProcessSemaphoreV2::new(&client, &path, 3).unwrap();
    let two = semaphore.acquire_many(2).await.unwrap();
    assert_eq!(two.len(), 2);
    for lease in &two {
        let name = lease.node_path().strip_prefix(&format!("{path}/leases/")).expect("under leases/");
        assert!(name.starts_with("_c_") && name.contains("-lease-"), "{name}");
    }
    assert_eq!(semaphore.participants().await.unwrap().len(), 2);
    // Two more do not fit: none is taken, and the one that fit is returned.
    let other_client = connect().await;
    let other = InterProcessSemaphoreV2::new(&other_client, &path, 3).unwrap();
    assert!(other.acquire_many_timeout(2, Duration::from_millis(300)).await.unwrap().is_none());
    assert_eq!(children(&client, &format!("{path}/leases")).await.len(), 2);
    let one = other.try_acquire().await.unwrap().expect("one lease is free");
    assert!(other.try_acquire().await.unwrap().is_none(), "all three are taken");
    assert!(matches!(other.acquire_many(4).await, Err(Error::InvalidOptions(_))));
    assert!(matches!(other.acquire_many(0).await, Err(Error::InvalidOptions(_))));
    assert!(matches!(InterProcessSemaphoreV2::new(&client, &path, 0), Err(Error::InvalidOptions(_))));
    one.release().await.unwrap();
    for lease in two {
        lease.release().await.unwrap();
    }
    assert!(children(&client, &format!("{path}/leases")).await.is_empty());
}

#[tokio::test]
async fn a_cancelled_lease_acquire_leaves_nothing_behind() {
    let path = unique_path("semaphore-cancel");
    let client = connect().await;
    let semaphore = InterProcessSemaphoreV2::new(&client, &path, 1).unwrap();
    let held = semaphore.acquire().await.unwrap();
    for micros in [0, 100, 1_000, 5_000, 50_000] {
        let outcome = tokio::time::timeout(Duration::from_micros(micros), semaphore.acquire()).await;
        assert!(outcome.is_err());
    }
    common::wait_for_children(&client, &format!("{path}/leases"), 1).await;
    common::wait_for_children(&client, &format!("{path}/locks"), 0).await;
    held.release().await.unwrap();
    semaphore.try_acquire().await.unwrap().expect("free again").release().await.unwrap();
}

/// Two acquires of one semaphore joined in one task are two participants: the semaphore's
/// internal lock must not let the second in beside the first (it did, being reentrant per task:
/// both created leases, and with one lease both waited for ever, holding the internal lock).
#[tokio::test]
async fn two_acquires_joined_in_one_task_take_turns() {
    let path = unique_path("semaphore-join");
    let client = connect().await;
    let semaphore = InterProcessSemaphoreV2::new(&client, &path, 1).unwrap();
    let most = Arc::new(AtomicUsize::new(0));
    let held = Arc::new(AtomicUsize::new(0));
    let take = || async {
        let lease = semaphore.acquire().await.unwrap();
        let now = held.fetch_add(1, Ordering::SeqCst) + 1;
        most.fetch_max(now, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(50)).await;
        held.fetch_sub(1, Ordering::SeqCst);
        lease.release().await.unwrap();
    };
    tokio::time::timeout(Duration::from_secs(20), async { tokio::join!(take(), take(), take()) })
        .await
        .expect("joined acquires of one semaphore hang");
    assert_eq!(most.load(Ordering::SeqCst), 1);
    assert!(children(&client, &format!("{path}/leases")).await.is_empty());
    assert!(children(&client, &format!("{path}/locks")).await.is_empty());
}

/// The lease of a semaphore mutex belongs to whoever holds the value, not to the task that
/// acquired it: a dispatcher that hands its lease to a worker and acquires again waits for the
/// worker's release, as Curator's does. A task that keeps its lease and asks again waits for
/// itself, as with tokio's `Mutex`: bounded by its timeout, it gets `None` and leaves nothing.
#[tokio::test]
async fn the_semaphore_mutex_follows_its_lease_not_the_task_that_acquired_it() {
    let path = unique_path("semaphore-mutex");
    let client = connect().await;
    let mutex = InterProcessSemaphoreMutex::new(&client, &path).unwrap();
    let lease = mutex.acquire().await.unwrap();
    // Kept by this task: asking again can only time out.
    assert!(mutex.try_acquire().await.unwrap().is_none());
    assert!(mutex.acquire_timeout(Duration::from_millis(300)).await.unwrap().is_none());
    assert_eq!(children(&client, &format!("{path}/leases")).await.len(), 1, "only the held lease");
    // Handed to a worker: the dispatcher waits for the worker's release, then holds.
    let worker = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        lease.release().await
    });
    let next = mutex.acquire_timeout(Duration::from_secs(10)).await.unwrap().expect("the dispatcher gets it back");
    assert!(worker.is_finished(), "held only after the worker released");
    worker.await.unwrap().unwrap();
    // And the worker's way round: a lease released from a task that never acquired it.
    tokio::spawn(next.release()).await.unwrap().unwrap();
    let again = mutex.try_acquire().await.unwrap().expect("free after release");
    again.release().await.unwrap();
    assert!(children(&client, &format!("{path}/leases")).await.is_empty());
}

/// A semaphore of one lease on a path of its own (`name`) held by one session, and another
/// session's taker waiting for room (for 20 s) once both lease nodes are there; with an
/// operator's session and the leases' directory.
async fn one_holds_one_waits(name: &str) -> (Lease, JoinHandle<zklock::Result<Option<Lease>>>, Client, String) {
    let path = unique_path(name);
    let leases = format!("{path}/leases");
    let (a, b, operator) = (connect().await, connect().await, connect().await);
    let held = InterProcessSemaphoreV2::new(&a, &path, 1).unwrap().acquire().await.unwrap();
    let waiter = InterProcessSemaphoreV2::new(&b, &path, 1).unwrap();
    let waiting = tokio::spawn(async move { waiter.acquire_timeout(Duration::from_secs(20)).await });
    common::wait_for_children(&operator, &leases, 2).await;
    (held, waiting, operator, leases)
}

/// A lease node deleted while its taker waits for room (an operator, say) is not an error: the
/// taker queues again with a new node, as Curator's does, and gets a lease once one is free.
#[tokio::test]
async fn a_waiting_lease_whose_node_is_deleted_queues_again() {
    let (held, waiting, operator, leases) = one_holds_one_waits("semaphore-requeue").await;
    let held_name = held.node_path().rsplit('/').next().unwrap().to_owned();
    let waiting_name = children(&operator, &leases).await.into_iter().find(|name| *name != held_name).unwrap();
    operator.delete(&format!("{leases}/{waiting_name}"), None).await.unwrap();
    // It queues again behind the holder.
    common::eventually("the waiter queued a new lease node", || async {
        let now = children(&operator, &leases).await;
        now.len() == 2 && !now.contains(&waiting_name)
    })
    .await;
    assert!(!waiting.is_finished());
    held.release().await.unwrap();
    let lease = waiting.await.unwrap().expect("no error for a deleted waiting lease").expect("a lease in time");
    assert!(!lease.node_path().ends_with(&waiting_name));
}

/// The leases' directory gone under a waiting taker (every lease in it deleted, an operator's
/// `deleteall` or the server reaping the emptied container before the taker lists it again) is
/// its lease deleted: it starts over and gets a lease, as for one deleted node. It failed with
/// `ZooKeeper { operation: "list", source: NoNode }` (a CI run caught it in the contract suite's
/// ghost test of the semaphore mutex, where the reaper won the race).
#[tokio::test]
async fn a_waiting_lease_whose_directory_goes_starts_over() {
    let (held, waiting, operator, leases) = one_holds_one_waits("semaphore-directory-gone").await;
    let mut deleteall = operator.new_multi_writer();
    for name in children(&operator, &leases).await {
        deleteall.add_delete(&format!("{leases}/{name}"), None).unwrap();
    }
    deleteall.add_delete(&leases, None).unwrap();
    deleteall.commit().await.unwrap();
    let lease = waiting.await.unwrap().expect("no error for a directory gone").expect("a lease in time");
    assert!(held.release().await.is_err(), "the holder's lease went with the directory");
    lease.release().await.unwrap();
}

#[tokio::test]
async fn available_counts_the_free_leases() {
    let path = unique_path("semaphore-available");
    let client = connect().await;
    let semaphore = InterProcessSemaphoreV2::new(&client, &path, 3).unwrap();
    assert_eq!(semaphore.available().await.unwrap(), 3, "a semaphore nobody used yet has every lease free");
    let two = semaphore.acquire_many(2).await.unwrap();
    assert_eq!(semaphore.available().await.unwrap(), 1);
    let last = semaphore.acquire().await.unwrap();
    assert_eq!(semaphore.available().await.unwrap(), 0);
    assert_eq!(semaphore.participants().await.unwrap().len(), 3, "the three leases held");
    last.release().await.unwrap();
    for lease in two {
        lease.release().await.unwrap();
    }
    assert_eq!(semaphore.available().await.unwrap(), 3);
}
