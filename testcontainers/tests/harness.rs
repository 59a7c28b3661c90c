//! The harness itself: a server starts, answers, and is gone after drop.

use std::net::TcpStream;
use std::time::Duration;

use zklock_testcontainers::{expire_session, Proxy, ZooKeeperServer};
use zookeeper_client::{Client, SessionState};

#[tokio::test]
async fn server_answers_and_dies_on_drop() {
    let server = ZooKeeperServer::start().expect("start zookeeper");
    assert_eq!(server.four_letter_word("ruok").unwrap(), "imok");
    let client = Client::connect(&server.connect_string()).await.unwrap();
    client.list_children("/").await.unwrap();
    let address = server.address();
    let dir = server.dir().to_path_buf();
    drop(client);
    drop(server);
    assert!(
        TcpStream::connect_timeout(&address, Duration::from_millis(500)).is_err(),
        "server still listens"
    );
    assert!(!dir.exists(), "server directory left behind");
}

#[tokio::test]
async fn expire_session_expires_the_session() {
    let server = ZooKeeperServer::start().expect("start zookeeper");
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
            &zookeeper_client::CreateMode::Ephemeral
                .with_acls(zookeeper_client::Acls::anyone_all()),
        )
        .await
        .unwrap();
    expire_session(&client, &proxy).await.unwrap();
    assert_eq!(client.state(), SessionState::Expired);
    assert!(client.list_children("/").await.is_err());
    let observer = Client::connect(&server.connect_string()).await.unwrap();
    assert_eq!(
        observer.check_stat("/ephemeral").await.unwrap(),
        None,
        "ephemeral node outlived its session"
    );
}

#[tokio::test]
async fn cut_proxy_disconnects_and_heal_reconnects_same_session() {
    let server = ZooKeeperServer::start().expect("start zookeeper");
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
