//! A long-lived service that survives the expiry of its ZooKeeper session: its lock is built on a
//! `zklock::Session`, which connects a new session after an expiry, so the same lock object goes
//! on taking the lock, with no reconnect-and-rebuild code in the service.
//!
//! Run it with `scripts/example long_lived` (or `cargo run --example long_lived`, with
//! `ZK_CONNECT=host:port` to use your own ZooKeeper). It expires the service's session once,
//! through a local proxy, so it takes a few seconds.

mod support;

use std::net::ToSocketAddrs;
use std::time::Duration;

use zklock::hold::Hold;
use zklock::session::ConnectionState;
use zklock::Client;
use zklock::{InterProcessMutex, Session};
use zklock_testcontainers::{expire_session, Proxy};

const LOCK_PATH: &str = "/examples/locks/long-lived";

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (connect, _server) = support::zookeeper().await?;
    let first_server = connect.split(',').next().unwrap_or_default().to_socket_addrs()?.next().ok_or("no address")?;
    // The service reaches ZooKeeper through a proxy, so that this example can expire its session.
    let proxy = Proxy::start(first_server)?;
    let through = proxy.connect_string();

    // How every session of the service connects (timeout, auth, TLS, chroot: the connector's).
    let session = Session::connect(move || {
        let through = through.clone();
        async move { Client::connector().with_session_timeout(Duration::from_secs(6)).connect(&through).await }
    })
    .await?;
    let mut states = session.subscribe();
    tokio::spawn(async move {
        while states.changed().await.is_ok() {
            let state = *states.borrow_and_update();
            match state {
                ConnectionState::Lost => println!("  [session] expired: every hold on it is lost"),
                ConnectionState::Reconnected { session_id, .. } => println!("  [session] on session {session_id:#x}"),
                other => println!("  [session] {other:?}"),
            }
        }
    });

    // Built once, used for the life of the service.
    let lock = InterProcessMutex::new(&session, LOCK_PATH)?;
    for round in 1..=2 {
        let guard = lock.acquire().await?;
        println!("round {round}: holding {} on session {:#x}", guard.node_path(), session.session_id());
        if round == 1 {
            println!("round {round}: the server expires our session (think: a long GC pause) ...");
            expire_session(&session.client(), &proxy).await?;
            let reason = guard.lost().await;
            println!("round {round}: told the lock is lost ({reason}); stopping this round's work");
            continue;
        }
        guard.release().await?;
        println!("round {round}: released");
    }
    Ok(())
}
