//! Fencing tokens: a resource that refuses writes from a holder that lost the lock without
//! noticing in time (a long GC pause, a partition).
//!
//! Run it with `scripts/example fencing` (or `cargo run --example fencing`, with
//! `ZK_CONNECT=host:port` to use your own ZooKeeper). It partitions one client with a local
//! proxy, so it takes a few seconds.

mod support;

use std::net::ToSocketAddrs;
use std::sync::Mutex;
use std::time::Duration;

use zklock::hold::Hold;
use zklock::Client;
use zklock::InterProcessMutex;
use zklock_testcontainers::Proxy;

const LOCK_PATH: &str = "/examples/locks/fenced-storage";

/// The protected resource: it remembers the highest token it has accepted and refuses lower
/// ones. With ZooKeeper, the token is the lock node's czxid, which grows from holder to holder.
#[derive(Default)]
struct FencedStorage {
    highest_token: Mutex<i64>,
}

impl FencedStorage {
    fn write(&self, token: i64, value: &str) -> Result<(), String> {
        let mut highest = self.highest_token.lock().unwrap();
        if token < *highest {
            return Err(format!("refused {value:?}: token {token} is older than {highest}"));
        }
        *highest = token;
        println!("  storage accepted {value:?} with token {token}");
        Ok(())
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (connect, _server) = support::zookeeper().await?;
    let first_server = connect.split(',').next().unwrap_or_default().to_socket_addrs()?.next().ok_or("no address")?;
    // Service A reaches ZooKeeper through a proxy we can cut; service B directly.
    let proxy = Proxy::start(first_server)?;
    let session = Duration::from_secs(4);
    let a = Client::connector().with_session_timeout(session).connect(&proxy.connect_string()).await?;
    let b = Client::connector().with_session_timeout(session).connect(&connect).await?;
    let storage = FencedStorage::default();

    let a_guard = InterProcessMutex::new(&a, LOCK_PATH)?.acquire().await?;
    println!("A holds the lock, token {}", a_guard.fencing_token());
    storage.write(a_guard.fencing_token(), "A: first write")?;

    println!("A is cut off from ZooKeeper (think: a long GC pause) ...");
    proxy.blackhole();
    let reason = a_guard.lost().await;
    println!("A is told the lock is lost ({reason}), is_held() = {}", a_guard.is_held());

    let b_lock = InterProcessMutex::new(&b, LOCK_PATH)?;
    let b_guard = b_lock.acquire().await?; // once the server expires A's session
    println!("B holds the lock, token {}", b_guard.fencing_token());
    storage.write(b_guard.fencing_token(), "B: write")?;

    // A buggy A that ignored lost() comes back and writes with its old token.
    proxy.heal();
    match storage.write(a_guard.fencing_token(), "A: late write") {
        Ok(()) => println!("  the storage accepted a stale write: this must never happen"),
        Err(refusal) => println!("  storage {refusal}"),
    }
    println!("A's release reports: {:?}", a_guard.release().await.err().map(|e| e.to_string()));
    b_guard.release().await?;
    Ok(())
}
