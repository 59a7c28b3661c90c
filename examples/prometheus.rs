//! zklock's metrics in Prometheus's text format: a lock held, one waiting, a timeout, a lost
//! hold, a semaphore's lease and a leader, then the scrape a Prometheus server would read.
//!
//! Run it with `scripts/example prometheus` (or `cargo run --features metrics --example
//! prometheus`, with `ZK_CONNECT=host:port` to use your own ZooKeeper). A service would serve the
//! same text over HTTP with the exporter's `http-listener` feature
//! (`PrometheusBuilder::new().with_http_listener(addr).install()`).

mod support;

use std::time::Duration;

use metrics_exporter_prometheus::PrometheusBuilder;
use zklock::hold::Hold;
use zklock::Client;
use zklock::{InterProcessMutex, InterProcessSemaphoreV2, LeaderLatch};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Installed before the first lock object, which describes every metric (unit, help).
    let prometheus = PrometheusBuilder::new().install_recorder()?;
    let (connect, _server) = support::zookeeper().await?;
    let client = Client::connect(&connect).await?;
    let other = Client::connect(&connect).await?;

    let report = InterProcessMutex::builder(&client, "/examples/metrics/report")
        .options(zklock::LockOptions::new().path_in_metrics(true))
        .build()?;
    let held = report.acquire().await?;
    let rival = InterProcessMutex::builder(&other, "/examples/metrics/report")
        .options(zklock::LockOptions::new().path_in_metrics(true))
        .build()?;
    assert!(rival.acquire_timeout(Duration::from_millis(100)).await?.is_none());
    let waiting = tokio::spawn(async move { rival.acquire().await });

    let exports = InterProcessSemaphoreV2::new(&client, "/examples/metrics/exports", 3)?;
    let lease = exports.acquire().await?;

    let latch = LeaderLatch::new(&client, "/examples/metrics/leader", "host-1")?;
    latch.start().await?;
    let leadership = latch.await_leadership().await?;

    // An operator deletes a lock node: the hold is lost, and counted.
    let doomed = InterProcessMutex::new(&client, "/examples/metrics/doomed")?.acquire().await?;
    other.delete(doomed.node_path(), None).await?;
    doomed.lost().await;

    // Let the waiter queue, then scrape.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let scrape = prometheus.render();
    for line in scrape.lines().filter(|line| !line.contains("_bucket") && !line.contains("quantile")) {
        println!("{line}");
    }

    drop(leadership);
    latch.close().await?;
    lease.release().await?;
    held.release().await?;
    waiting.await??.release().await?;
    let _ = doomed.release().await;
    Ok(())
}
