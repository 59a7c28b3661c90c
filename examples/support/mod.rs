//! Where the examples find ZooKeeper: `ZK_CONNECT` when set, else a throwaway server started
//! for the example (and killed when it ends).

use zklock_testcontainers::ZooKeeperServer;

/// The connect string to use, and the throwaway server to keep alive while it is used.
pub async fn zookeeper() -> Result<(String, Option<ZooKeeperServer>), Box<dyn std::error::Error>> {
    if let Ok(connect) = std::env::var("ZK_CONNECT") {
        if !connect.is_empty() {
            println!("using ZooKeeper at {connect} (ZK_CONNECT)");
            return Ok((connect, None));
        }
    }
    println!("ZK_CONNECT is not set: starting a throwaway ZooKeeper ...");
    let server = ZooKeeperServer::start().await?;
    println!("throwaway ZooKeeper listening on {}", server.connect_string());
    Ok((server.connect_string(), Some(server)))
}
