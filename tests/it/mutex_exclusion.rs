//! Mutual exclusion and fairness between processes (clients) and tasks.

use crate::common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{children, connect, unique_path, wait_for_children};
use zklock::InterProcessMutex;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn at_most_one_holder_under_contention_and_everyone_gets_in() {
    const CLIENTS: usize = 3;
    const TASKS_PER_CLIENT: usize = 4;
    const ROUNDS: usize = 5;
    let path = unique_path("exclusion");
    let inside = Arc::new(AtomicUsize::new(0));
    let most_inside = Arc::new(AtomicUsize::new(0));
    let completed = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..CLIENTS {
        let client = connect().await;
        // One participant per client, shared by its tasks: tasks of one process exclude each
        // other through the hold table and the queue alike.
        let mutex = InterProcessMutex::new(&client, &path).unwrap();
        for _ in 0..TASKS_PER_CLIENT {
            let (mutex, inside, most_inside, completed) =
                (mutex.clone(), inside.clone(), most_inside.clone(), completed.clone());
            tasks.push(tokio::spawn(async move {
                for _ in 0..ROUNDS {
                    let guard = mutex.acquire().await.unwrap();
                    let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                    most_inside.fetch_max(now, Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(1)).await;
                    inside.fetch_sub(1, Ordering::SeqCst);
                    guard.release().await.unwrap();
                    completed.fetch_add(1, Ordering::SeqCst);
                }
            }));
        }
    }
    for task in tasks {
        task.await.unwrap();
    }
    assert_eq!(most_inside.load(Ordering::SeqCst), 1, "two holders at once");
    assert_eq!(completed.load(Ordering::SeqCst), CLIENTS * TASKS_PER_CLIENT * ROUNDS);
    let observer = connect().await;
    assert!(children(&observer, &path).await.is_empty(), "nodes left behind");
}

#[tokio::test]
async fn waiters_get_the_lock_in_arrival_order() {
    const WAITERS: usize = 5;
    let path = unique_path("fifo");
    let holder_client = connect().await;
    let holder = InterProcessMutex::new(&holder_client, &path).unwrap().acquire().await.unwrap();
    let order = Arc::new(Mutex::new(Vec::new()));
    let mut tasks = Vec::new();
    for id in 0..WAITERS {
        let client = connect().await;
        let mutex = InterProcessMutex::new(&client, &path).unwrap();
        let order = order.clone();
        tasks.push(tokio::spawn(async move {
            let guard = mutex.acquire().await.unwrap();
            order.lock().unwrap().push(id);
            guard.release().await.unwrap();
            drop(client);
        }));
        // The next waiter arrives only once this one is in the queue.
        wait_for_children(&holder_client, &path, id + 2).await;
    }
    holder.release().await.unwrap();
    for task in tasks {
        task.await.unwrap();
    }
    assert_eq!(*order.lock().unwrap(), (0..WAITERS).collect::<Vec<_>>());
}

#[tokio::test]
async fn two_mutexes_on_one_client_contend() {
    let path = unique_path("same-client");
    let client = connect().await;
    let first = InterProcessMutex::new(&client, &path).unwrap();
    let second = InterProcessMutex::new(&client, &path).unwrap();
    let guard = first.acquire().await.unwrap();
    // Same task, same session, but another participant: not reentrant.
    assert!(second.try_acquire().await.unwrap().is_none());
    assert!(second.acquire_timeout(Duration::from_millis(200)).await.unwrap().is_none());
    guard.release().await.unwrap();
    let guard = second.try_acquire().await.unwrap().expect("free after release");
    guard.release().await.unwrap();
}

#[tokio::test]
async fn another_task_of_the_same_process_waits_its_turn() {
    let path = unique_path("other-task");
    let client = connect().await;
    let mutex = InterProcessMutex::new(&client, &path).unwrap();
    let guard = mutex.acquire().await.unwrap();
    let other = mutex.clone();
    let waiter = tokio::spawn(async move {
        assert!(!other.is_acquired_by_current_task());
        assert!(other.try_acquire().await.unwrap().is_none(), "another task must not re-enter");
        let guard = other.acquire().await.unwrap();
        assert!(other.is_acquired_by_current_task());
        guard.release().await.unwrap();
    });
    wait_for_children(&client, &path, 2).await;
    assert!(!waiter.is_finished());
    guard.release().await.unwrap();
    waiter.await.unwrap();
}
