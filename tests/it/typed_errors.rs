//! Bad input and ended sessions: typed errors, promptly, never a hang or a panic.

use crate::common;

use std::time::Duration;

use common::{children, connect, connect_to, server, unique_path, wait_for_children};
use zklock::hold::Hold;
use zklock::{Error, InterProcessMutex, LossReason};
use zklock_testcontainers::{expire_session, Proxy};

/// Generous bound for "promptly": a hang would exceed it, a slow machine would not.
const PROMPTLY: Duration = Duration::from_secs(10);

#[tokio::test]
async fn bad_paths_are_errors_not_panics() {
    let client = connect().await;
    for path in
        ["", "relative", "/trailing/", "/a//b", "/zookeeper", "/zookeeper/quota", "/a\0b", "/a/./b", "/a/../b", "/"]
    {
        match InterProcessMutex::new(&client, path) {
            Err(Error::InvalidPath { path: reported, reason }) => {
                assert_eq!(reported, path);
                assert!(!reason.is_empty());
            }
            other => panic!("{path:?} gave {other:?}"),
        }
    }
}

#[tokio::test]
async fn after_session_expiry_acquire_and_release_fail_promptly_and_the_lock_is_free() {
    let path = unique_path("expired");
    let proxy = Proxy::start(server().address()).unwrap();
    let client = connect_to(&proxy.connect_string()).await;
    let mutex = InterProcessMutex::new(&client, &path).unwrap();
    let guard = mutex.acquire().await.unwrap();

    expire_session(&client, &proxy).await.unwrap();

    // The hold table still counts the guard: re-entering must fail, not hand out another guard.
    let reentered = tokio::time::timeout(PROMPTLY, mutex.acquire()).await.expect("acquire hung");
    assert!(matches!(reentered, Err(Error::SessionExpired | Error::LockLost(_))), "{reentered:?}");
    assert!(matches!(mutex.try_acquire().await, Err(Error::SessionExpired | Error::LockLost(_))));
    let fresh = InterProcessMutex::new(&client, &path).unwrap();
    let outcome = tokio::time::timeout(PROMPTLY, fresh.acquire()).await.expect("acquire hung");
    assert!(matches!(outcome, Err(Error::SessionExpired)), "{outcome:?}");
    let outcome = tokio::time::timeout(PROMPTLY, fresh.acquire_timeout(Duration::from_secs(30))).await.unwrap();
    assert!(matches!(outcome, Err(Error::SessionExpired)), "{outcome:?}");

    assert!(!guard.is_held());
    assert_eq!(guard.lost().await, LossReason::SessionExpired);
    let released = tokio::time::timeout(PROMPTLY, guard.release()).await.expect("release hung");
    assert!(matches!(released, Err(Error::LockLost(LossReason::SessionExpired))), "{released:?}");

    // The ephemeral node went with the session: another client gets the lock at once.
    let other_client = connect().await;
    let other = InterProcessMutex::new(&other_client, &path).unwrap();
    let guard = other.try_acquire().await.unwrap().expect("the expired holder's node is gone");
    guard.release().await.unwrap();
}

#[tokio::test]
async fn a_waiter_whose_session_expires_gets_an_error_and_leaves_no_node() {
    let path = unique_path("expired-waiter");
    let holder_client = connect().await;
    let holder = InterProcessMutex::new(&holder_client, &path).unwrap().acquire().await.unwrap();
    let proxy = Proxy::start(server().address()).unwrap();
    let client = connect_to(&proxy.connect_string()).await;
    let mutex = InterProcessMutex::new(&client, &path).unwrap();
    let waiter = tokio::spawn(async move { mutex.acquire().await.map(drop) });
    wait_for_children(&holder_client, &path, 2).await;

    expire_session(&client, &proxy).await.unwrap();

    let outcome = tokio::time::timeout(PROMPTLY, waiter).await.expect("waiter hung").unwrap();
    assert!(matches!(outcome, Err(Error::SessionExpired)), "{outcome:?}");
    assert_eq!(children(&holder_client, &path).await.len(), 1, "only the holder's node is left");
    holder.release().await.unwrap();
}

/// What a user prints is the whole story: the operation, where, and the server's reason, in
/// `Display` alone (the client's error stays the `source()`).
#[tokio::test]
async fn a_refused_acquire_says_what_failed_where_and_why() {
    let base = unique_path("refused");
    let client = connect().await;
    let open = zookeeper_client::CreateMode::Persistent.with_acls(zookeeper_client::Acls::anyone_all());
    client.mkdir(&base, &open).await.unwrap();
    let parent = format!("{base}/read-only");
    let read_only = zookeeper_client::CreateMode::Persistent.with_acls(zookeeper_client::Acls::anyone_read());
    client.create(&parent, b"", &read_only).await.unwrap();
    let mutex = InterProcessMutex::new(&client, &format!("{parent}/lock")).unwrap();
    let err = mutex.acquire().await.expect_err("the parent's ACL forbids creating the lock path");
    let text = err.to_string();
    assert!(text.starts_with("zookeeper create parents of ") && text.contains(&parent), "what and where: {text}");
    assert!(text.ends_with(&zookeeper_client::Error::NoAuth.to_string()), "why: {text}");
    assert!(std::error::Error::source(&err).is_some_and(|source| source.is::<zookeeper_client::Error>()));
}

/// A first connect that fails says why (here: nothing listens on the port).
#[tokio::test]
async fn a_failed_connect_says_why() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().to_string();
    let outcome = zklock::Session::connect(move || {
        let closed = closed.clone();
        async move { zookeeper_client::Client::connector().with_fail_eagerly().connect(&closed).await }
    })
    .await;
    let Err(err) = outcome else { panic!("nothing listens there") };
    let text = err.to_string();
    assert!(text.starts_with("zookeeper connect"), "{text}");
    let why = std::error::Error::source(&err).expect("the client's error").to_string();
    assert!(text.ends_with(&format!("failed: {why}")), "{text}");
}
