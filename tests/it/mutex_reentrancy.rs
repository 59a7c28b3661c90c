//! Reentrancy: per owner, nested guards, any release order; a waiter cancelled behind its
//! owner's own acquire, and a lost hold that refuses reentry.

use crate::common;

use common::{children, connect, connect_to, eventually, server, unique_path, wait_for_children};
use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use zklock::hold::Hold;
use zklock::{Error, InterProcessMutex, LossReason};
use zklock_testcontainers::{expire_session, Proxy};

/// Generous bound for "promptly": a hang exceeds it, a slow machine does not.
const PROMPTLY: Duration = Duration::from_secs(10);

#[tokio::test]
async fn nested_acquires_share_one_node_released_by_the_last_guard_in_any_order() {
    let path = unique_path("nesting");
    let client = connect().await;
    let mutex = InterProcessMutex::new(&client, &path).unwrap();
    let rival_client = connect().await;
    let rival = InterProcessMutex::new(&rival_client, &path).unwrap();

    let outer = mutex.acquire().await.unwrap();
    let middle = mutex.acquire().await.unwrap();
    let inner = mutex.try_acquire().await.unwrap().expect("reentrant try_acquire succeeds");
    assert_eq!(children(&client, &path).await.len(), 1, "reentrant acquires create no node");
    assert_eq!(outer.node_path(), inner.node_path());
    assert_eq!(outer.fencing_token(), middle.fencing_token());
    assert!(mutex.is_acquired_by_current_task());

    // Release out of order: the middle one first, then the outer; the inner still holds.
    middle.release().await.unwrap();
    outer.release().await.unwrap();
    assert!(mutex.is_acquired_by_current_task());
    assert!(rival.try_acquire().await.unwrap().is_none(), "others stay out until the last release");
    assert_eq!(children(&client, &path).await.len(), 1);

    inner.release().await.unwrap();
    assert!(!mutex.is_acquired_by_current_task());
    assert!(!mutex.is_acquired_in_this_process());
    assert!(children(&client, &path).await.is_empty(), "the last release deletes the node");
    let guard = rival.try_acquire().await.unwrap().expect("free after the last release");
    guard.release().await.unwrap();
}

#[tokio::test]
async fn concurrent_acquires_in_one_task_share_the_hold() {
    let path = unique_path("join");
    let client = connect().await;
    let mutex = InterProcessMutex::new(&client, &path).unwrap();
    // Both futures run in the same task: the second waits for the first and re-enters instead of
    // queueing behind its own owner (which would never end).
    let (first, second) = tokio::join!(mutex.acquire(), mutex.acquire());
    let (first, second) = (first.unwrap(), second.unwrap());
    assert_eq!(first.node_path(), second.node_path());
    assert_eq!(children(&client, &path).await.len(), 1);
    drop(first);
    second.release().await.unwrap();
    assert!(children(&client, &path).await.is_empty());
}

#[tokio::test]
async fn a_guard_moved_to_another_task_does_not_make_that_task_an_owner() {
    let path = unique_path("moved-guard");
    let client = connect().await;
    let mutex = InterProcessMutex::new(&client, &path).unwrap();
    let guard = mutex.acquire().await.unwrap();
    let other = mutex.clone();
    let result = tokio::spawn(async move {
        let reentered = other.try_acquire().await.unwrap();
        let owned = other.is_acquired_by_current_task();
        guard.release().await.unwrap();
        (reentered.is_some(), owned)
    })
    .await
    .unwrap();
    assert_eq!(result, (false, false));
    assert!(children(&client, &path).await.is_empty());
}

#[tokio::test]
async fn dropping_the_guards_releases_in_the_background() {
    let path = unique_path("drop");
    let client = connect().await;
    let mutex = InterProcessMutex::new(&client, &path).unwrap();
    let outer = mutex.acquire().await.unwrap();
    let inner = mutex.acquire().await.unwrap();
    drop(inner);
    assert_eq!(children(&client, &path).await.len(), 1, "an inner drop keeps the lock");
    drop(outer);
    assert!(!mutex.is_acquired_in_this_process(), "released in this process at once");
    wait_for_children(&client, &path, 0).await;
}

#[test]
fn outside_a_task_the_thread_is_the_owner() {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let path = unique_path("thread-owner");
        let client = connect().await;
        let mutex = InterProcessMutex::new(&client, &path).unwrap();
        let outer = mutex.acquire().await.unwrap();
        let inner = mutex.acquire().await.unwrap();
        assert!(mutex.is_acquired_by_current_task());
        inner.release().await.unwrap();
        outer.release().await.unwrap();
        assert!(children(&client, &path).await.is_empty());
    });
}

#[tokio::test]
async fn a_non_reentrant_mutex_makes_every_acquire_a_participant_of_its_own() {
    let path = unique_path("not-reentrant");
    let client = connect().await;
    let mutex = InterProcessMutex::builder(&client, &path).reentrant(false).build().unwrap();
    let held = mutex.acquire().await.unwrap();
    assert!(!mutex.is_acquired_by_current_task());
    assert!(mutex.is_acquired_in_this_process());
    // The same task waits for itself, and leaves nothing behind when it gives up.
    assert!(mutex.try_acquire().await.unwrap().is_none());
    let timeout = std::time::Duration::from_millis(200);
    assert!(mutex.acquire_timeout(timeout).await.unwrap().is_none());
    assert_eq!(children(&client, &path).await.len(), 1);
    held.release().await.unwrap();
    // Two futures of one task take turns: the second holds only once the first released. The
    // server says so: each holds when its node is first in the queue, the first keeps the lock
    // until the second's node is queued behind it, and the second holds with the first's gone.
    let order = std::sync::atomic::AtomicUsize::new(0);
    let turn = || async {
        let guard = mutex.acquire().await.unwrap();
        let ours = guard.node_path().to_owned();
        let queue = mutex.participants().await.unwrap();
        let place = order.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        if place == 0 {
            eventually("the other acquire is queued", || async { mutex.participants().await.unwrap().len() == 2 })
                .await;
        }
        guard.release().await.unwrap();
        (place, ours, queue)
    };
    let (a, b) = tokio::join!(turn(), turn());
    let [first, second] = if a.0 == 0 { [a, b] } else { [b, a] };
    assert_eq!(first.2.first(), Some(&first.1), "the first held at the head of the queue");
    assert_eq!(second.2, std::slice::from_ref(&second.1), "the second held only once the first's node was gone");
    assert!(children(&client, &path).await.is_empty());
}

#[tokio::test]
async fn a_cancelled_waiter_behind_a_reentrant_acquire_lets_the_owner_go_on() {
    let path = unique_path("cancel-pending");
    let holder_client = connect().await;
    let holder = InterProcessMutex::new(&holder_client, &path).unwrap().acquire().await.unwrap();
    let client = connect().await;
    let mutex = InterProcessMutex::new(&client, &path).unwrap();
    // The first acquire of this task queues; the second waits for it; both time out.
    let (first, second) = tokio::join!(
        mutex.acquire_timeout(Duration::from_millis(200)),
        mutex.acquire_timeout(Duration::from_millis(100))
    );
    assert!(first.unwrap().is_none() && second.unwrap().is_none());
    assert_eq!(children(&client, &path).await.len(), 1);
    holder.release().await.unwrap();
    let guard = mutex.acquire_timeout(Duration::from_secs(5)).await.unwrap().expect("owner can acquire again");
    guard.release().await.unwrap();
}

#[tokio::test]
async fn lost_resolves_when_someone_deletes_the_node_and_the_hold_refuses_reentry() {
    let path = unique_path("node-deleted");
    let client = connect().await;
    let mutex = InterProcessMutex::new(&client, &path).unwrap();
    let guard = mutex.acquire().await.unwrap();
    let inner = mutex.acquire().await.unwrap();
    assert!(guard.is_held());
    // Start listening (this sets the node watch), then an operator deletes the node.
    let listening = tokio::time::timeout(Duration::from_millis(100), guard.lost()).await;
    assert!(listening.is_err(), "lost() resolved while held");
    let operator = connect().await;
    operator.delete(guard.node_path(), None).await.unwrap();

    let reason = tokio::time::timeout(PROMPTLY, guard.lost()).await.expect("loss not signalled");
    assert_eq!(reason, LossReason::NodeDeleted);
    assert!(!guard.is_held() && !inner.is_held());
    assert!(matches!(mutex.acquire().await, Err(Error::LockLost(LossReason::NodeDeleted))));
    assert!(matches!(inner.release().await, Err(Error::LockLost(LossReason::NodeDeleted))));
    assert!(matches!(guard.release().await, Err(Error::LockLost(LossReason::NodeDeleted))));
    // Once the lost hold's guards are gone, the owner can take the lock again.
    let again = mutex.try_acquire().await.unwrap().expect("free again");
    again.release().await.unwrap();
}

/// A re-entry on a client that has seen its session expire is refused at once, before the
/// session's watch marks the hold lost: the hold is counted in this process only while its
/// session lives. The watch is a task of the runtime the hold was taken on, and that runtime does
/// not run between the expiry (the client's own runtime sees it) and the re-entry, which is
/// polled once, so the window the watch leaves open is held open here.
#[test]
fn a_reentry_after_the_client_saw_its_session_expire_is_refused_before_the_loss_is_marked() {
    let io = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let holds = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let proxy = Proxy::start(server().address()).unwrap();
    let client = io.block_on(connect_to(&proxy.connect_string()));
    let path = unique_path("reenter-expired");
    let (mutex, guard) = holds.block_on(async {
        let mutex = InterProcessMutex::new(&client, &path).unwrap();
        let guard = mutex.acquire().await.unwrap();
        (mutex, guard)
    });

    io.block_on(expire_session(&client, &proxy)).unwrap();
    // `holds` runs its outer future first: no task of it (the session's watch) runs before the
    // one poll of the re-entry.
    let reentry = holds.block_on(async {
        let mut reentry = pin!(mutex.acquire());
        match reentry.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
            Poll::Ready(outcome) => Some(outcome),
            Poll::Pending => None,
        }
    });

    assert!(matches!(reentry, Some(Err(Error::SessionExpired))), "{reentry:?}");
    assert!(!guard.is_held(), "the guard's session ended");
    let released = holds.block_on(guard.release());
    assert!(matches!(released, Err(Error::LockLost(LossReason::SessionExpired))), "{released:?}");
}
