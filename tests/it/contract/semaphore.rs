//! The semaphores' own rules: never more than N leases, however acquires end; leases of one
//! task's joined acquires; a semaphore mutex refuses its holding task, not a task that gave its
//! lease away.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Barrier;
use zklock::hold::Hold;
use zklock::{InterProcessSemaphoreMutex, InterProcessSemaphoreV2, LossReason};

use crate::common::connect_through;
use crate::common::{children, connect, eventually, unique_path, wait_for_children, Inside};
use crate::contract::support::{start_proxy, PROMPTLY};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn never_more_than_two_leases_under_churn_with_cancellations() {
    const LEASES: u32 = 2;
    const SESSIONS: usize = 3;
    const TASKS_PER_SESSION: usize = 2;
    const ROUNDS: usize = 6;
    /// The longest a timed or cancelled acquire waits; every hold lasts longer.
    const MOST_PATIENCE: u64 = 30;
    const HOLD: Duration = Duration::from_millis(MOST_PATIENCE + 10);
    let path = unique_path("semaphore-churn");
    // Counted on the server, by every holder once it holds.
    let inside = Arc::new(Inside::new(&connect().await, "semaphore-churn-inside").await);
    let (most, waited_out, cut_short) =
        (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let ready = Arc::new(Barrier::new(SESSIONS * TASKS_PER_SESSION));
    let mut tasks = Vec::new();
    for _ in 0..SESSIONS {
        let client = connect().await;
        let semaphore = InterProcessSemaphoreV2::new(&client, &path, LEASES).unwrap();
        for task in 0..TASKS_PER_SESSION {
            let (client, semaphore, inside, ready) = (client.clone(), semaphore.clone(), inside.clone(), ready.clone());
            let (most, waited_out, cut_short) = (most.clone(), waited_out.clone(), cut_short.clone());
            tasks.push(tokio::spawn(async move {
                ready.wait().await;
                for round in 0..ROUNDS {
                    let give_up = Duration::from_millis(fastrand::u64(0..MOST_PATIENCE));
                    // Each way an acquire can end: waited out, timed out, dropped midway.
                    let waits = (task + round) % 3 == 0;
                    let lease = match (task + round) % 3 {
                        0 => Some(semaphore.acquire().await.unwrap()),
                        1 => semaphore.acquire_timeout(give_up).await.unwrap(),
                        _ => tokio::time::timeout(give_up, semaphore.acquire()).await.ok().map(Result::unwrap),
                    };
                    let Some(lease) = lease else {
                        cut_short.fetch_add(1, Ordering::SeqCst);
                        continue;
                    };
                    if waits {
                        waited_out.fetch_add(1, Ordering::SeqCst);
                    }
                    let (mark, now) = inside.enter(&client).await;
                    most.fetch_max(now, Ordering::SeqCst);
                    tokio::time::sleep(HOLD).await;
                    inside.leave(&client, &mark).await;
                    lease.release().await.unwrap();
                }
            }));
        }
    }
    for task in tasks {
        tokio::time::timeout(Duration::from_secs(60), task).await.expect("churn never ended").unwrap();
    }
    let most = most.load(Ordering::SeqCst);
    assert_eq!(most, LEASES as usize, "most holders inside at once, as ZooKeeper saw them");
    let attempts = SESSIONS * TASKS_PER_SESSION * ROUNDS;
    assert_eq!(waited_out.load(Ordering::SeqCst), attempts / 3, "every acquire that waits gets its lease");
    // All started at once, three waiting and three timed: the first two leases are held past
    // every timed acquire's patience, so one timed acquire at least was cut short.
    let cut_short = cut_short.load(Ordering::SeqCst);
    assert!(cut_short >= 1, "no acquire was cut short: no churn");
    let observer = connect().await;
    wait_for_children(&observer, &format!("{path}/leases"), 0).await;
    wait_for_children(&observer, &format!("{path}/locks"), 0).await;
}

#[tokio::test]
async fn two_acquires_joined_in_one_task_each_get_their_lease() {
    let path = unique_path("semaphore-joined");
    let holder_client = connect().await;
    let holder = InterProcessSemaphoreV2::new(&holder_client, &path, 1).unwrap().acquire().await.unwrap();
    let client = connect().await;
    let semaphore = InterProcessSemaphoreV2::new(&client, &path, 1).unwrap();
    let take_and_return = || async {
        let lease = semaphore.acquire().await?;
        lease.release().await
    };
    let both = tokio::time::timeout(PROMPTLY, async {
        tokio::join!(take_and_return(), take_and_return(), async {
            // The acquires are under way behind the holder (at least one lease node queued,
            // both with today's code), then it lets go.
            let leases = format!("{path}/leases");
            eventually("a joined acquire queued", || async { children(&holder_client, &leases).await.len() >= 2 })
                .await;
            tokio::time::sleep(Duration::from_millis(100)).await;
            holder.release().await.unwrap();
        })
    })
    .await;
    let (first, second, ()) = both.expect("two joined acquires of one semaphore hang");
    first.unwrap();
    second.unwrap();
    assert!(children(&client, &format!("{path}/leases")).await.is_empty());
}

/// A task that keeps its lease and asks again waits for itself (a kept lease and a handed-over
/// one look the same): bounded by its timeout it gives up, leaving no node and no hold of the
/// semaphore's internal lock behind.
#[tokio::test]
async fn the_semaphore_mutex_holding_task_times_out_without_a_node() {
    let path = unique_path("semaphore-mutex-reentry");
    let client = connect().await;
    let mutex = InterProcessSemaphoreMutex::new(&client, &path).unwrap();
    let lease = mutex.acquire().await.unwrap();
    assert!(mutex.try_acquire().await.unwrap().is_none());
    assert!(mutex.acquire_timeout(Duration::from_millis(300)).await.unwrap().is_none());
    assert_eq!(children(&client, &format!("{path}/leases")).await.len(), 1, "the give-up left a lease");
    assert!(children(&client, &format!("{path}/locks")).await.is_empty(), "the give-up kept the mutex");
    lease.release().await.unwrap();
}

#[tokio::test]
async fn a_task_that_handed_its_lease_away_waits_for_it_and_gets_it() {
    let path = unique_path("semaphore-mutex-handed");
    let client = connect().await;
    let mutex = InterProcessSemaphoreMutex::new(&client, &path).unwrap();
    let lease = mutex.acquire().await.unwrap();
    let released = Arc::new(AtomicUsize::new(0));
    let worker = tokio::spawn({
        let released = released.clone();
        async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            released.fetch_add(1, Ordering::SeqCst);
            lease.release().await.unwrap();
        }
    });
    // This task no longer holds the lease: it waits for the worker, like anyone else.
    let again = tokio::time::timeout(PROMPTLY, mutex.acquire()).await.expect("never got the lease back");
    let again = again.expect("a task that gave its lease away was refused");
    assert_eq!(released.load(Ordering::SeqCst), 1, "got the lease before the worker returned it");
    again.release().await.unwrap();
    worker.await.unwrap();
}

/// A lease outlives the semaphore object it came from (nothing in its docs says otherwise), so
/// it must still hear of a long disconnection. Today the session's loss watch goes with the last
/// semaphore object (leases only hold it weakly): only a later session expiry is reported.
#[tokio::test]
async fn a_lease_hears_of_a_long_disconnection_after_its_semaphore_is_dropped() {
    let session_timeout = Duration::from_secs(6);
    let path = unique_path("semaphore-dropped-lost");
    let proxy = start_proxy();
    let client = connect_through(&proxy, session_timeout).await;
    let lease = InterProcessSemaphoreV2::new(&client, &path, 1).unwrap().acquire().await.unwrap();
    proxy.blackhole();
    let reason = tokio::time::timeout(session_timeout * 3, lease.lost()).await.expect("loss not signalled");
    proxy.heal();
    assert!(matches!(reason, LossReason::Disconnected { .. }), "{reason:?}");
}
