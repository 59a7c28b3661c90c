//! The queue on the server: Curator's node names, container parents, one watch per waiter,
//! participants in order, fencing tokens, and the request budget; what the mutex sends when an
//! acquire is cancelled or a create's reply is lost, the node watch `lost()` sets, and the tasks
//! a first hold starts. (What every lock keeps is in `tests/it/contract.rs`.)

use crate::common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::{children, connect, connect_to, eventually, server, unique_path, wait_for_children};
use zklock::hold::Hold;
use zklock::InterProcessMutex;
use zklock_testcontainers::Proxy;
use zookeeper_client::Client;

/// Watched path -> how many sessions watch it, for paths under `prefix`.
fn watches_under(prefix: &str) -> BTreeMap<String, usize> {
    common::watchers_under(prefix).into_iter().map(|(path, sessions)| (path, sessions.len())).collect()
}

fn is_curator_mutex_name(name: &str) -> bool {
    // _c_{uuid}-lock-{10 digits}
    let Some(rest) = name.strip_prefix("_c_") else {
        return false;
    };
    let (uuid, sequence) = rest.split_at(36.min(rest.len()));
    uuid::Uuid::parse_str(uuid).is_ok()
        && sequence.strip_prefix("-lock-").is_some_and(|s| s.len() == 10 && s.bytes().all(|b| b.is_ascii_digit()))
}

#[tokio::test]
async fn nodes_are_named_as_curator_names_them_under_container_parents() {
    let path = unique_path("naming") + "/deeper/lock";
    let client = connect().await;
    let guard = InterProcessMutex::new(&client, &path).unwrap().acquire().await.unwrap();
    let name = guard.node_path().strip_prefix(&format!("{path}/")).expect("node under the lock path");
    assert!(is_curator_mutex_name(name), "{name}");
    let (_, stat) = client.get_data(guard.node_path()).await.unwrap();
    assert_eq!(stat.ephemeral_owner, client.session_id().0, "lock node is ephemeral and ours");
    guard.release().await.unwrap();
    // Clients cannot see that a node is a container, but the server deletes empty containers
    // (every second on the test server); a persistent parent would stay.
    let top = path.strip_suffix("/deeper/lock").unwrap().to_owned();
    eventually("the empty container parents are deleted", || async {
        client.check_stat(&top).await.unwrap().is_none()
    })
    .await;
}

#[tokio::test]
async fn each_waiter_watches_only_its_predecessor() {
    const WAITERS: usize = 4;
    let path = unique_path("watches");
    let holder_client = connect().await;
    let holder = InterProcessMutex::new(&holder_client, &path).unwrap().acquire().await.unwrap();
    let mut clients = Vec::new();
    let mut waiters = Vec::new();
    for _ in 0..WAITERS {
        let client = connect().await;
        let mutex = InterProcessMutex::new(&client, &path).unwrap();
        waiters.push(tokio::spawn(async move { mutex.acquire().await.unwrap().release().await.unwrap() }));
        clients.push(client);
    }
    wait_for_children(&holder_client, &path, WAITERS + 1).await;
    let queue = InterProcessMutex::new(&holder_client, &path).unwrap().participants().await.unwrap();
    // Every node but the last is watched by the session behind it, and by nobody else (the
    // next in line reads its own node only once its predecessor is gone); nobody watches the
    // lock path itself (no herd on release).
    let expected: BTreeMap<String, usize> = queue[..WAITERS].iter().map(|node| (node.clone(), 1)).collect();
    eventually("every waiter has set its watches", || async { watches_under(&path).len() == WAITERS }).await;
    eventually("exactly these watches are set", || async { watches_under(&path) == expected }).await;
    holder.release().await.unwrap();
    for waiter in waiters {
        waiter.await.unwrap();
    }
    wait_for_children(&holder_client, &path, 0).await;
    eventually("no watch is left", || async { watches_under(&path).is_empty() }).await;
}

#[tokio::test]
async fn participants_are_listed_in_queue_order_holder_first() {
    let path = unique_path("participants");
    let client = connect().await;
    let mutex = InterProcessMutex::new(&client, &path).unwrap();
    assert!(mutex.participants().await.unwrap().is_empty(), "no lock path yet");
    let holder = mutex.acquire().await.unwrap();
    let other_client = connect().await;
    let other = InterProcessMutex::new(&other_client, &path).unwrap();
    let waiter = tokio::spawn(async move { other.acquire().await.unwrap().release().await.unwrap() });
    wait_for_children(&client, &path, 2).await;
    let participants = mutex.participants().await.unwrap();
    assert_eq!(participants.len(), 2);
    assert_eq!(participants[0], holder.node_path());
    assert!(participants[1].starts_with(&format!("{path}/_c_")));
    holder.release().await.unwrap();
    waiter.await.unwrap();
}

#[tokio::test]
async fn fencing_tokens_strictly_increase_from_holder_to_holder() {
    let path = unique_path("fencing");
    let clients = [connect().await, connect().await];
    let mutexes: Vec<_> = clients.iter().map(|c| InterProcessMutex::new(c, &path).unwrap()).collect();
    let mut last = i64::MIN;
    for round in 0..6 {
        let guard = mutexes[round % 2].acquire().await.unwrap();
        let (_, stat) = clients[0].get_data(guard.node_path()).await.unwrap();
        assert_eq!(guard.fencing_token(), stat.czxid, "the token is the node's czxid");
        assert!(guard.fencing_token() > last, "token went from {last} to {}", guard.fencing_token());
        last = guard.fencing_token();
        guard.release().await.unwrap();
    }
}

#[tokio::test]
async fn node_data_and_acls_come_from_the_builder() {
    let path = unique_path("builder");
    let client = connect().await;
    let mutex = InterProcessMutex::builder(&client, &path)
        .options(zklock::LockOptions::new().node_data(b"host-a".to_vec()))
        .build()
        .unwrap();
    let guard = mutex.acquire().await.unwrap();
    let (data, _) = client.get_data(guard.node_path()).await.unwrap();
    assert_eq!(data, b"host-a");
    guard.release().await.unwrap();
    let empty_acls =
        InterProcessMutex::builder(&client, &path).options(zklock::LockOptions::new().acls(Vec::new())).build();
    assert!(matches!(empty_acls, Err(zklock::Error::InvalidOptions(_))));
}

/// Requests the server has received from the session of `client`, from `cons`.
fn requests_received(client: &Client) -> u64 {
    server().session_requests(client.session_id().0).expect("the session in the server's cons")
}

#[tokio::test]
async fn an_uncontended_cycle_costs_at_most_three_requests_and_reentry_none() {
    let path = unique_path("budget");
    // A long session, so that no ping falls inside the measurement.
    let client = Client::connector()
        .with_session_timeout(Duration::from_secs(60))
        .connect(&server().connect_string())
        .await
        .unwrap();
    // A persistent lock path: the shared server reaps an empty container every second, and a
    // path reaped between the cycles would make the measured acquire create it again.
    let persistent = zookeeper_client::CreateMode::Persistent.with_acls(zookeeper_client::Acls::anyone_all());
    client.mkdir(&path, &persistent).await.unwrap();
    let mutex = InterProcessMutex::new(&client, &path).unwrap();
    // The first cycle arms the uncontended shortcut; measure the second.
    mutex.acquire().await.unwrap().release().await.unwrap();
    let before = requests_received(&client);
    let guard = mutex.acquire().await.unwrap();
    let after_acquire = requests_received(&client);
    let reentered = mutex.acquire().await.unwrap();
    drop(reentered);
    assert_eq!(requests_received(&client), after_acquire, "reentry sends nothing");
    guard.release().await.unwrap();
    let after_release = requests_received(&client);
    // Create + list sent together; or the create alone when the uncontended shortcut applies
    // (exactly measured on an idle server in tests/it/request_budget.rs).
    assert!((1..=2).contains(&(after_acquire - before)), "acquire cost {} requests", after_acquire - before);
    assert_eq!(after_release - after_acquire, 1, "release is one delete");
    assert!(children(&client, &path).await.is_empty());
    let _ = connect_to; // shared helper, used elsewhere
}

/// ZooKeeper's opcodes, as the proxy reports them: a node's create (create, create2), a delete, a
/// getData.
const CREATE: [i32; 2] = [1, 15];
const DELETE: i32 = 2;
const GET_DATA: i32 = 4;

#[tokio::test]
async fn cancelled_acquires_leave_no_node_whenever_they_are_dropped() {
    let path = unique_path("cancel");
    let holder_client = connect().await;
    let holder = InterProcessMutex::new(&holder_client, &path).unwrap().acquire().await.unwrap();
    // Through a proxy that reports what the client sends.
    let proxy = Proxy::start(server().address()).unwrap();
    let client = connect_to(&proxy.connect_string()).await;
    let mutex = InterProcessMutex::new(&client, &path).unwrap();
    // Drop the acquire future after ever longer times: before the create is sent back, between
    // create and list, while watching, while waiting.
    const DROPS: [u64; 12] = [0, 10, 50, 100, 200, 400, 800, 1_600, 3_200, 6_400, 12_800, 50_000];
    for micros in DROPS {
        let outcome = tokio::time::timeout(Duration::from_micros(micros), mutex.acquire()).await;
        assert!(outcome.is_err(), "acquired a held lock");
    }
    // Every acquire created its node and was cut short: each node deleted, and some while
    // watching the holder's.
    let sent = || proxy.requests_sent();
    let count = |sent: &[i32], opcodes: &[i32]| sent.iter().filter(|opcode| opcodes.contains(opcode)).count();
    eventually("every cancelled acquire's node is deleted", || async { count(&sent(), &[DELETE]) == DROPS.len() })
        .await;
    let sent = sent();
    assert_eq!(count(&sent, &CREATE), DROPS.len(), "{sent:?}");
    assert!(count(&sent, &[GET_DATA]) > 0, "no acquire was dropped while watching: {sent:?}");
    wait_for_children(&client, &path, 1).await;
    assert!(!mutex.is_acquired_in_this_process());
    holder.release().await.unwrap();
    let guard = mutex.try_acquire().await.unwrap().expect("no abandoned node blocks the lock");
    guard.release().await.unwrap();
    wait_for_children(&client, &path, 0).await;
}

/// After a create whose reply was lost, the client may reconnect to a server that has not
/// applied the create yet; a listing there would miss our node, a second create would follow,
/// and we would wait behind our own first node until the session ends. So the lock path is
/// synced before our node is looked for (checked on the wire: a sync precedes the listing),
/// and the acquire ends with exactly one node.
#[tokio::test]
async fn after_a_lost_create_reply_the_lock_path_is_synced_before_our_node_is_looked_for() {
    const CREATE2: i32 = 15;
    const SYNC: i32 = 9;
    const GET_CHILDREN: i32 = 8;
    let path = unique_path("lost-create");
    let observer = connect().await;
    let proxy = Proxy::start(server().address()).unwrap();
    let client = connect_to(&proxy.connect_string()).await;
    let mutex = InterProcessMutex::new(&client, &path).unwrap();
    // The lock path is persistent, so that it exists from here on (a container made by an
    // acquire is deleted by the server once empty, every second here): one create below.
    let persistent = zookeeper_client::CreateMode::Persistent.with_acls(zookeeper_client::Acls::anyone_all());
    observer.mkdir(&path, &persistent).await.unwrap();
    mutex.acquire().await.unwrap().release().await.unwrap();
    proxy.drop_replies();
    let acquire = tokio::spawn(async move { mutex.acquire().await.map(|guard| (guard, mutex)) });
    wait_for_children(&observer, &path, 1).await; // the create ran; its reply is lost
    let sent_before_heal = proxy.requests_sent().len();
    proxy.heal(); // the connection closes; the client reconnects and looks for its node
    let (guard, _mutex) = tokio::time::timeout(Duration::from_secs(20), acquire).await.unwrap().unwrap().unwrap();
    assert_eq!(children(&observer, &path).await.len(), 1, "exactly our one node");
    let sent = proxy.requests_sent();
    let after_heal = &sent[sent_before_heal..];
    let sync = after_heal.iter().position(|&opcode| opcode == SYNC);
    let listing = after_heal.iter().position(|&opcode| opcode == GET_CHILDREN);
    assert!(matches!((sync, listing), (Some(sync), Some(listing)) if sync < listing), "{after_heal:?}");
    assert!(!after_heal.contains(&CREATE2), "the create was sent again: {sent:?}");
    guard.release().await.unwrap();
}

#[tokio::test]
async fn lost_is_free_until_asked_and_its_watch_fires_on_our_own_delete() {
    let path = unique_path("watch-cost");
    let client = connect().await;
    let guard = InterProcessMutex::new(&client, &path).unwrap().acquire().await.unwrap();
    let node = guard.node_path().to_owned();
    assert!(node_watchers(&node).is_empty(), "no watch before lost() or the delay");
    let _ = tokio::time::timeout(Duration::from_millis(100), guard.lost()).await;
    eventually("lost() set one watch on our node", || async { node_watchers(&node).len() == 1 }).await;
    guard.release().await.unwrap();
    // The watch fired on our delete: nothing to remove, nothing left on the server.
    eventually("no watch left", || async { node_watchers(&node).is_empty() }).await;
}

fn node_watchers(node: &str) -> Vec<String> {
    server().watchers().remove(node).unwrap_or_default()
}

/// The loss signal's tasks start with a session's first lock object, not in its first hold:
/// a handoff to a fresh session spawns nothing (the handoff benchmark's 200 fresh sessions each
/// paid two spawns and a wake-up there).
#[tokio::test(flavor = "current_thread")]
async fn a_sessions_first_hold_starts_no_task() {
    let path = unique_path("first-hold-tasks");
    let client = connect().await;
    let mutex = InterProcessMutex::new(&client, &path).unwrap();
    let metrics = tokio::runtime::Handle::current().metrics();
    let before = metrics.num_alive_tasks();
    let guard = mutex.acquire().await.unwrap();
    assert_eq!(metrics.num_alive_tasks(), before, "the first hold started a task");
    guard.release().await.unwrap();
}

/// A session's loss watch lives with the session, not with a lock object: a lock object made
/// for one acquire and dropped after it (a mutex per entity) starts no task and stops none.
/// (Each paid two spawns and two wake-ups: about 28,000 client instructions a cycle, and in the
/// handoff benchmark a waiter's drop landed on the next handoff.)
#[tokio::test(flavor = "current_thread")]
async fn a_lock_object_per_acquire_starts_and_stops_no_task() {
    let path = unique_path("object-per-acquire");
    let client = connect().await;
    let metrics = tokio::runtime::Handle::current().metrics();
    let first = InterProcessMutex::new(&client, &path).unwrap();
    first.acquire().await.unwrap().release().await.unwrap();
    let running = metrics.num_alive_tasks();
    drop(first);
    for _ in 0..3 {
        // Every task the drop woke runs before this one runs again.
        tokio::task::yield_now().await;
        assert_eq!(metrics.num_alive_tasks(), running, "dropping the lock object stopped a task");
        let mutex = InterProcessMutex::new(&client, &path).unwrap();
        assert_eq!(metrics.num_alive_tasks(), running, "a new lock object started a task");
        mutex.acquire().await.unwrap().release().await.unwrap();
        drop(mutex);
    }
}

/// ...and ends with it: once the session's last client is dropped (the session closes), the
/// watch's tasks end with the client's own, and nothing of the session is left running.
#[tokio::test(flavor = "current_thread")]
async fn a_sessions_loss_watch_ends_with_the_session() {
    let path = unique_path("watch-ends-with-session");
    let metrics = tokio::runtime::Handle::current().metrics();
    let before = metrics.num_alive_tasks();
    let client = connect().await;
    let mutex = InterProcessMutex::new(&client, &path).unwrap();
    let guard = mutex.acquire().await.unwrap();
    assert!(metrics.num_alive_tasks() > before);
    guard.release().await.unwrap();
    drop(mutex);
    drop(client);
    eventually("the session's tasks ended", || async { metrics.num_alive_tasks() == before }).await;
}

/// kazoo's recipes make their lock path persistent once (`ensure_path`) and never again, so a
/// kazoo-schema lock makes it persistent too: as a container it would be reaped once empty, and
/// a long-lived kazoo `Lock`'s next acquire there would fail with `NoNodeError`. Side by side
/// with two Curator-schema paths: once the second, emptied after the kazoo path, is reaped, the
/// server's reaper has passed since the kazoo path was empty.
#[tokio::test]
async fn a_kazoo_schema_lock_path_stays_when_empty_as_kazoo_needs_it() {
    use zklock::NodeSchema;
    let base = unique_path("kazoo-persistent");
    let client = connect().await;
    let take = |path: String, schema| {
        let client = client.clone();
        async move {
            let mutex = InterProcessMutex::builder(&client, &path).node_schema(schema).build().unwrap();
            mutex.acquire().await.unwrap().release().await.unwrap();
            path
        }
    };
    let kazoo = take(format!("{base}/kazoo"), NodeSchema::Kazoo).await;
    for name in ["curator-first", "curator-second"] {
        let curator = take(format!("{base}/{name}"), NodeSchema::Curator).await;
        eventually("the empty Curator-schema container is reaped", || async {
            client.check_stat(&curator).await.unwrap().is_none()
        })
        .await;
    }
    assert!(client.check_stat(&kazoo).await.unwrap().is_some(), "the kazoo-schema lock path was reaped");
    client.delete(&kazoo, None).await.unwrap();
}
