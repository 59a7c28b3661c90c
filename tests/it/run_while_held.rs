//! Work run only while a hold stands (`run_while_held`, `run_while_leading`, `Hold::while_held`):
//! each way it can end — done, lost, given up, timed out — says so, the work is dropped the
//! moment the hold ends, and the lock is free afterwards.

use crate::common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{connect, unique_path};
use tokio::sync::oneshot;
use zklock::election::Leadership;
use zklock::hold::{Hold, RunEnd};
use zklock::{InterProcessMutex, InterProcessSemaphoreV2, LeaderLatch, Lease, LockGuard, LossReason};

/// How long a test waits for what must happen at once: a bound against a hang, not a timing.
const HANG: Duration = Duration::from_secs(20);

/// Work that tells when it starts, then runs until dropped, and tells that too.
struct Endless {
    dropped: Arc<AtomicBool>,
}

impl Drop for Endless {
    fn drop(&mut self) {
        self.dropped.store(true, Ordering::SeqCst);
    }
}

async fn endless(started: oneshot::Sender<String>, node: String, dropped: Arc<AtomicBool>) {
    let _marker = Endless { dropped };
    started.send(node).unwrap();
    std::future::pending::<()>().await;
}

/// `mutex.run_while_held` of [`endless`] work, spawned (its future is Send, as a worker's is),
/// once the work has started: the task, the held node, and whether the work was dropped.
async fn run_endless(
    mutex: &Arc<InterProcessMutex>,
) -> (tokio::task::JoinHandle<zklock::Result<RunEnd<()>>>, String, Arc<AtomicBool>) {
    let (started, node) = oneshot::channel();
    let dropped = Arc::new(AtomicBool::new(false));
    let work_dropped = Arc::clone(&dropped);
    let run = tokio::spawn({
        let mutex = Arc::clone(mutex);
        async move {
            mutex
                .run_while_held(HANG, async move |guard: &LockGuard| {
                    endless(started, guard.node_path().to_owned(), work_dropped).await
                })
                .await
        }
    });
    (run, node.await.unwrap(), dropped)
}

#[tokio::test]
async fn finished_work_gives_its_output_and_the_lock_is_free_after() {
    let path = unique_path("run-done");
    let client = connect().await;
    let mutex = InterProcessMutex::new(&client, &path).unwrap();
    let ran =
        mutex.run_while_held(HANG, async |guard: &LockGuard| (guard.is_held(), guard.fencing_token())).await.unwrap();
    let RunEnd::Done((held, token)) = ran else { panic!("not done: {ran:?}") };
    assert!(held, "the work ran while held");
    assert!(token > 0);
    let rival_client = connect().await;
    let rival = InterProcessMutex::new(&rival_client, &path).unwrap();
    let after = rival.acquire_timeout(HANG).await.unwrap().expect("free once the work is done");
    assert!(after.fencing_token() > token);
    after.release().await.unwrap();
}

#[tokio::test]
async fn a_deleted_node_drops_the_work_at_once_and_says_why() {
    let path = unique_path("run-lost");
    let client = connect().await;
    let mutex = Arc::new(InterProcessMutex::new(&client, &path).unwrap());
    let (run, node, dropped) = run_endless(&mutex).await;
    connect().await.delete(&node, None).await.unwrap();
    let ran = tokio::time::timeout(HANG, run).await.expect("the work was not stopped").unwrap().unwrap();
    assert_eq!(ran, RunEnd::Lost(LossReason::NodeDeleted));
    assert!(dropped.load(Ordering::SeqCst), "the work was dropped");
    assert!(!mutex.is_acquired_in_this_process(), "no hold stays behind");
}

/// The work is an async closure: it borrows the caller's locals beside the guard (a boxed
/// future tied to the guard's borrow could borrow nothing else).
#[tokio::test]
async fn the_work_borrows_the_callers_locals_and_the_guard() {
    let path = unique_path("run-borrows");
    let client = connect().await;
    let mutex = InterProcessMutex::new(&client, &path).unwrap();
    let rows = vec![String::from("a"), String::from("b")];
    let mut written = Vec::new();
    let ran = mutex
        .run_while_held(HANG, async |guard| {
            for row in &rows {
                written.push(format!("{row}@{}", guard.fencing_token()));
            }
            rows.len()
        })
        .await
        .unwrap();
    assert_eq!(ran, RunEnd::Done(2));
    assert_eq!(written.len(), 2, "{written:?}");
}

#[tokio::test]
async fn waiting_past_the_timeout_runs_nothing() {
    let path = unique_path("run-timeout");
    let holder_client = connect().await;
    let holder = InterProcessMutex::new(&holder_client, &path).unwrap().acquire().await.unwrap();
    let client = connect().await;
    let mutex = InterProcessMutex::new(&client, &path).unwrap();
    let started = Arc::new(AtomicBool::new(false));
    let work_started = Arc::clone(&started);
    let ran = mutex
        .run_while_held(Duration::from_millis(200), async move |_guard: &LockGuard| {
            work_started.store(true, Ordering::SeqCst)
        })
        .await
        .unwrap();
    assert_eq!(ran, RunEnd::TimedOut);
    assert!(!started.load(Ordering::SeqCst), "the work never started");
    holder.release().await.unwrap();
}

#[tokio::test]
async fn a_lease_runs_its_work_and_is_returned() {
    let path = unique_path("run-lease");
    let client = connect().await;
    let semaphore = InterProcessSemaphoreV2::new(&client, &path, 1).unwrap();
    let ran = semaphore.run_while_held(HANG, async |lease: &Lease| lease.is_held()).await.unwrap();
    assert_eq!(ran, RunEnd::Done(true));
    let other = InterProcessSemaphoreV2::new(&connect().await, &path, 1).unwrap();
    let lease = other.acquire_timeout(HANG).await.unwrap().expect("the lease was returned");
    lease.release().await.unwrap();
}

#[tokio::test]
async fn a_closed_latch_ends_the_leaders_work_as_given_up() {
    let path = unique_path("run-leading");
    let client = connect().await;
    let latch = Arc::new(LeaderLatch::new(&client, &path, "leader").unwrap());
    latch.start().await.unwrap();
    let (started, node) = oneshot::channel();
    let dropped = Arc::new(AtomicBool::new(false));
    let work_dropped = Arc::clone(&dropped);
    let run = tokio::spawn({
        let latch = Arc::clone(&latch);
        async move {
            latch
                .run_while_leading(HANG, async move |term: &Leadership| {
                    endless(started, term.node_path().to_owned(), work_dropped).await
                })
                .await
        }
    });
    node.await.unwrap();
    latch.close().await.unwrap();
    let ran = tokio::time::timeout(HANG, run).await.expect("the work was not stopped").unwrap().unwrap();
    assert_eq!(ran, RunEnd::GivenUp);
    assert!(dropped.load(Ordering::SeqCst), "the work was dropped");
}

#[tokio::test]
async fn a_guard_runs_work_while_held_and_keeps_the_hold() {
    let path = unique_path("run-guard");
    let client = connect().await;
    let mutex = InterProcessMutex::new(&client, &path).unwrap();
    let guard = mutex.acquire().await.unwrap();
    assert_eq!(guard.while_held(async { 7 }).await, RunEnd::Done(7));
    assert!(guard.is_held(), "while_held leaves the hold as it is");
    let (started, node) = oneshot::channel();
    let dropped = Arc::new(AtomicBool::new(false));
    let work = endless(started, guard.node_path().to_owned(), Arc::clone(&dropped));
    let deleter = async {
        let node = node.await.unwrap();
        connect().await.delete(&node, None).await.unwrap();
        std::future::pending::<()>().await;
    };
    let ran = tokio::time::timeout(HANG, async {
        tokio::select! {
            ran = guard.while_held(work) => ran,
            () = deleter => unreachable!(),
        }
    })
    .await
    .expect("the work was not stopped");
    assert_eq!(ran, RunEnd::Lost(LossReason::NodeDeleted));
    assert!(dropped.load(Ordering::SeqCst), "the work was dropped");
    assert!(matches!(guard.release().await, Err(zklock::Error::LockLost(LossReason::NodeDeleted))));
}

/// Issue 49, item 6: `run_while_held` whose own future is dropped while the work runs (a caller's
/// `select!`, a cancelled task): the work is dropped with it, the hold is let go, and another
/// session holds next; nothing of ours stays in the queue.
#[tokio::test]
async fn dropping_the_outer_future_drops_the_work_and_frees_the_lock() {
    let path = unique_path("run-outer-dropped");
    let client = connect().await;
    let mutex = Arc::new(InterProcessMutex::new(&client, &path).unwrap());
    let (run, node, dropped) = run_endless(&mutex).await;
    run.abort();
    assert!(run.await.unwrap_err().is_cancelled());
    assert!(dropped.load(Ordering::SeqCst), "the work was dropped with the outer future");
    assert!(!mutex.is_acquired_in_this_process(), "no hold stays behind");
    let rival_client = connect().await;
    let rival = InterProcessMutex::new(&rival_client, &path).unwrap();
    let after = rival.acquire_timeout(HANG).await.unwrap().expect("free once the outer future is dropped");
    assert!(rival_client.check_stat(&node).await.unwrap().is_none(), "our node is gone");
    after.release().await.unwrap();
}
