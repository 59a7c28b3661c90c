//! Nested critical sections re-enter the lock their task holds; other tasks wait.
//!
//! Run it with `scripts/example reentrant_sections` (or `cargo run --example
//! reentrant_sections`, with `ZK_CONNECT=host:port` to use your own ZooKeeper).

mod support;

use std::time::Duration;

use zklock::hold::Hold;
use zklock::Client;
use zklock::{InterProcessMutex, Result};

const LOCK_PATH: &str = "/examples/locks/ledger";

/// Moves money, then audits: both need the ledger lock, and `transfer` calls `audit` while
/// holding it. With a non-reentrant lock this would wait for itself forever.
async fn transfer(ledger: &InterProcessMutex, amount: u32) -> Result<()> {
    let guard = ledger.acquire().await?;
    println!("transfer {amount}: holding {}", guard.node_path());
    audit(ledger).await?;
    guard.release().await
}

async fn audit(ledger: &InterProcessMutex) -> Result<()> {
    // Same task: no round trip, a second guard on the same node.
    let guard = ledger.acquire().await?;
    println!("  audit: re-entered {} (held by this task: {})", guard.node_path(), ledger.is_acquired_by_current_task());
    guard.release().await
}

#[tokio::main]
async fn main() -> std::result::Result<(), Box<dyn std::error::Error>> {
    let (connect, _server) = support::zookeeper().await?;
    let client = Client::connect(&connect).await?;
    let ledger = InterProcessMutex::new(&client, LOCK_PATH)?;

    let outer = ledger.acquire().await?;
    println!("main task holds the ledger");
    // Another task of this process is another owner: it waits for the main task to let go.
    let other = ledger.clone();
    let waiting = tokio::spawn(async move {
        let started = std::time::Instant::now();
        let result = transfer(&other, 20).await;
        println!("the other task got the ledger after waiting {:?}", started.elapsed());
        result
    });

    transfer(&ledger, 10).await?; // re-enters while `outer` is held
    tokio::time::sleep(Duration::from_millis(300)).await;
    println!("main task releases its outer hold");
    outer.release().await?;
    waiting.await??;
    println!("held in this process now: {}", ledger.is_acquired_in_this_process());
    Ok(())
}
