//! `zklock::blocking` from plain threads, as a synchronous program uses it: reentrancy per
//! thread, a timed-out acquire that leaves no node, a loss told by a blocking wait, holds
//! released on drop, every recipe, and a clear refusal on a runtime's threads. Its interop with
//! Curator is in `tests/it/interop_curator.rs`.

use crate::common;

use std::time::Duration;

use common::{server, unique_path};
use zklock::blocking::{self, InterProcessMutex};
use zklock::election::TermEnd;
use zklock::hold::Hold;
use zklock::{Client, Error, LossReason};

/// A bound against a hang, not a timing.
const HANG: Duration = Duration::from_secs(20);

fn connect() -> Client {
    blocking::connect(&server().connect_string()).unwrap()
}

fn children(client: &Client, path: &str) -> Vec<String> {
    match blocking::run(client.list_children(path)).unwrap() {
        Ok(mut names) => {
            names.sort();
            names
        }
        Err(zookeeper_client::Error::NoNode) => Vec::new(),
        Err(err) => panic!("list {path}: {err}"),
    }
}

/// Polls `condition` every 20 ms until it holds, for at most [`HANG`].
fn eventually(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + HANG;
    while !condition() {
        assert!(std::time::Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_thread_reenters_and_another_thread_waits_its_turn() {
    let path = unique_path("blocking-reentry");
    let client = connect();
    let mutex = InterProcessMutex::new(&client, &path).unwrap();
    let outer = mutex.acquire().unwrap();
    let inner = mutex.acquire_timeout(Duration::ZERO).unwrap().expect("the holding thread re-enters at once");
    assert_eq!(children(&client, &path).len(), 1, "one node for both holds");
    assert!(mutex.is_acquired_by_current_thread());
    let other_mutex = mutex.clone();
    let other = std::thread::spawn(move || {
        assert!(!other_mutex.is_acquired_by_current_thread());
        assert!(other_mutex.try_acquire().unwrap().is_none(), "another thread is another owner");
        let guard = other_mutex.acquire_timeout(HANG).unwrap().expect("its turn once the holder let go");
        guard.release().unwrap();
    });
    std::thread::sleep(Duration::from_millis(100));
    inner.release().unwrap();
    assert!(outer.is_held(), "the outer hold stands after the inner release");
    outer.release().unwrap();
    other.join().unwrap();
    assert!(children(&client, &path).is_empty());
}

#[test]
fn a_timed_out_acquire_leaves_only_the_holders_node() {
    let path = unique_path("blocking-timeout");
    let holder = InterProcessMutex::new(connect(), &path).unwrap().acquire().unwrap();
    let client = connect();
    let mutex = InterProcessMutex::new(&client, &path).unwrap();
    assert!(mutex.acquire_timeout(Duration::from_millis(200)).unwrap().is_none());
    let holder_node = holder.node_path().rsplit('/').next().unwrap().to_owned();
    assert_eq!(children(&client, &path), [holder_node]);
    holder.release().unwrap();
}

#[test]
fn a_deleted_node_is_told_by_the_blocking_wait() {
    let path = unique_path("blocking-lost");
    let client = connect();
    let guard = InterProcessMutex::new(&client, &path).unwrap().acquire().unwrap();
    assert_eq!(guard.lost_timeout(Duration::from_millis(100)).unwrap(), None, "held: nothing to tell");
    blocking::run(connect().delete(guard.node_path(), None)).unwrap().unwrap();
    assert_eq!(guard.lost_timeout(HANG).unwrap(), Some(LossReason::NodeDeleted));
    assert!(!guard.is_held());
    assert!(matches!(guard.release(), Err(Error::LockLost(LossReason::NodeDeleted))));
}

#[test]
fn a_hold_dropped_is_released_for_the_next_thread() {
    let path = unique_path("blocking-drop");
    let mutex = InterProcessMutex::new(connect(), &path).unwrap();
    drop(mutex.acquire().unwrap());
    let rival = InterProcessMutex::new(connect(), &path).unwrap();
    let guard =
        std::thread::spawn(move || rival.acquire_timeout(HANG).unwrap().map(|guard| guard.release())).join().unwrap();
    assert!(matches!(guard, Some(Ok(()))), "free after the drop: {guard:?}");
}

#[test]
fn every_recipe_acquires_and_releases_blocking() {
    let client = connect();
    let path = unique_path("blocking-recipes");
    let rw = blocking::InterProcessReadWriteLock::new(&client, &format!("{path}/rw")).unwrap();
    let write = rw.write_lock().acquire().unwrap();
    let read = rw.read_lock().acquire().unwrap(); // a downgrade: the writer may read
    read.release().unwrap();
    write.release().unwrap();

    let semaphore = blocking::InterProcessSemaphoreV2::new(&client, &format!("{path}/semaphore"), 2).unwrap();
    let (first, second) = (semaphore.acquire().unwrap(), semaphore.acquire().unwrap());
    assert!(semaphore.try_acquire().unwrap().is_none(), "at most 2 leases");
    first.release().unwrap();
    second.release().unwrap();

    let semaphore_mutex = blocking::InterProcessSemaphoreMutex::new(&client, &format!("{path}/sm")).unwrap();
    let lease = semaphore_mutex.acquire().unwrap();
    // Any thread may return a semaphore mutex's lease.
    std::thread::spawn(move || lease.release().unwrap()).join().unwrap();

    let (a, b) = (format!("{path}/multi-a"), format!("{path}/multi-b"));
    let multi = blocking::InterProcessMultiLock::from_paths(&client, &[&a, &b]).unwrap();
    let both = multi.acquire().unwrap();
    assert_eq!(both.fencing_tokens().len(), 2);
    assert!(both.is_held());
    both.release().unwrap();

    let latch = blocking::LeaderLatch::new(&client, &format!("{path}/election"), "me").unwrap();
    latch.start().unwrap();
    let term = latch.await_leadership_timeout(HANG).unwrap().expect("the only participant leads");
    assert!(term.is_held() && latch.has_leadership());
    assert_eq!(term.ended_timeout(Duration::from_millis(50)).unwrap(), None);
    latch.close().unwrap();
    assert_eq!(term.ended_timeout(HANG).unwrap(), Some(TermEnd::Closed));
}

#[test]
fn on_a_runtimes_threads_it_refuses_and_sends_nothing() {
    let path = unique_path("blocking-in-runtime");
    let client = connect();
    let mutex = InterProcessMutex::new(&client, &path).unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let in_task = {
        let mutex = mutex.clone();
        runtime.block_on(async move { tokio::spawn(async move { mutex.acquire().map(drop) }).await.unwrap() })
    };
    assert!(matches!(in_task, Err(Error::CannotBlock(_))), "{in_task:?}");
    let in_block_on = runtime.block_on(async { mutex.try_acquire().map(|held| held.is_some()) });
    assert!(matches!(in_block_on, Err(Error::CannotBlock(_))), "{in_block_on:?}");
    let in_spawn_blocking = {
        let mutex = mutex.clone();
        runtime.block_on(async { tokio::task::spawn_blocking(move || mutex.acquire().map(drop)).await }).unwrap()
    };
    assert!(matches!(in_spawn_blocking, Err(Error::CannotBlock(_))), "{in_spawn_blocking:?}");
    drop(runtime);
    assert!(children(&client, &path).is_empty(), "nothing was sent");
    // The same mutex blocks fine on a thread of its own.
    mutex.acquire().unwrap().release().unwrap();
    eventually("the node is gone", || children(&client, &path).is_empty());
}

/// Set in the child process of the exit tests: what it does, the server and the lock path.
const EXITING_CHILD: &str = "ZKLOCK_TEST_EXITING_CHILD";

/// A synchronous tool (or a cron job) drops its guard and ends at once, with
/// `std::process::exit` or by returning from `main`: the lock is free when the process is gone,
/// not after its session's timeout (30 s here). Before, the drop only handed the delete to
/// zklock's thread, and the process ended before it was sent (8 runs in 10). The async API's
/// documented end, `zklock::session::finish_releases` before the runtime goes, is checked beside
/// it.
#[test]
fn a_program_that_ends_right_after_dropping_its_guard_leaves_the_lock_free() {
    if let Ok(spec) = std::env::var(EXITING_CHILD) {
        exiting_child(&spec);
    }
    let client = connect();
    for (how, runs) in [("blocking", 3), ("async", 2)] {
        for run in 0..runs {
            let path = unique_path(&format!("blocking-exit-{how}-{run}"));
            let child = std::process::Command::new(std::env::current_exe().unwrap())
                .args([
                    "--exact",
                    &crate::common::harness_name(
                        module_path!(),
                        "a_program_that_ends_right_after_dropping_its_guard_leaves_the_lock_free",
                    ),
                    "--nocapture",
                ])
                .env(EXITING_CHILD, format!("{how} {} {path}", server().connect_string()))
                .output()
                .unwrap();
            let output =
                format!("{}{}", String::from_utf8_lossy(&child.stdout), String::from_utf8_lossy(&child.stderr));
            assert!(child.status.success() && output.contains("held "), "{how}: {output}");
            assert_eq!(
                children(&client, &path),
                Vec::<String>::new(),
                "{how} run {run}: the node outlived its process"
            );
        }
    }
}

/// The child: acquires with a 30 s session, drops the guard and exits at once.
fn exiting_child(spec: &str) -> ! {
    let [how, connect_string, path] = spec.split(' ').collect::<Vec<_>>()[..] else { panic!("{spec}") };
    let session = Duration::from_secs(30);
    match how {
        "blocking" => {
            let client = blocking::run(Client::connector().with_session_timeout(session).connect(connect_string))
                .unwrap()
                .unwrap();
            let mutex = InterProcessMutex::new(&client, path).unwrap();
            let guard = mutex.acquire().unwrap();
            println!("held {}", guard.node_path());
            drop(guard);
        }
        _ => {
            let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
            runtime.block_on(async {
                let client = Client::connector().with_session_timeout(session).connect(connect_string).await.unwrap();
                let mutex = zklock::InterProcessMutex::new(&client, path).unwrap();
                let guard = mutex.acquire().await.unwrap();
                println!("held {}", guard.node_path());
                drop(guard);
                assert!(zklock::session::finish_releases(HANG).await, "the release ended");
            });
        }
    }
    std::process::exit(0)
}
