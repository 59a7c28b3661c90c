//! A locked-down lock and writes fenced inside ZooKeeper.
//!
//! Service A authenticates with digest auth and takes a lock whose nodes only A may change;
//! service B, another identity, can neither delete A's node nor queue. A writes its state into
//! ZooKeeper through `guard.multi_writer()`: the write commits only while A's lock node exists.
//! Then an operator deletes A's node (as a session expiry would): A's next fenced write fails
//! with `LockLost`, and the state stays as it was.
//!
//! Run it with `scripts/example fenced_write` (or `cargo run --example fenced_write`, with
//! `ZK_CONNECT=host:port` to use your own ZooKeeper).

mod support;

use std::time::Duration;

use zklock::hold::Hold;
use zklock::zookeeper_client::{Acls, Client, CreateMode};
use zklock::{AclProvider, InterProcessMutex, LockOptions};

const LOCK_PATH: &str = "/examples/locks/fenced-leader";
const STATE_PATH: &str = "/examples/state/leader";

async fn connect(connect: &str, auth: Option<&str>) -> Result<Client, zklock::zookeeper_client::Error> {
    let mut connector = Client::connector().with_session_timeout(Duration::from_secs(10));
    if let Some(user) = auth {
        connector = connector.with_auth("digest", user.as_bytes());
    }
    connector.connect(connect).await
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (zk, _server) = support::zookeeper().await?;
    let a = connect(&zk, Some("service-a:secret-a")).await?;
    let b = connect(&zk, Some("service-b:secret-b")).await?;
    let operator = connect(&zk, Some("service-a:secret-a")).await?;
    let state_mode = CreateMode::Persistent.with_acls(Acls::anyone_all());
    let _ = a.mkdir("/examples/state", &state_mode).await;
    let _ = a.create(STATE_PATH, b"nobody", &state_mode).await;

    let lock = InterProcessMutex::builder(&a, LOCK_PATH)
        .options(LockOptions::new().acl_provider(AclProvider::creator_all_anyone_read()).node_data("service-a"))
        .build()?;
    let guard = lock.acquire().await?;
    println!("A holds {} (fencing token {})", guard.node_path(), guard.fencing_token());

    println!("B tries to delete A's node: {:?}", b.delete(guard.node_path(), None).await);
    let b_lock = InterProcessMutex::new(&b, LOCK_PATH)?;
    println!(
        "B tries to take the lock: {}",
        b_lock.try_acquire().await.err().map_or("taken?!".into(), |e| e.to_string())
    );
    println!("B may still look: participants = {:?}", b_lock.participants().await?);

    let mut write = guard.multi_writer();
    write.add_set_data(STATE_PATH, b"service-a", None)?;
    guard.commit(write).await?;
    println!("A's fenced write committed: state = {:?}", String::from_utf8_lossy(&a.get_data(STATE_PATH).await?.0));

    println!("an operator deletes A's lock node (as a session expiry would) ...");
    operator.delete(guard.node_path(), None).await?;
    let mut write = guard.multi_writer();
    write.add_set_data(STATE_PATH, b"service-a, stale", None)?;
    match guard.commit(write).await {
        Ok(_) => println!("A's stale write committed: this must never happen"),
        Err(err) => println!("A's fenced write after the loss fails: {err}"),
    }
    println!("state is still {:?}", String::from_utf8_lossy(&b.get_data(STATE_PATH).await?.0));
    println!("A's release reports: {:?}", guard.release().await.err().map(|e| e.to_string()));
    Ok(())
}
