//! Waits and tries on a `zklock::Session` across an expiry: a wait rides over it, on the next
//! session and within its patience (its deadline unchanged), for every recipe, and leaves no node
//! of the old session; a try never waits for the next session.

use crate::common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::session::{expirable, expire, gated, owner_of};
use common::{children, unique_path};
use zklock::hold::Hold;
use zklock::session::{Connection, ConnectionState};
use zklock::{
    InterProcessMultiLock, InterProcessMutex, InterProcessReadWriteLock, InterProcessSemaphoreMutex,
    InterProcessSemaphoreV2,
};
use zklock_testcontainers::expire_session;

/// A hold of any recipe (dropped: released) and the nodes it holds.
type Held = (Box<dyn std::any::Any + Send>, Vec<String>);

/// One lock object of each recipe, to hold and to wait on (a semaphore of one lease, so that a
/// holder keeps a waiter out).
enum LockObject {
    Mutex(InterProcessMutex),
    Write(InterProcessReadWriteLock),
    Semaphore(InterProcessSemaphoreV2),
    SemaphoreMutex(InterProcessSemaphoreMutex),
    Multi(InterProcessMultiLock),
}

impl LockObject {
    fn all(on: &Connection, paths: &[String; 5]) -> Vec<LockObject> {
        vec![
            LockObject::Mutex(InterProcessMutex::new(on.clone(), &paths[0]).unwrap()),
            LockObject::Write(InterProcessReadWriteLock::new(on.clone(), &paths[1]).unwrap()),
            LockObject::Semaphore(InterProcessSemaphoreV2::new(on.clone(), &paths[2], 1).unwrap()),
            LockObject::SemaphoreMutex(InterProcessSemaphoreMutex::new(on.clone(), &paths[3]).unwrap()),
            LockObject::Multi(
                InterProcessMultiLock::from_paths(on.clone(), &[&paths[4], &format!("{}-b", paths[4])]).unwrap(),
            ),
        ]
    }

    /// Takes it, waiting for ever (`None`) or at most `timeout` (`Ok(None)`: time ran out).
    async fn acquire(&self, timeout: Option<Duration>) -> zklock::Result<Option<Held>> {
        fn held<T: Send + 'static>(hold: Option<T>, nodes: impl Fn(&T) -> Vec<String>) -> Option<Held> {
            hold.map(|hold| {
                let nodes = nodes(&hold);
                (Box::new(hold) as Box<dyn std::any::Any + Send>, nodes)
            })
        }
        async fn mutex(mutex: &InterProcessMutex, timeout: Option<Duration>) -> zklock::Result<Option<Held>> {
            let guard = match timeout {
                None => Some(mutex.acquire().await?),
                Some(timeout) => mutex.acquire_timeout(timeout).await?,
            };
            Ok(held(guard, |guard| vec![guard.node_path().to_owned()]))
        }
        async fn semaphore(
            semaphore: &InterProcessSemaphoreV2,
            timeout: Option<Duration>,
        ) -> zklock::Result<Option<Held>> {
            let lease = match timeout {
                None => Some(semaphore.acquire().await?),
                Some(timeout) => semaphore.acquire_timeout(timeout).await?,
            };
            Ok(held(lease, |lease| vec![lease.node_path().to_owned()]))
        }
        match self {
            LockObject::Mutex(lock) => mutex(lock, timeout).await,
            LockObject::Write(lock) => mutex(lock.write_lock(), timeout).await,
            LockObject::Semaphore(lock) => semaphore(lock, timeout).await,
            LockObject::SemaphoreMutex(lock) => {
                let lease = match timeout {
                    None => Some(lock.acquire().await?),
                    Some(timeout) => lock.acquire_timeout(timeout).await?,
                };
                Ok(held(lease, |lease| vec![lease.node_path().to_owned()]))
            }
            LockObject::Multi(lock) => {
                let guard = match timeout {
                    None => Some(lock.acquire().await?),
                    Some(timeout) => lock.acquire_timeout(timeout).await?,
                };
                Ok(held(guard, |guard| guard.guards().iter().map(|guard| guard.node_path().to_owned()).collect()))
            }
        }
    }

    /// `try_acquire()`, or `acquire_timeout(0)` when `zero` (the same promise: no wait): whether
    /// it held (the hold is released at once).
    async fn try_acquire(&self, zero: bool) -> zklock::Result<bool> {
        if zero {
            return Ok(self.acquire(Some(Duration::ZERO)).await?.is_some());
        }
        Ok(match self {
            LockObject::Mutex(lock) => lock.try_acquire().await?.is_some(),
            LockObject::Write(lock) => lock.write_lock().try_acquire().await?.is_some(),
            LockObject::Semaphore(lock) => lock.try_acquire().await?.is_some(),
            LockObject::SemaphoreMutex(lock) => lock.try_acquire().await?.is_some(),
            LockObject::Multi(lock) => lock.try_acquire().await?.is_some(),
        })
    }
}

/// Five lock paths, one per recipe.
fn paths(name: &str) -> [String; 5] {
    std::array::from_fn(|index| unique_path(&format!("{name}-{index}")))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_lock_waiting_on_a_session_rides_over_its_expiry_and_holds_on_the_next_one() {
    let (proxy, session, mut states, observer) = expirable().await;
    let paths = paths("session-rides");
    let mut holders = LockObject::all(&(&observer).into(), &paths);
    // The multi-lock's waiter holds its first lock and waits for the second when the session
    // expires: the first is lost with it, and must be taken again on the next session.
    holders[4] = LockObject::Mutex(InterProcessMutex::new(&observer, &format!("{}-b", paths[4])).unwrap());
    let waiters = Arc::new(LockObject::all(&(&session).into(), &paths));
    for (index, holder) in holders.iter().enumerate() {
        let held = holder.acquire(None).await.unwrap().unwrap();
        let waiting = tokio::spawn({
            let waiters = Arc::clone(&waiters);
            async move { waiters[index].acquire(None).await }
        });
        // Let the waiter queue (its node, or its turn at the semaphore's gate, is on the session).
        tokio::time::sleep(Duration::from_millis(300)).await;
        let old = session.session_id();
        let new = expire(&session, &proxy, &mut states).await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(!waiting.is_finished(), "recipe {index}: the wait ended with the session: {:?}", waiting.await);
        drop(held);
        let (hold, nodes) = tokio::time::timeout(Duration::from_secs(20), waiting)
            .await
            .expect("never held on the next session")
            .unwrap()
            .unwrap()
            .unwrap();
        assert!(!nodes.is_empty());
        for node in &nodes {
            let owner = owner_of(&observer, node).await;
            assert_eq!(owner, new, "recipe {index}: {node} is not on the next session (the old one was {old})");
        }
        drop(hold);
    }
    // No node of any session is left: the old ones went with their sessions, the rest released.
    for path in paths.iter().chain([&format!("{}-b", paths[4])]) {
        common::eventually(&format!("{path} empty"), || async { children(&observer, path).await.is_empty() }).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timed_wait_rides_over_an_expiry_with_its_deadline_unchanged() {
    let (proxy, session, mut states, observer) = expirable().await;
    let path = unique_path("session-ride-deadline");
    let holder = InterProcessMutex::new(&observer, &path).unwrap().acquire().await.unwrap();
    let mutex = InterProcessMutex::new(&session, &path).unwrap();
    let started = Instant::now();
    let waiting =
        tokio::spawn(async move { mutex.acquire_timeout(Duration::from_secs(6)).await.map(|held| held.is_some()) });
    tokio::time::sleep(Duration::from_secs(3)).await;
    expire(&session, &proxy, &mut states).await;
    let outcome = tokio::time::timeout(Duration::from_secs(20), waiting).await.expect("the wait never ended").unwrap();
    assert!(matches!(outcome, Ok(false)), "out of time, not the expiry's error: {outcome:?}");
    // A deadline started again on the next session would end 9 s or more after the start.
    assert!(started.elapsed() < Duration::from_secs(8), "the deadline moved: {:?}", started.elapsed());
    assert_eq!(children(&observer, &path).await, [holder.node_path().rsplit('/').next().unwrap()]);
    holder.release().await.unwrap();
}

/// Waits (bounded) until the session says it lost its session.
async fn lost(states: &mut tokio::sync::watch::Receiver<ConnectionState>) {
    let seen = tokio::time::timeout(Duration::from_secs(20), states.wait_for(|state| *state == ConnectionState::Lost));
    seen.await.expect("never lost").unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_try_on_a_session_that_cannot_reconnect_yet_answers_at_once_and_a_wait_holds_once_it_does() {
    let (proxy, session, mut states, open) = gated().await;
    let observer = common::connect().await;
    let paths = paths("session-tries");
    let locks = Arc::new(LockObject::all(&(&session).into(), &paths));
    expire_session(&session.client(), &proxy).await.unwrap();
    lost(&mut states).await;
    // No wait means no wait: a plain expired client answers at once, and so does a session.
    for (index, lock) in locks.iter().enumerate() {
        for zero in [false, true] {
            let tried = tokio::time::timeout(Duration::from_secs(1), lock.try_acquire(zero)).await;
            let tried =
                tried.unwrap_or_else(|_| panic!("recipe {index} (zero timeout: {zero}) waited for the next session"));
            assert!(matches!(tried, Ok(false)), "recipe {index}: {tried:?}");
        }
    }
    // A wait that starts now waits for the next session, and holds on it.
    let waiting = tokio::spawn({
        let locks = Arc::clone(&locks);
        async move { locks[0].acquire(None).await }
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!waiting.is_finished(), "the wait did not wait for the next session: {:?}", waiting.await);
    open.send_replace(true);
    let (hold, nodes) =
        tokio::time::timeout(Duration::from_secs(20), waiting).await.expect("never held").unwrap().unwrap().unwrap();
    assert_eq!(owner_of(&observer, &nodes[0]).await, session.session_id());
    drop(hold);
    for (index, lock) in locks.iter().enumerate() {
        let tried = tokio::time::timeout(Duration::from_secs(20), lock.try_acquire(false)).await.unwrap();
        assert!(matches!(tried, Ok(true)), "recipe {index} on the next session: {tried:?}");
    }
}
