//! What the session tests share: a `zklock::Session` through a proxy (so that a test can expire
//! it), one whose next session connects only when the test lets it, and who owns a node.

use std::time::Duration;

use tokio::sync::watch;
use zklock::session::ConnectionState;
use zklock::zookeeper_client::Client;
use zklock::{LossReason, Session};
use zklock_testcontainers::{expire_session, Proxy};

use super::{connect, server};

/// A session whose every client connects through `proxy` (so that the test can expire it).
pub async fn session_through(proxy: &Proxy) -> Session {
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
pub async fn expire(session: &Session, proxy: &Proxy, states: &mut watch::Receiver<ConnectionState>) -> i64 {
    let old = session.session_id();
    expire_session(&session.client(), proxy).await.unwrap();
    let reconnected = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            if let ConnectionState::Reconnected { session_id, .. } = *states.borrow_and_update() {
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
pub async fn expirable() -> (Proxy, Session, watch::Receiver<ConnectionState>, Client) {
    let proxy = Proxy::start(server().address()).unwrap();
    let session = session_through(&proxy).await;
    let states = session.subscribe();
    (proxy, session, states, connect().await)
}

/// The session that owns `node` (its ephemeral owner).
pub async fn owner_of(observer: &Client, node: &str) -> i64 {
    observer.check_stat(node).await.unwrap().expect("the node exists").ephemeral_owner
}

/// A loss that an expiry explains: the expiry itself, or the disconnection that came first
/// (the policy gives a hold up after a third of the session timeout without a server).
pub fn lost_to_the_expiry(reason: LossReason) -> bool {
    matches!(reason, LossReason::SessionExpired | LossReason::Disconnected { .. })
}

/// A session through a new proxy whose every connect after the first waits until `open` is sent
/// `true`: an expired session that cannot reconnect yet, for as long as the test wants.
pub async fn gated() -> (Proxy, Session, watch::Receiver<ConnectionState>, watch::Sender<bool>) {
    let proxy = Proxy::start(server().address()).unwrap();
    let (open, gate) = watch::channel(true);
    let connect_string = proxy.connect_string();
    let session = Session::connect(move || {
        let (connect_string, mut gate) = (connect_string.clone(), gate.clone());
        async move {
            let _ = gate.wait_for(|open| *open).await;
            Client::connector().with_session_timeout(Duration::from_secs(20)).connect(&connect_string).await
        }
    })
    .await
    .unwrap();
    open.send_replace(false);
    let states = session.subscribe();
    (proxy, session, states, open)
}
