//! The request budget (DESIGN.md, "Round trips"), counted exactly by the server: the uncontended
//! shortcut (an acquire right after our own release skips the list when the new node's sequence
//! number proves that nobody queued in between, on a quiet server or a busy one), the handoff
//! to the next in line without a list, and Curator's five requests for an acquire that queues
//! behind others. These tests own their server, so that no other test's traffic blurs the
//! request counts.

use crate::common;

use std::sync::OnceLock;
use std::time::Duration;

use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use zklock::hold::Hold;
use zklock::InterProcessMutex;
use zklock_testcontainers::{ServerOptions, ZooKeeperServer};
use zookeeper_client::{Acls, Client, CreateMode};

/// The server whose request counts these tests read. It never reaps empty containers while
/// they run: a lock path reaped between two cycles is re-created by the next acquire (its create
/// fails, the parents are made, the create and a listing follow), so a reaper tick inside a
/// measured cycle turned its one request into four (the harness's default reaps every second).
/// The reaped path's own test runs on the shared server, which does reap.
fn server() -> &'static ZooKeeperServer {
    static SERVER: OnceLock<ZooKeeperServer> = OnceLock::new();
    SERVER.get_or_init(|| {
        let mut options = ServerOptions::default();
        options.container_check_interval = Duration::from_secs(3600);
        ZooKeeperServer::start_blocking(&options).expect("start zookeeper")
    })
}

async fn connect() -> Client {
    // A long session: no ping falls inside a measurement.
    common::connect_with(&server().connect_string(), Duration::from_secs(60)).await
}

/// Requests the server has received from `client`'s session (`cons`).
fn requests_received(client: &Client) -> u64 {
    server().session_requests(client.session_id().0).expect("the session in the server's cons")
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

/// Unrelated writes by another session between our cycles (a production server is never
/// quiet) leave the shortcut intact: the sequence number, not the zxid, proves the queue empty.
/// (With the zxid proof, every cycle on a busy server sent its create alone, missed, and listed:
/// three round trips.)
#[tokio::test]
async fn on_a_busy_server_a_cycle_still_costs_what_the_floor_costs() {
    let _quiet = QUIET.lock().await;
    let (client, busy) = (connect().await, connect().await);
    let mutex = InterProcessMutex::new(&client, "/shortcut/busy").unwrap();
    let _ = busy.create("/shortcut-busy-writes", b"", &CreateMode::Persistent.with_acls(Acls::anyone_all())).await;
    // A lock path in use: the proof tolerates as many unrelated transactions between two cycles
    // as the path has had children (fewer on a fresh path, where a recreated path could fake
    // the sequence).
    for _ in 0..30 {
        mutex.acquire().await.unwrap().release().await.unwrap();
    }
    for round in 0..5 {
        for _ in 0..=round {
            busy.set_data("/shortcut-busy-writes", b"unrelated", None).await.unwrap();
        }
        let before = requests_received(&client);
        let guard = mutex.acquire().await.unwrap();
        let acquired = requests_received(&client);
        guard.release().await.unwrap();
        assert_eq!(acquired - before, 1, "the create alone, with {} unrelated writes between", round + 1);
        assert_eq!(requests_received(&client) - acquired, 1, "the delete");
    }
}

/// A racer that creates a node in our lock path between our cycles makes the proof fail: we
/// list (and hold only once it is gone), and the next acquire sends its listing with the create
/// so that a second miss costs no second round trip; once a listed acquire finds the proof would
/// have held, the create goes alone again.
#[tokio::test]
async fn after_a_miss_the_listing_goes_with_the_create_until_the_proof_holds_again() {
    let _quiet = QUIET.lock().await;
    let (client, racer) = (connect().await, connect().await);
    let path = "/shortcut/raced";
    let mutex = InterProcessMutex::new(&client, path).unwrap();
    let theirs = InterProcessMutex::new(&racer, path).unwrap();
    mutex.acquire().await.unwrap().release().await.unwrap(); // armed
    theirs.acquire().await.unwrap().release().await.unwrap(); // a child created between

    let before = requests_received(&client);
    mutex.acquire().await.unwrap().release().await.unwrap();
    let missed = requests_received(&client) - before;
    assert_eq!(missed, 3, "the create alone, the list after the miss, the delete");

    let before = requests_received(&client);
    mutex.acquire().await.unwrap().release().await.unwrap();
    assert_eq!(requests_received(&client) - before, 3, "create and list together, then the delete");

    let before = requests_received(&client);
    mutex.acquire().await.unwrap().release().await.unwrap();
    assert_eq!(requests_received(&client) - before, 2, "the proof held last time: the create alone again");
}

/// The lock path reaped once empty and created again by another participant, whose node gets
/// sequence 0: our next node then gets the sequence right after our previous one, yet the queue
/// is not empty. The czxid gap (a reap and a create between) keeps the shortcut from holding.
#[tokio::test]
async fn a_reaped_and_recreated_lock_path_does_not_fool_the_shortcut() {
    // The shared server, which reaps empty containers every second; no count is read here.
    let (client, other) = (common::connect().await, common::connect().await);
    let path = "/shortcut-reaped/lock"; // a container under a container: both reaped when empty
    let mine = InterProcessMutex::new(&client, path).unwrap();
    let theirs = InterProcessMutex::new(&other, path).unwrap();
    let first = mine.acquire().await.unwrap();
    assert!(first.node_path().ends_with("0000000000"), "{}", first.node_path());
    first.release().await.unwrap(); // armed: sequence 0
    for _ in 0..100 {
        if client.check_stat(path).await.unwrap().is_none() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(client.check_stat(path).await.unwrap().is_none(), "the lock path was never reaped");
    let held = theirs.acquire().await.unwrap();
    assert!(held.node_path().ends_with("0000000000"), "{}", held.node_path());
    let attempt = mine.try_acquire().await.unwrap();
    assert!(attempt.is_none(), "held beside {} as {:?}", held.node_path(), attempt.map(|g| g.node_path().to_owned()));
    held.release().await.unwrap();
}

/// A participant in a spawned task: it acquires, says so, and releases when told.
struct Queued {
    held: oneshot::Receiver<()>,
    release: oneshot::Sender<()>,
    task: JoinHandle<()>,
}

fn queue_up(mutex: &InterProcessMutex) -> Queued {
    let mutex = mutex.clone();
    let (held_tx, held) = oneshot::channel();
    let (release, release_rx) = oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        let guard = mutex.acquire().await.unwrap();
        let _ = held_tx.send(());
        let _ = release_rx.await;
        guard.release().await.unwrap();
    });
    Queued { held, release, task }
}

impl Queued {
    async fn hold_then_release(self) {
        self.held.await.expect("held");
        self.release.send(()).unwrap();
        self.task.await.unwrap();
    }
}

/// Waits until `path` has `count` children (every participant queued).
async fn wait_for_queue(client: &Client, path: &str, count: usize) {
    for _ in 0..500 {
        if client.list_children(path).await.unwrap().len() == count {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("{path} never had {count} children");
}

/// Requests from `client` once at least `expected` more than `before` have arrived (a waiter's
/// watch goes out after its create is answered, so a queue that shows its node may not show
/// its watch yet), or after five seconds.
async fn requests_after(client: &Client, before: u64, expected: u64) -> u64 {
    for _ in 0..500 {
        let now = requests_received(client);
        if now - before >= expected {
            return now;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    requests_received(client)
}

/// Four sessions on one lock; the test drives who queues and releases when.
async fn four(path: &str) -> (Vec<Client>, Vec<InterProcessMutex>) {
    let mut clients = Vec::new();
    let mut mutexes = Vec::new();
    for _ in 0..4 {
        let client = connect().await;
        mutexes.push(InterProcessMutex::new(&client, path).unwrap());
        clients.push(client);
    }
    (clients, mutexes)
}

#[tokio::test]
async fn the_next_in_line_takes_the_lock_without_listing_again() {
    let _quiet = QUIET.lock().await;
    let path = "/budget/next-in-line";
    let (clients, mutexes) = four(path).await;
    let holder = mutexes[0].acquire().await.unwrap();
    let before = requests_received(&clients[1]);
    let next = queue_up(&mutexes[1]);
    wait_for_queue(&clients[0], path, 2).await;
    let queued = requests_after(&clients[1], before, 3).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    // Create and list (one round trip), the watch on the holder (one round trip).
    assert_eq!(requests_received(&clients[1]) - before, 3, "create, list, watch the holder");
    holder.release().await.unwrap();
    next.held.await.unwrap();
    // The holder's deletion, then our node found after it, prove we are first and still
    // queued: sequence numbers only grow, so nothing can have come ahead of us. One request,
    // where a listing would be one too (of the whole queue).
    let queued = requests_after(&clients[1], queued, 1).await;
    assert_eq!(queued - before, 4, "create, list, watch the holder, then read ours");
    next.release.send(()).unwrap();
    next.task.await.unwrap();
    // The read set no watch on our node: the release is the delete alone (no RemoveWatches, and
    // no event of our own delete to carry).
    let released = requests_after(&clients[1], queued, 1).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(requests_received(&clients[1]) - queued, 1, "the delete alone");
    assert_eq!(released - queued, 1);
}

/// A hold that began on a handoff watches its node as any hold does: one getData once `lost()`
/// is asked (its handoff's read set no watch, which would fire on every release).
#[tokio::test]
async fn a_hold_taken_on_a_handoff_is_told_its_node_was_deleted_with_one_request() {
    let _quiet = QUIET.lock().await;
    let path = "/budget/handoff-loss";
    let (clients, mutexes) = four(path).await;
    let holder = mutexes[0].acquire().await.unwrap();
    let next = tokio::spawn({
        let mutex = mutexes[1].clone();
        async move { mutex.acquire().await.unwrap() }
    });
    wait_for_queue(&clients[0], path, 2).await;
    holder.release().await.unwrap();
    let held = next.await.unwrap();
    let before = requests_received(&clients[1]);
    clients[2].delete(held.node_path(), None).await.unwrap();
    let told = tokio::time::timeout(Duration::from_secs(10), held.lost()).await.expect("never told of the deletion");
    assert_eq!(told, zklock::LossReason::NodeDeleted);
    assert_eq!(requests_received(&clients[1]), before + 1, "one getData for its node watch");
    assert!(matches!(held.release().await, Err(zklock::Error::LockLost(zklock::LossReason::NodeDeleted))));
}

/// Builds a queue that a participant that held joins again: `mutexes[1]` held with two nodes
/// queued behind it (2 and 3), then released, so that 2 holds and 3 waits. Returns 2 and 3.
async fn held_with_two_behind(clients: &[Client], mutexes: &[InterProcessMutex], path: &str) -> (Queued, Queued) {
    let first = mutexes[0].acquire().await.unwrap();
    // Another task of the same participant: next in line, it will hold without listing.
    let next_in_line = queue_up(&mutexes[0]);
    wait_for_queue(&clients[0], path, 2).await;
    // Two nodes ahead when it queued, ours lists again once the one it watches goes, and that
    // listing shows 2 and 3 behind it.
    let ours = queue_up(&mutexes[1]);
    wait_for_queue(&clients[0], path, 3).await;
    let second = queue_up(&mutexes[2]);
    wait_for_queue(&clients[0], path, 4).await;
    let third = queue_up(&mutexes[3]);
    wait_for_queue(&clients[0], path, 5).await;
    first.release().await.unwrap();
    next_in_line.hold_then_release().await;
    ours.hold_then_release().await;
    (second, third)
}

/// A participant that held and joins the queue again lists with its create, as every acquire
/// does: what its hold saw behind it is no guide to the queue it joins (its participants queue
/// again as they release), and a guess that missed cost a sixth request and a second watcher
/// on one node (DESIGN.md, "Round trips").
#[tokio::test]
async fn queued_again_behind_a_queue_a_participant_lists_with_its_create() {
    let _quiet = QUIET.lock().await;
    let path = "/budget/behind";
    let (clients, mutexes) = four(path).await;
    let (second, third) = held_with_two_behind(&clients, &mutexes, path).await;
    second.held.await.unwrap();
    let before = requests_received(&clients[1]);
    let again = queue_up(&mutexes[1]);
    wait_for_queue(&clients[0], path, 3).await;
    let queued = requests_after(&clients[1], before, 3).await;
    assert_eq!(queued - before, 3, "create, list, and the watch on its predecessor");
    second.release.send(()).unwrap();
    second.task.await.unwrap();
    third.hold_then_release().await;
    again.held.await.unwrap();
    assert_eq!(requests_received(&clients[1]) - queued, 1, "one list once its predecessor went (two were ahead)");
    again.release.send(()).unwrap();
    again.task.await.unwrap();
    assert_eq!(requests_received(&clients[1]) - before, 5, "create, list, watch, list, delete: Curator's five");
}

#[tokio::test]
async fn a_watched_node_that_gives_up_is_not_taken_for_a_handoff() {
    let _quiet = QUIET.lock().await;
    let path = "/budget/behind-gives-up";
    let (clients, mutexes) = four(path).await;
    let (second, third) = held_with_two_behind(&clients, &mutexes, path).await;
    second.held.await.unwrap();
    // Ours queues again behind 2 (holding) and 3 (waiting), watching 3's node.
    let mut again = queue_up(&mutexes[1]);
    wait_for_queue(&clients[0], path, 3).await;
    // 3 gives up: its node goes while 2 still holds. Its deletion is no handoff.
    third.task.abort();
    wait_for_queue(&clients[0], path, 2).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(again.held.try_recv().is_err(), "took the lock while another participant held it");
    second.release.send(()).unwrap();
    second.task.await.unwrap();
    again.hold_then_release().await;
    assert!(clients[0].list_children(path).await.unwrap().is_empty(), "nothing left behind");
}
