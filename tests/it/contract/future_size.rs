//! The futures the recipes hand out stay small. An acquire's state machine is tens of kilobytes;
//! every future that awaits one would carry it, and a debug build copies a future onto the stack
//! at each poll, so a caller a few layers up overflowed its stack (the `zklock` command's main
//! thread overflowed 8 MiB taking a semaphore lease). The recipes box their attempts; this holds
//! them to it.

use std::mem::size_of_val;
use std::time::Duration;

use zklock::deadlock::find_deadlocks;
use zklock::queue::watch_queue;
use zklock::{
    revoke, InterProcessMultiLock, InterProcessMutex, InterProcessReadWriteLock, InterProcessSemaphoreMutex,
    InterProcessSemaphoreV2, LeaderLatch, LeaderSelector,
};

use crate::common::{connect, unique_path};

/// The largest future a recipe may hand out: a kilobyte, a few times the largest now (revoke's
/// and the election's start, about 550 bytes) and a twentieth of an unboxed semaphore acquire.
const LARGEST: usize = 1024;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_recipes_futures_stay_under_a_kilobyte() {
    let client = connect().await;
    let path = unique_path("future-size");
    let mutex = InterProcessMutex::new(client.clone(), &path).unwrap();
    let rw = InterProcessReadWriteLock::new(client.clone(), &format!("{path}-rw")).unwrap();
    let semaphore = InterProcessSemaphoreV2::new(client.clone(), &format!("{path}-semaphore"), 2).unwrap();
    let semaphore_mutex = InterProcessSemaphoreMutex::new(client.clone(), &format!("{path}-sm")).unwrap();
    let multi =
        InterProcessMultiLock::builder(client.clone(), &[&format!("{path}-a"), &format!("{path}-b")]).build().unwrap();
    let latch = LeaderLatch::new(client.clone(), &format!("{path}-latch"), "a").unwrap();
    let selector = LeaderSelector::new(client.clone(), &format!("{path}-selector"), "a").unwrap();
    let (position, _seen) = tokio::sync::watch::channel(None);
    let second = Duration::from_secs(1);
    // Futures are measured, never polled: nothing here touches the server.
    let sizes = [
        ("mutex.acquire", size_of_val(&mutex.acquire())),
        ("mutex.acquire_timeout", size_of_val(&mutex.acquire_timeout(second))),
        ("mutex.try_acquire", size_of_val(&mutex.try_acquire())),
        ("rw.write_lock.acquire", size_of_val(&rw.write_lock().acquire())),
        ("rw.read_lock.acquire_timeout", size_of_val(&rw.read_lock().acquire_timeout(second))),
        ("semaphore.acquire", size_of_val(&semaphore.acquire())),
        ("semaphore.acquire_many_timeout", size_of_val(&semaphore.acquire_many_timeout(2, second))),
        ("semaphore.try_acquire", size_of_val(&semaphore.try_acquire())),
        ("semaphore_mutex.acquire", size_of_val(&semaphore_mutex.acquire())),
        ("multi.acquire", size_of_val(&multi.acquire())),
        ("multi.acquire_timeout", size_of_val(&multi.acquire_timeout(second))),
        ("latch.start", size_of_val(&latch.start())),
        ("latch.await_leadership", size_of_val(&latch.await_leadership())),
        ("latch.await_leadership_timeout", size_of_val(&latch.await_leadership_timeout(second))),
        ("selector.start", size_of_val(&selector.start(|_leadership| async {}))),
        ("watch_queue(semaphore.acquire)", size_of_val(&watch_queue(position, semaphore.acquire()))),
        ("revoke", size_of_val(&revoke(client.clone(), &format!("{path}/node")))),
        ("find_deadlocks", size_of_val(&find_deadlocks(&client, &path))),
    ];
    let large: Vec<_> = sizes.iter().filter(|(_, size)| *size > LARGEST).collect();
    assert!(large.is_empty(), "futures over {LARGEST} bytes: {large:?}");
}
