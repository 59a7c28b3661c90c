//! The harness itself: a server starts, answers, and is gone after drop.

use std::net::TcpStream;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use zklock_testcontainers::{expire_session, Proxy, ServerOptions, ThrottledOperation, ZooKeeperServer};
use zookeeper_client::{Acls, Client, CreateMode, Error as ZkError, EventType, SessionState};

#[tokio::test]
async fn server_answers_and_dies_on_drop() {
    let server = ZooKeeperServer::start().await.expect("start zookeeper");
    assert_eq!(server.four_letter_word("ruok").unwrap(), "imok");
    let client = Client::connect(&server.connect_string()).await.unwrap();
    client.list_children("/").await.unwrap();
    let address = server.address();
    let dir = server.dir().to_path_buf();
    drop(client);
    drop(server);
    assert!(TcpStream::connect_timeout(&address, Duration::from_millis(500)).is_err(), "server still listens");
    assert!(!dir.exists(), "server directory left behind");
}

/// A start leaves its test's runtime free while the server comes up: on a current-thread
/// runtime, a task beside it runs again and again before the start returns.
#[tokio::test(flavor = "current_thread")]
async fn a_start_leaves_the_runtime_free() {
    let ticks = Arc::new(AtomicUsize::new(0));
    let ticker = tokio::spawn({
        let ticks = Arc::clone(&ticks);
        async move {
            loop {
                ticks.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    });
    let server = ZooKeeperServer::start().await.expect("start zookeeper");
    let ran = ticks.load(Ordering::SeqCst);
    ticker.abort();
    assert!(ran >= 2, "the runtime was blocked while the server started: {ran} ticks");
    assert_eq!(server.four_letter_word("ruok").unwrap(), "imok");
}

/// From sync code (a `static`, a test without a runtime), `start_blocking` starts a server.
#[test]
fn a_server_starts_from_sync_code() {
    let server = ZooKeeperServer::start_blocking(&ServerOptions::default()).expect("start zookeeper");
    assert_eq!(server.four_letter_word("ruok").unwrap(), "imok");
}

#[tokio::test]
async fn expire_session_expires_the_session() {
    let server = ZooKeeperServer::start().await.expect("start zookeeper");
    let proxy = Proxy::start(server.address()).unwrap();
    let client = Client::connector()
        .with_session_timeout(Duration::from_secs(10))
        .connect(&proxy.connect_string())
        .await
        .unwrap();
    client
        .create(
            "/ephemeral",
            b"",
            &zookeeper_client::CreateMode::Ephemeral.with_acls(zookeeper_client::Acls::anyone_all()),
        )
        .await
        .unwrap();
    expire_session(&client, &proxy).await.unwrap();
    assert_eq!(client.state(), SessionState::Expired);
    assert!(client.list_children("/").await.is_err());
    let observer = Client::connect(&server.connect_string()).await.unwrap();
    assert_eq!(observer.check_stat("/ephemeral").await.unwrap(), None, "ephemeral node outlived its session");
}

#[tokio::test]
async fn cut_proxy_disconnects_and_heal_reconnects_same_session() {
    let server = ZooKeeperServer::start().await.expect("start zookeeper");
    let proxy = Proxy::start(server.address()).unwrap();
    let client = Client::connector()
        .with_session_timeout(Duration::from_secs(10))
        .connect(&proxy.connect_string())
        .await
        .unwrap();
    let mut states = client.state_watcher();
    proxy.cut();
    assert_eq!(states.changed().await, SessionState::Disconnected);
    proxy.heal();
    assert_eq!(states.changed().await, SessionState::SyncConnected);
    client.list_children("/").await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn an_ensemble_survives_losing_its_leader_and_takes_it_back() {
    use zklock_testcontainers::Ensemble;
    let mut ensemble = Ensemble::start(3).await.expect("start an ensemble");
    let client = Client::connector()
        .with_session_timeout(Duration::from_secs(10))
        .connect(&ensemble.connect_string())
        .await
        .unwrap();
    let persistent = zookeeper_client::CreateMode::Persistent.with_acls(zookeeper_client::Acls::anyone_all());
    client.create("/before", b"", &persistent).await.unwrap();
    let leader = ensemble.leader().expect("a leader");
    ensemble.kill(leader);
    ensemble.wait_for_quorum(Duration::from_secs(60)).await.unwrap();
    assert_ne!(ensemble.leader(), Some(leader));
    client.create("/after", b"", &persistent).await.unwrap();
    ensemble.restart(leader).await.unwrap();
    assert!(ensemble.mode(leader).is_some(), "the restarted member serves again");
    // Its data was kept, and it caught up.
    let direct = Client::connect(&ensemble.addresses()[leader].to_string()).await.unwrap();
    direct.sync("/").await.unwrap();
    assert!(direct.check_stat("/before").await.unwrap().is_some());
    assert!(direct.check_stat("/after").await.unwrap().is_some());

    let follower = (0..3).find(|&i| Some(i) != ensemble.leader()).unwrap();
    ensemble.pause(follower);
    assert!(ensemble.mode(follower).is_none(), "a paused member does not answer");
    ensemble.resume(follower);
    ensemble.wait_for_quorum(Duration::from_secs(60)).await.unwrap();
}

#[tokio::test]
async fn drop_replies_loses_replies_but_delivers_requests() {
    let server = ZooKeeperServer::start().await.expect("start zookeeper");
    let proxy = Proxy::start(server.address()).unwrap();
    let client = Client::connector()
        .with_session_timeout(Duration::from_secs(4))
        .connect(&proxy.connect_string())
        .await
        .unwrap();
    proxy.drop_replies();
    let persistent = zookeeper_client::CreateMode::Persistent.with_acls(zookeeper_client::Acls::anyone_all());
    let outcome = tokio::time::timeout(Duration::from_millis(500), client.create("/delivered", b"", &persistent)).await;
    assert!(outcome.is_err(), "the reply should have been lost");
    assert_eq!(
        (proxy.requests_lost(), proxy.replies_lost()),
        (0, 1),
        "the create's reply was lost, pings do not count"
    );
    proxy.heal();
    let observer = Client::connect(&server.connect_string()).await.unwrap();
    assert!(observer.check_stat("/delivered").await.unwrap().is_some(), "the request reached the server");
}

#[tokio::test]
async fn blackhole_counts_the_requests_it_loses_and_nothing_while_the_client_is_idle() {
    let (_server, proxy, client, _observer) = proxied_client_and_observer().await;
    proxy.blackhole();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(proxy.requests_lost(), 0, "an idle client sends nothing but pings");
    let outcome = tokio::time::timeout(Duration::from_millis(300), client.check_stat("/")).await;
    assert!(outcome.is_err(), "the request should have been lost");
    assert_eq!((proxy.requests_lost(), proxy.replies_lost()), (1, 0));
    proxy.heal();
}

/// A server, a proxy to it, a client through the proxy and one straight to the server.
async fn proxied_client_and_observer() -> (ZooKeeperServer, Proxy, Client, Client) {
    let server = ZooKeeperServer::start().await.expect("start zookeeper");
    let proxy = Proxy::start(server.address()).unwrap();
    let client = Client::connect(&proxy.connect_string()).await.unwrap();
    let observer = Client::connect(&server.connect_string()).await.unwrap();
    (server, proxy, client, observer)
}

#[tokio::test]
async fn throttle_next_refuses_one_delete_unrun_and_then_passes_again() {
    let (_server, proxy, client, observer) = proxied_client_and_observer().await;
    let persistent = CreateMode::Persistent.with_acls(Acls::anyone_all());
    client.create("/throttled", b"data", &persistent).await.unwrap();

    proxy.throttle_next(ThrottledOperation::Delete);
    // Sent together: the refusal does not take the place of the other reply.
    let (deleted, read) = tokio::join!(client.delete("/throttled", None), client.get_data("/throttled"));
    assert_eq!(deleted, Err(ZkError::Throttled));
    assert_eq!(read.unwrap().0, b"data");
    assert!(observer.check_stat("/throttled").await.unwrap().is_some(), "a throttled delete ran");
    assert_eq!(proxy.throttled_count(), 1);

    client.delete("/throttled", None).await.unwrap();
    assert_eq!(observer.check_stat("/throttled").await.unwrap(), None);
    assert_eq!(proxy.throttled_count(), 1);
}

#[tokio::test]
async fn throttle_next_refuses_every_form_of_create_get_data_and_get_children() {
    let (_server, proxy, client, observer) = proxied_client_and_observer().await;
    let persistent = CreateMode::Persistent.with_acls(Acls::anyone_all());
    let container = CreateMode::Container.with_acls(Acls::anyone_all());

    proxy.throttle_next(ThrottledOperation::Create);
    assert_eq!(client.create("/created", b"", &persistent).await.unwrap_err(), ZkError::Throttled);
    assert_eq!(observer.check_stat("/created").await.unwrap(), None, "a throttled create ran");
    proxy.throttle_next(ThrottledOperation::Create);
    assert_eq!(client.mkdir("/parent/child", &container).await.unwrap_err(), ZkError::Throttled);
    assert_eq!(observer.check_stat("/parent").await.unwrap(), None, "a throttled create ran");
    client.create("/created", b"", &persistent).await.unwrap();

    proxy.throttle_next(ThrottledOperation::GetData);
    assert_eq!(client.get_and_watch_data("/created").await.unwrap_err(), ZkError::Throttled);
    let (_, _, watcher) = client.get_and_watch_data("/created").await.unwrap();
    observer.delete("/created", None).await.unwrap();
    assert_eq!(watcher.changed().await.event_type, zookeeper_client::EventType::NodeDeleted);

    for _ in 0..2 {
        proxy.throttle_next(ThrottledOperation::GetChildren);
    }
    assert_eq!(client.list_children("/").await.unwrap_err(), ZkError::Throttled);
    assert_eq!(client.get_children("/").await.unwrap_err(), ZkError::Throttled);
    assert!(client.list_children("/").await.unwrap().contains(&"zookeeper".to_owned()));
    assert_eq!(proxy.throttled_count(), 5);
}

#[tokio::test]
async fn an_ensemble_of_five_keeps_quorum_after_losing_two() {
    use zklock_testcontainers::Ensemble;
    let mut ensemble = Ensemble::start(5).await.expect("start five servers");
    assert_eq!(ensemble.size(), 5);
    let leader = ensemble.leader().expect("a leader");
    let follower = (0..5).find(|&i| i != leader).unwrap();
    ensemble.kill(leader);
    ensemble.stop(follower);
    ensemble.wait_for_quorum(Duration::from_secs(60)).await.expect("three of five are a quorum");
    assert!(ensemble.leader().is_some_and(|new| new != leader && new != follower));
}

/// A restart is short and keeps the world: the same port, the nodes written before, and a
/// session that comes back within its timeout, with its ephemeral node and its watch (a delete
/// after the restart is told).
#[tokio::test(flavor = "multi_thread")]
async fn a_restarted_server_keeps_its_port_its_data_and_sessions_that_come_back_in_time() {
    let server = ZooKeeperServer::start().await.expect("start zookeeper");
    let address = server.address();
    // Long enough for a restart on a loaded machine (8 s seen with a build beside the tests):
    // what is tested is what a session that comes back in time keeps, not how fast a JVM starts.
    let session_timeout = Duration::from_secs(30);
    let client =
        Client::connector().with_session_timeout(session_timeout).connect(&server.connect_string()).await.unwrap();
    let session = client.session_id();
    let persistent = CreateMode::Persistent.with_acls(Acls::anyone_all());
    let ephemeral = CreateMode::Ephemeral.with_acls(Acls::anyone_all());
    client.create("/kept", b"data", &persistent).await.unwrap();
    client.create("/mine", b"", &ephemeral).await.unwrap();
    let (_, _, watch) = client.get_and_watch_data("/kept").await.unwrap();
    let mut states = client.state_watcher();
    let pid = server.pid();

    let started = std::time::Instant::now();
    server.restart().await.expect("restart zookeeper");
    let took = started.elapsed();

    assert_ne!(server.pid(), pid, "a new process");
    assert_eq!(server.address(), address, "the same port");
    assert_eq!(server.four_letter_word("ruok").unwrap(), "imok");
    assert!(took < session_timeout, "the restart took {took:?}, longer than the session");
    // A change (the disconnection, which the reconnection may have overwritten), then connected.
    let reconnected = async {
        states.changed().await;
        while states.peek_state() != SessionState::SyncConnected {
            states.changed().await;
        }
    };
    tokio::time::timeout(session_timeout, reconnected).await.expect("the client reconnects within its session");
    assert_eq!(client.session_id(), session, "the same session");
    assert_eq!(client.get_data("/kept").await.unwrap().0, b"data");
    assert!(client.check_stat("/mine").await.unwrap().is_some(), "the session's ephemeral node stayed");
    let other = Client::connect(&server.connect_string()).await.unwrap();
    other.delete("/kept", None).await.unwrap();
    let event = tokio::time::timeout(Duration::from_secs(5), watch.changed()).await.expect("the watch is told");
    assert_eq!((event.event_type, event.path.as_str()), (EventType::NodeDeleted, "/kept"), "{event:?}");
}
