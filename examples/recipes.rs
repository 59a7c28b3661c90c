//! A tour of the other recipes: a read-write lock, a semaphore, a multi-lock, and a polite
//! revocation request.
//!
//! Run it with `scripts/example recipes` (or `cargo run --example recipes`, with
//! `ZK_CONNECT=host:port` to use your own ZooKeeper).

mod support;

use std::time::Duration;

use zklock::hold::Hold;
use zklock::Client;
use zklock::{revoke, InterProcessMultiLock, InterProcessMutex, InterProcessReadWriteLock, InterProcessSemaphoreV2};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (connect, _server) = support::zookeeper().await?;
    let alpha = Client::connect(&connect).await?;
    let beta = Client::connect(&connect).await?;

    // Readers share; a writer waits for them, and they for it.
    let catalog_a = InterProcessReadWriteLock::new(&alpha, "/examples/rw/catalog")?;
    let catalog_b = InterProcessReadWriteLock::new(&beta, "/examples/rw/catalog")?;
    let reading_a = catalog_a.read_lock().acquire().await?;
    let reading_b = catalog_b.read_lock().acquire().await?;
    println!("two readers at once: {} and {}", reading_a.node_path(), reading_b.node_path());
    // A third participant wants to write. (Not catalog_b: it reads, and a reader asking for the
    // write lock of the same read-write lock would wait on itself; zklock refuses that.)
    let catalog_c = InterProcessReadWriteLock::new(&beta, "/examples/rw/catalog")?;
    let writer = catalog_c.write_lock().acquire_timeout(Duration::from_millis(300)).await?;
    println!("a writer while they read? {}", if writer.is_some() { "yes (wrong!)" } else { "no, it timed out" });
    reading_a.release().await?;
    reading_b.release().await?;

    // At most two exports at once.
    let exports_a = InterProcessSemaphoreV2::new(&alpha, "/examples/semaphores/exports", 2)?;
    let exports_b = InterProcessSemaphoreV2::new(&beta, "/examples/semaphores/exports", 2)?;
    let two = exports_a.acquire_many(2).await?;
    println!(
        "alpha holds both export leases; beta's try: {:?}",
        exports_b.try_acquire().await?.map(|l| l.fencing_token())
    );
    for lease in two {
        lease.release().await?;
    }
    let one = exports_b.acquire().await?;
    println!("beta holds lease {}", one.node_path());
    one.release().await?;

    // Two accounts, all or none.
    let accounts = InterProcessMultiLock::from_paths(&alpha, &["/examples/accounts/1", "/examples/accounts/2"])?;
    let both = accounts.acquire().await?;
    println!("alpha holds both accounts: {:?}", both.guards().iter().map(|g| g.node_path()).collect::<Vec<_>>());
    both.release().await?;

    // Ask a holder to let go; it decides to.
    let report = InterProcessMutex::new(&alpha, "/examples/locks/report")?;
    let holding = report.acquire().await?;
    let beta_report = InterProcessMutex::new(&beta, "/examples/locks/report")?;
    revoke(&beta, holding.node_path()).await?;
    holding.revocation_requested().await;
    println!("alpha was asked to let go of the report lock, and does");
    holding.release().await?;
    let taken = beta_report.acquire().await?;
    println!("beta holds the report lock now: {}", taken.node_path());
    taken.release().await?;
    Ok(())
}
