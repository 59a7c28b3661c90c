//! Recipes that outlive their session: every recipe built on a `zklock::Session` acquires again
//! after the server expired its session mid-hold, with no code of the caller's, one new session
//! per expiry, its states told in order, and no node of either session left (waits across an
//! expiry: `session_waits.rs`).

use crate::common;

use std::time::Duration;

use common::session::{expirable, expire, lost_to_the_expiry, owner_of, session_through};
use common::{children, connect, server, unique_path};
use zklock::election::TermEnd;
use zklock::hold::Hold;
use zklock::session::ConnectionState;
use zklock::zookeeper_client::Client;
use zklock::{
    Error, InterProcessMultiLock, InterProcessMutex, InterProcessReadWriteLock, InterProcessSemaphoreMutex,
    InterProcessSemaphoreV2, LeaderLatch, Session,
};
use zklock_testcontainers::{expire_session, Proxy};

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
                (guard.node_path().to_owned(), Box::new(guard) as Box<dyn zklock::hold::Hold>)
            }
            "write" | "read" => {
                let side = if recipe == "write" { read_write.write_lock() } else { read_write.read_lock() };
                let guard = side.acquire().await.unwrap();
                (guard.node_path().to_owned(), Box::new(guard) as Box<dyn zklock::hold::Hold>)
            }
            "semaphore" => {
                let lease = semaphore.acquire().await.unwrap();
                (lease.node_path().to_owned(), Box::new(lease) as Box<dyn zklock::hold::Hold>)
            }
            "semaphore mutex" => {
                let lease = semaphore_mutex.acquire().await.unwrap();
                (lease.node_path().to_owned(), Box::new(lease) as Box<dyn zklock::hold::Hold>)
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
async fn a_session_tells_its_states_in_order() {
    let proxy = Proxy::start(server().address()).unwrap();
    let session = session_through(&proxy).await;
    let first = session.session_id();
    let mut states = session.subscribe();
    assert_eq!(*states.borrow_and_update(), ConnectionState::Connected { session_id: first });
    let seen = tokio::spawn({
        let mut states = states.clone();
        async move {
            let mut seen = Vec::new();
            while states.changed().await.is_ok() {
                let state = *states.borrow_and_update();
                seen.push(state);
                if matches!(state, ConnectionState::Reconnected { session_id, .. } if session_id != first) {
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
    assert_eq!(
        without_suspensions,
        [ConnectionState::Lost, ConnectionState::Reconnected { session_id: second, expiries: 1 }]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_latch_on_a_session_leads_again_after_an_expiry() {
    let (proxy, session, mut states, observer) = expirable().await;
    let path = unique_path("session-latch");
    let latch = LeaderLatch::new(&session, &path, "one").unwrap();
    latch.start().await.unwrap();
    let first = latch.await_leadership().await.unwrap();
    expire(&session, &proxy, &mut states).await;
    let end = tokio::time::timeout(Duration::from_secs(20), first.ended()).await.expect("the term never ended");
    assert!(matches!(end, TermEnd::Lost(reason) if lost_to_the_expiry(reason)), "{end:?}");
    let second = tokio::time::timeout(Duration::from_secs(20), latch.await_leadership())
        .await
        .expect("never led again")
        .unwrap();
    assert!(second.fencing_token() > first.fencing_token());
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
    let mut states = session.subscribe();
    let mutex = InterProcessMutex::new(&session, &unique_path("session-from-client")).unwrap();
    mutex.acquire().await.unwrap().release().await.unwrap();
    let new = expire(&session, &proxy, &mut states).await;
    assert_ne!(new, client.session_id().0);
    let guard = mutex.acquire().await.unwrap();
    assert_eq!(owner_of(&connect().await, guard.node_path()).await, new);
    guard.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_from_a_connect_string_connects_its_next_session_to_it() {
    let proxy = Proxy::start(server().address()).unwrap();
    let session = Session::connect_to(&proxy.connect_string()).await.unwrap();
    let mut states = session.subscribe();
    let mutex = InterProcessMutex::new(&session, &unique_path("session-connect-to")).unwrap();
    let first = session.session_id();
    let new = expire(&session, &proxy, &mut states).await;
    assert_ne!(new, first);
    let guard = mutex.acquire().await.unwrap();
    assert_eq!(owner_of(&connect().await, guard.node_path()).await, new);
    guard.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_from_a_connector_connects_its_next_session_with_the_same_options() {
    let proxy = Proxy::start(server().address()).unwrap();
    // Not the client's default (6 s): a next session connected without the connector differs.
    let timeout = Duration::from_secs(17);
    let connector = zklock::Client::connector().with_session_timeout(timeout);
    let session = Session::connect_with(connector, &proxy.connect_string()).await.unwrap();
    assert_eq!(session.client().session_timeout(), timeout);
    let mut states = session.subscribe();
    expire(&session, &proxy, &mut states).await;
    assert_eq!(session.client().session_timeout(), timeout);
}

#[tokio::test]
async fn a_first_connect_with_a_connector_that_fails_is_the_callers_error() {
    let connector = zklock::Client::connector()
        .with_connection_timeout(Duration::from_millis(500))
        .with_session_timeout(Duration::from_secs(2));
    let outcome = Session::connect_with(connector, "127.0.0.1:1").await;
    let Err(err @ Error::ZooKeeper { operation: "connect", .. }) = outcome else { panic!("{outcome:?}") };
    // What failed, where, and why.
    let why = std::error::Error::source(&err).unwrap().to_string();
    assert_eq!(err.to_string(), format!("zookeeper connect 127.0.0.1:1 failed: {why}"));
}

#[test]
fn a_session_from_a_client_needs_a_runtime() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let client = runtime.block_on(connect());
    let outcome = Session::from_client(client, || async { Err(zklock::zookeeper_client::Error::ConnectionLoss) });
    assert!(matches!(outcome, Err(Error::InvalidOptions(_))), "{outcome:?}");
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
    assert_ne!(*session.subscribe().borrow(), ConnectionState::Connected { session_id: client.session_id().0 });
    let mutex = InterProcessMutex::new(&session, &unique_path("session-from-expired-client")).unwrap();
    let guard = tokio::time::timeout(Duration::from_secs(20), mutex.acquire())
        .await
        .expect("no new session was connected: the acquire waited for ever")
        .unwrap();
    assert_ne!(session.session_id(), client.session_id().0);
    assert_eq!(owner_of(&connect().await, guard.node_path()).await, session.session_id());
    guard.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_that_looks_only_after_the_new_sessions_are_up_still_knows_they_were_lost() {
    let (proxy, session, mut states, _observer) = expirable().await;
    let first = session.session_id();
    let late = session.subscribe();
    expire(&session, &proxy, &mut states).await;
    let second = expire(&session, &proxy, &mut states).await;
    // The late reader never saw `Lost`: the latest state alone must tell it.
    assert_eq!(*late.borrow(), ConnectionState::Reconnected { session_id: second, expiries: 2 });
    assert_ne!(second, first);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_connection_is_suspended_then_reconnected_on_the_same_session() {
    let proxy = Proxy::start(server().address()).unwrap();
    let session = session_through(&proxy).await;
    let id = session.session_id();
    let mut states = session.subscribe();
    proxy.cut();
    let suspended =
        tokio::time::timeout(Duration::from_secs(10), states.wait_for(|s| *s == ConnectionState::Suspended));
    suspended.await.expect("a cut connection was never told as Suspended").unwrap();
    proxy.heal();
    let reconnected = tokio::time::timeout(
        Duration::from_secs(15),
        states.wait_for(|s| matches!(s, ConnectionState::Reconnected { .. })),
    );
    let reconnected = *reconnected.await.expect("never reconnected").unwrap();
    // The session lived through the cut (20 s session timeout): same id, nothing lost.
    assert_eq!(reconnected, ConnectionState::Reconnected { session_id: id, expiries: 0 });
    assert_eq!(session.session_id(), id);
}
