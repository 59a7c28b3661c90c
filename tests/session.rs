//! Recipes that outlive their session: every recipe built on a `zklock::Session` acquires again
//! after the server expired its session (mid-hold and mid-wait), with no code of the caller's,
//! one new session per expiry, its states told in order, and no node of either session left.

mod common;

use std::time::Duration;

use common::{children, connect, server, unique_path};
use tokio::sync::watch;
use zklock::zookeeper_client::Client;
use zklock::{
    ConnectionState, Error, InterProcessMultiLock, InterProcessMutex, InterProcessReadWriteLock,
    InterProcessSemaphoreMutex, InterProcessSemaphoreV2, LeaderLatch, LossReason, Session, TermEnd,
};
use zklock_testcontainers::{expire_session, Proxy};

/// A session whose every client connects through `proxy` (so that the test can expire it).
async fn session_through(proxy: &Proxy) -> Session {
    let connect_string = proxy.connect_string();
    Session::connect(move || {
        let connect_string = connect_string.clone();
        async move { Client::connector().with_session_timeout(Duration::from_secs(20)).connect(&connect_string).await }
    })
    .await
    .unwrap()
}

/// Expires the session's current client, and waits until the session is on a new one; returns
/// the new session's id.
async fn expire(session: &Session, proxy: &Proxy, states: &mut watch::Receiver<ConnectionState>) -> i64 {
    let old = session.session_id();
    expire_session(&session.client(), proxy).await.unwrap();
    let reconnected = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            if let ConnectionState::Reconnected { session_id } = *states.borrow_and_update() {
                if session_id != old {
                    return session_id;
                }
            }
            states.changed().await.unwrap();
        }
    });
    let new = reconnected.await.expect("no new session within 20 s");
    assert_eq!(session.session_id(), new);
    new
}

/// A session through a new proxy to the shared server, with its states, and an observer client.
async fn expirable() -> (Proxy, Session, watch::Receiver<ConnectionState>, Client) {
    let proxy = Proxy::start(server().address()).unwrap();
    let session = session_through(&proxy).await;
    let states = session.state();
    (proxy, session, states, connect().await)
}

/// The session that owns `node` (its ephemeral owner).
async fn owner_of(observer: &Client, node: &str) -> i64 {
    observer.check_stat(node).await.unwrap().expect("the node exists").ephemeral_owner
}

/// A loss that an expiry explains: the expiry itself, or the disconnection that came first
/// (the policy gives a hold up after a third of the session timeout without a server).
fn lost_to_the_expiry(reason: LossReason) -> bool {
    matches!(reason, LossReason::SessionExpired | LossReason::Disconnected { .. })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_lock_on_a_session_acquires_again_after_an_expiry_mid_hold() {
    let (proxy, session, mut states, observer) = expirable().await;
    let path = |name: &str| unique_path(&format!("session-{name}"));

    let mutex = InterProcessMutex::new(&session, &path("mutex")).unwrap();
    let read_write = InterProcessReadWriteLock::new(&session, &path("rw")).unwrap();
    let semaphore = InterProcessSemaphoreV2::new(&session, &path("semaphore"), 2).unwrap();
    let semaphore_mutex = InterProcessSemaphoreMutex::new(&session, &path("semaphore-mutex")).unwrap();
    let (a, b) = (path("multi-a"), path("multi-b"));
    let multi = InterProcessMultiLock::from_paths(&session, &[&a, &b]).unwrap();

    let mut sessions = vec![session.session_id()];
    for recipe in ["mutex", "write", "read", "semaphore", "semaphore mutex", "multi-lock"] {
        // One hold on the current session, lost to its expiry; then the same object again.
        let (node, lost) = match recipe {
            "mutex" => {
                let guard = mutex.acquire().await.unwrap();
                (guard.node_path().to_owned(), Box::new(guard) as Box<dyn zklock::Hold>)
            }
            "write" | "read" => {
                let side = if recipe == "write" { read_write.write_lock() } else { read_write.read_lock() };
                let guard = side.acquire().await.unwrap();
                (guard.node_path().to_owned(), Box::new(guard) as Box<dyn zklock::Hold>)
            }
            "semaphore" => {
                let lease = semaphore.acquire().await.unwrap();
                (lease.node_path().to_owned(), Box::new(lease) as Box<dyn zklock::Hold>)
            }
            "semaphore mutex" => {
                let lease = semaphore_mutex.acquire().await.unwrap();
                (lease.node_path().to_owned(), Box::new(lease) as Box<dyn zklock::Hold>)
            }
            _ => {
                let guard = multi.acquire().await.unwrap();
                let node = guard.guards()[0].node_path().to_owned();
                let reason = tokio::time::timeout(Duration::from_secs(20), async {
                    expire(&session, &proxy, &mut states).await;
                    guard.lost().await
                });
                let reason = reason.await.expect("the multi-lock was never told");
                assert!(lost_to_the_expiry(reason), "{recipe}: {reason:?}");
                sessions.push(session.session_id());
                assert!(
                    observer.check_stat(&node).await.unwrap().is_none(),
                    "{recipe}: the old node went with its session"
                );
                drop(guard);
                let again = multi.acquire().await.unwrap();
                for guard in again.guards() {
                    assert_eq!(owner_of(&observer, guard.node_path()).await, session.session_id(), "{recipe}");
                }
                again.release().await.unwrap();
                continue;
            }
        };
        assert_eq!(owner_of(&observer, &node).await, *sessions.last().unwrap(), "{recipe}");
        expire(&session, &proxy, &mut states).await;
        let reason = tokio::time::timeout(Duration::from_secs(20), lost.lost()).await.expect("never told of the loss");
        assert!(lost_to_the_expiry(reason), "{recipe}: {reason:?}");
        sessions.push(session.session_id());
        assert!(observer.check_stat(&node).await.unwrap().is_none(), "{recipe}: the old node went with its session");
        drop(lost);

        // The same object, with no code of ours: a hold on the new session.
        let node = match recipe {
            "mutex" => {
                let guard = mutex.acquire().await.unwrap();
                let node = guard.node_path().to_owned();
                assert_eq!(owner_of(&observer, &node).await, session.session_id(), "{recipe}");
                guard.release().await.unwrap();
                node
            }
            "write" | "read" => {
                let side = if recipe == "write" { read_write.write_lock() } else { read_write.read_lock() };
                let guard = side.acquire().await.unwrap();
                let node = guard.node_path().to_owned();
                assert_eq!(owner_of(&observer, &node).await, session.session_id(), "{recipe}");
                guard.release().await.unwrap();
                node
            }
            "semaphore" => {
                let lease = semaphore.acquire().await.unwrap();
                let node = lease.node_path().to_owned();
                assert_eq!(owner_of(&observer, &node).await, session.session_id(), "{recipe}");
                lease.release().await.unwrap();
                node
            }
            _ => {
                let lease = semaphore_mutex.acquire().await.unwrap();
                let node = lease.node_path().to_owned();
                assert_eq!(owner_of(&observer, &node).await, session.session_id(), "{recipe}");
                lease.release().await.unwrap();
                node
            }
        };
        assert!(observer.check_stat(&node).await.unwrap().is_none(), "{recipe}: released");
    }
    // One new session per expiry, each different.
    let mut distinct = sessions.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(distinct.len(), sessions.len(), "one new session per expiry: {sessions:?}");
    assert_eq!(sessions.len(), 7);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_on_an_expired_session_fails_and_the_next_acquire_queues_on_the_new_one() {
    let (proxy, session, mut states, observer) = expirable().await;
    let path = unique_path("session-mid-wait");
    let holder = InterProcessMutex::new(&observer, &path).unwrap().acquire().await.unwrap();
    let mutex = InterProcessMutex::new(&session, &path).unwrap();
    let waiting = tokio::spawn({
        let mutex = mutex.clone();
        async move { mutex.acquire().await }
    });
    while children(&observer, &path).await.len() < 2 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let old = session.session_id();
    expire(&session, &proxy, &mut states).await;
    let outcome = tokio::time::timeout(Duration::from_secs(20), waiting).await.expect("the wait never ended").unwrap();
    assert!(matches!(outcome, Err(Error::SessionExpired)), "{outcome:?}");
    // Nothing of the old session is left in the queue: only the holder.
    assert_eq!(children(&observer, &path).await, [holder.node_path().rsplit('/').next().unwrap()]);
    assert_ne!(session.session_id(), old);

    let next = tokio::spawn({
        let mutex = mutex.clone();
        async move { mutex.acquire().await }
    });
    while children(&observer, &path).await.len() < 2 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    holder.release().await.unwrap();
    let guard = tokio::time::timeout(Duration::from_secs(20), next).await.expect("never held").unwrap().unwrap();
    assert_eq!(owner_of(&observer, guard.node_path()).await, session.session_id());
    guard.release().await.unwrap();
    assert!(children(&observer, &path).await.is_empty(), "no node of either session left");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_tells_its_states_in_order() {
    let proxy = Proxy::start(server().address()).unwrap();
    let session = session_through(&proxy).await;
    let first = session.session_id();
    let mut states = session.state();
    assert_eq!(*states.borrow_and_update(), ConnectionState::Connected { session_id: first });
    let seen = tokio::spawn({
        let mut states = states.clone();
        async move {
            let mut seen = Vec::new();
            while states.changed().await.is_ok() {
                let state = *states.borrow_and_update();
                seen.push(state);
                if matches!(state, ConnectionState::Reconnected { session_id } if session_id != first) {
                    return seen;
                }
            }
            seen
        }
    });
    let second = expire(&session, &proxy, &mut states).await;
    let seen = seen.await.unwrap();
    // A disconnection may come first (the harness cuts the client off to expire it).
    let without_suspensions: Vec<_> = seen.into_iter().filter(|state| *state != ConnectionState::Suspended).collect();
    assert_eq!(without_suspensions, [ConnectionState::Lost, ConnectionState::Reconnected { session_id: second }]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_latch_on_a_session_leads_again_after_an_expiry() {
    let (proxy, session, mut states, observer) = expirable().await;
    let path = unique_path("session-latch");
    let latch = LeaderLatch::new(&session, &path, "one").unwrap();
    latch.start().await.unwrap();
    let first = latch.await_leadership().await.unwrap();
    expire(&session, &proxy, &mut states).await;
    let end = tokio::time::timeout(Duration::from_secs(20), first.lost()).await.expect("the term never ended");
    assert!(matches!(end, TermEnd::Lost(reason) if lost_to_the_expiry(reason)), "{end:?}");
    let second = tokio::time::timeout(Duration::from_secs(20), latch.await_leadership())
        .await
        .expect("never led again")
        .unwrap();
    assert!(second.epoch() > first.epoch());
    assert_eq!(owner_of(&observer, second.node_path()).await, session.session_id());
    latch.close().await.unwrap();
    assert!(children(&observer, &path).await.is_empty(), "no node of either session left");
}

#[tokio::test]
async fn a_first_connect_that_fails_is_the_callers_error() {
    // A port nothing listens on: the connector gives up at once.
    let refused = "127.0.0.1:1";
    let outcome = Session::connect(move || {
        Client::connector()
            .with_connection_timeout(Duration::from_millis(500))
            .with_session_timeout(Duration::from_secs(2))
            .connect(refused)
    })
    .await;
    assert!(matches!(outcome, Err(Error::ZooKeeper { operation: "connect", .. })), "{outcome:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_from_a_client_of_ones_own_moves_on_after_its_expiry() {
    let proxy = Proxy::start(server().address()).unwrap();
    let client = common::connect_through(&proxy, Duration::from_secs(20)).await;
    let connect_string = proxy.connect_string();
    let session = Session::from_client(client.clone(), move || {
        let connect_string = connect_string.clone();
        async move { Client::connector().with_session_timeout(Duration::from_secs(20)).connect(&connect_string).await }
    })
    .unwrap();
    assert_eq!(session.session_id(), client.session_id().0);
    let mut states = session.state();
    let mutex = InterProcessMutex::new(&session, &unique_path("session-from-client")).unwrap();
    mutex.acquire().await.unwrap().release().await.unwrap();
    let new = expire(&session, &proxy, &mut states).await;
    assert_ne!(new, client.session_id().0);
    let guard = mutex.acquire().await.unwrap();
    assert_eq!(owner_of(&connect().await, guard.node_path()).await, new);
    guard.release().await.unwrap();
}

#[test]
fn a_session_from_a_client_needs_a_runtime() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let client = runtime.block_on(connect());
    let outcome = Session::from_client(client, || async { Err(zklock::zookeeper_client::Error::ConnectionLoss) });
    assert!(matches!(outcome, Err(Error::InvalidOptions(_))), "{outcome:?}");
}

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
    fn all(on: &zklock::Connection, paths: &[String; 5]) -> Vec<LockObject> {
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

    /// Takes it; the hold is released when the box is dropped.
    async fn acquire(&self) -> zklock::Result<Box<dyn std::any::Any + Send>> {
        Ok(match self {
            LockObject::Mutex(mutex) => Box::new(mutex.acquire().await?),
            LockObject::Write(lock) => Box::new(lock.write_lock().acquire().await?),
            LockObject::Semaphore(semaphore) => Box::new(semaphore.acquire().await?),
            LockObject::SemaphoreMutex(mutex) => Box::new(mutex.acquire().await?),
            LockObject::Multi(multi) => Box::new(multi.acquire().await?),
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_lock_waiting_on_an_expired_session_fails_and_then_holds_on_the_new_one() {
    let (proxy, session, mut states, observer) = expirable().await;
    let paths: [String; 5] = std::array::from_fn(|index| unique_path(&format!("session-waits-{index}")));
    let holders = LockObject::all(&(&observer).into(), &paths);
    let waiters = std::sync::Arc::new(LockObject::all(&(&session).into(), &paths));
    for (index, holder) in holders.iter().enumerate() {
        let held = holder.acquire().await.unwrap();
        let waiting = tokio::spawn({
            let waiters = std::sync::Arc::clone(&waiters);
            async move { waiters[index].acquire().await.map(drop) }
        });
        // Let the waiter queue (its node, or its turn at the semaphore's gate, is on the session).
        tokio::time::sleep(Duration::from_millis(300)).await;
        expire(&session, &proxy, &mut states).await;
        let outcome =
            tokio::time::timeout(Duration::from_secs(20), waiting).await.expect("the wait never ended").unwrap();
        assert!(matches!(outcome, Err(Error::SessionExpired)), "recipe {index}: {outcome:?}");
        drop(held);
        let again = tokio::time::timeout(Duration::from_secs(20), waiters[index].acquire())
            .await
            .expect("never held on the new session")
            .unwrap();
        drop(again);
    }
    // No node of any session is left: the old ones went with their sessions, the rest released.
    for path in &paths {
        common::eventually(&format!("{path} empty"), || async { children(&observer, path).await.is_empty() }).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_from_an_already_expired_client_connects_a_new_one() {
    let proxy = Proxy::start(server().address()).unwrap();
    let client = common::connect_through(&proxy, Duration::from_secs(20)).await;
    expire_session(&client, &proxy).await.unwrap();
    let connect_string = proxy.connect_string();
    let session = Session::from_client(client.clone(), move || {
        let connect_string = connect_string.clone();
        async move { Client::connector().with_session_timeout(Duration::from_secs(20)).connect(&connect_string).await }
    })
    .unwrap();
    // It starts where the client stands: lost, not connected on a session that is gone.
    assert_ne!(*session.state().borrow(), ConnectionState::Connected { session_id: client.session_id().0 });
    let mutex = InterProcessMutex::new(&session, &unique_path("session-from-expired-client")).unwrap();
    let guard = tokio::time::timeout(Duration::from_secs(20), mutex.acquire())
        .await
        .expect("no new session was connected: the acquire waited for ever")
        .unwrap();
    assert_ne!(session.session_id(), client.session_id().0);
    assert_eq!(owner_of(&connect().await, guard.node_path()).await, session.session_id());
    guard.release().await.unwrap();
}
