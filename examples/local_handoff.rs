//! Local handoff: request handlers of one service serialise on a per-tenant lock, while another
//! service takes the same lock now and then and keeps its turn.
//!
//! Run it with `scripts/example local_handoff` (or `cargo run --example local_handoff`, with
//! `ZK_CONNECT=host:port` to use your own ZooKeeper).

mod support;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use zklock::hold::Hold;
use zklock::Client;
use zklock::{InterProcessMutex, LocalHandoff};

const LOCK_PATH: &str = "/examples/locks/tenant-42";
const HANDLERS: usize = 8;
const REQUESTS_EACH: usize = 200;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (connect, _server) = support::zookeeper().await?;
    let service = Client::connect(&connect).await?;
    let other_service = Client::connect(&connect).await?;
    // One mutex object for all the handlers of this service.
    let handoff = LocalHandoff::new(64, Duration::from_millis(20));
    let tenant = InterProcessMutex::builder(&service, LOCK_PATH).local_handoff(handoff).build()?;
    let holders_per_node: Arc<Mutex<BTreeMap<i64, usize>>> = Arc::default();

    let started = Instant::now();
    let handlers: Vec<_> = (0..HANDLERS)
        .map(|_| {
            let (tenant, holders_per_node) = (tenant.clone(), holders_per_node.clone());
            tokio::spawn(async move {
                for _ in 0..REQUESTS_EACH {
                    let guard = tenant.acquire().await?;
                    // The token is czxid × 256 + the holders the node had before this one.
                    *holders_per_node.lock().unwrap().entry(guard.fencing_token() >> 8).or_default() += 1;
                    guard.release().await?;
                }
                Ok::<(), zklock::Error>(())
            })
        })
        .collect();
    // Meanwhile the other service takes the lock a few times; it never waits behind more than
    // one node's holders of ours. It uses local handoff too, so that its tokens compare with
    // ours (a plain mutex's token is the bare czxid).
    let other = InterProcessMutex::builder(&other_service, LOCK_PATH).local_handoff(handoff).build()?;
    for _ in 0..3 {
        let asked = Instant::now();
        let guard = other.acquire().await?;
        println!("the other service held after {:?} (token {})", asked.elapsed(), guard.fencing_token());
        guard.release().await?;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for handler in handlers {
        handler.await??;
    }
    let elapsed = started.elapsed();
    let per_node = holders_per_node.lock().unwrap();
    let holds: usize = per_node.values().sum();
    println!(
        "{holds} holds by {HANDLERS} handlers in {elapsed:?} ({:.0}/s) on {} queue nodes, at most {} holders on one",
        holds as f64 / elapsed.as_secs_f64(),
        per_node.len(),
        per_node.values().max().unwrap_or(&0)
    );
    Ok(())
}
