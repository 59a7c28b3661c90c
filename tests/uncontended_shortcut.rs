//! The uncontended shortcut: on a quiet lock, an acquire right after our own release skips the
//! list when the new node's czxid proves that nothing else happened in between. These tests own
//! their server, so that no other test's traffic blurs the request counts.

use std::sync::OnceLock;
use std::time::Duration;

use zklock::InterProcessMutex;
use zklock_testcontainers::ZooKeeperServer;
use zookeeper_client::Client;

fn server() -> &'static ZooKeeperServer {
    static SERVER: OnceLock<ZooKeeperServer> = OnceLock::new();
    SERVER.get_or_init(|| ZooKeeperServer::start().expect("start zookeeper"))
}

async fn connect() -> Client {
    // A long session: no ping falls inside a measurement.
    Client::connector().with_session_timeout(Duration::from_secs(60)).connect(&server().connect_string()).await.unwrap()
}

/// Requests the server has received from `client`'s session (`cons`).
fn requests_received(client: &Client) -> u64 {
    let session = format!("sid={:#x}", client.session_id().0);
    let answer = server().four_letter_word("cons").unwrap();
    let line = answer.lines().find(|line| line.contains(&session)).unwrap();
    line.split("recved=").nth(1).unwrap().split(',').next().unwrap().parse().unwrap()
}

/// Serialises the tests of this file: the shortcut's counts need a quiet server.
static QUIET: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

#[tokio::test]
async fn on_a_quiet_lock_a_cycle_costs_what_the_floor_costs() {
    let _quiet = QUIET.lock().await;
    let client = connect().await;
    let mutex = InterProcessMutex::new(&client, "/shortcut/quiet").unwrap();
    mutex.acquire().await.unwrap().release().await.unwrap(); // parents, and the first record
    for _ in 0..5 {
        let before = requests_received(&client);
        let guard = mutex.acquire().await.unwrap();
        let acquired = requests_received(&client);
        guard.release().await.unwrap();
        assert_eq!(acquired - before, 1, "the create alone");
        assert_eq!(requests_received(&client) - acquired, 1, "the delete");
    }
}

#[tokio::test]
async fn the_shortcut_never_holds_beside_another_participant() {
    let _quiet = QUIET.lock().await;
    let (a, b) = (connect().await, connect().await);
    let path = "/shortcut/contended";
    let mine = InterProcessMutex::new(&a, path).unwrap();
    let theirs = InterProcessMutex::new(&b, path).unwrap();

    mine.acquire().await.unwrap().release().await.unwrap(); // armed
    let held = theirs.acquire().await.unwrap();
    assert!(mine.try_acquire().await.unwrap().is_none(), "the shortcut must see the other holder");

    // A waiter that timed out holds nothing, and must not arm the shortcut: its own create and
    // delete are the only transactions before its next create, as after a real hold.
    assert!(mine.acquire_timeout(Duration::from_millis(200)).await.unwrap().is_none());
    assert!(mine.try_acquire().await.unwrap().is_none(), "armed by a timeout");
    held.release().await.unwrap();

    // Armed again; someone else takes and gives back the lock in between: the shortcut falls back
    // to listing, and the lock is ours.
    mine.acquire().await.unwrap().release().await.unwrap();
    theirs.acquire().await.unwrap().release().await.unwrap();
    let guard = mine.try_acquire().await.unwrap().expect("free after the other's release");
    guard.release().await.unwrap();
}
