//! Two services contend for one lock; the one that cannot get it in time gives up cleanly.
//!
//! Run it with `scripts/example acquire_timeout` (or `cargo run --example acquire_timeout`,
//! with `ZK_CONNECT=host:port` to use your own ZooKeeper).

mod support;

use std::time::Duration;

use zklock::hold::Hold;
use zklock::Client;
use zklock::InterProcessMutex;

const LOCK_PATH: &str = "/examples/locks/nightly-report";

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (connect, _server) = support::zookeeper().await?;
    // Two clients stand for two services: each has its own ZooKeeper session.
    let alpha = Client::connect(&connect).await?;
    let beta = Client::connect(&connect).await?;
    let alpha_lock =
        InterProcessMutex::builder(&alpha, LOCK_PATH).options(zklock::LockOptions::new().node_data("alpha")).build()?;
    let beta_lock =
        InterProcessMutex::builder(&beta, LOCK_PATH).options(zklock::LockOptions::new().node_data("beta")).build()?;

    let guard = alpha_lock.acquire().await?;
    println!("alpha holds {} (fencing token {})", guard.node_path(), guard.fencing_token());

    match beta_lock.acquire_timeout(Duration::from_millis(500)).await? {
        Some(unexpected) => {
            println!("beta got the lock while alpha held it: this must never happen");
            unexpected.release().await?;
        }
        None => println!("beta gave up after 500 ms; its queue node is already deleted"),
    }
    println!("queue now: {:?}", beta_lock.participants().await?);

    // alpha finishes in a second; beta waits up to five this time.
    let release = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(1)).await;
        println!("alpha releases");
        guard.release().await
    });
    match beta_lock.acquire_timeout(Duration::from_secs(5)).await? {
        Some(guard) => {
            println!("beta holds {} (fencing token {}, higher than alpha's)", guard.node_path(), guard.fencing_token());
            guard.release().await?;
        }
        None => println!("beta timed out again"),
    }
    release.await??;
    println!("done; queue: {:?}", beta_lock.participants().await?);
    Ok(())
}
