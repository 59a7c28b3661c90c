//! Holders that crash hand over to waiters; holders that lose the lock are told, and their
//! release says so.

use std::time::Duration;

use zklock::{LossPolicy, LossReason};
use zklock_testcontainers::expire_session;
use zookeeper_client::{Client, SessionState};

use crate::common::{connect, connect_through, eventually, unique_path};
use crate::contract::lock::{Held, LockUnderTest, WithLossPolicy};
use crate::contract::support::{
    nodes, shared_dir, spawn_child, start_children, start_proxy, wait_for_nodes, wait_until_queued, ChildOrders,
    PROMPTLY,
};

/// The session of a holder process that gets killed: short, so that the server ends it soon.
const KILLED_SESSION: Duration = Duration::from_secs(2);

/// A waiter queued on `path` behind a holder of `held` nodes; returns its task.
async fn queue_waiter<L: LockUnderTest>(path: &str, held: usize) -> (Client, tokio::task::JoinHandle<L::Held>) {
    let client = connect().await;
    let lock = L::make(&client, path);
    let waiter = tokio::spawn(async move { lock.acquire().await.unwrap() });
    wait_until_queued::<L>(&client, path, held).await;
    assert!(!waiter.is_finished(), "the waiter acquired a held lock");
    (client, waiter)
}

/// The waiter gets the lock promptly, with a token above the lost holder's.
async fn expect_handover<H: Held>(waiter: tokio::task::JoinHandle<H>, holder_token: i64) {
    let held = tokio::time::timeout(PROMPTLY, waiter).await.expect("no handover").unwrap();
    assert!(held.is_held());
    assert!(held.fencing_token() > holder_token, "the new holder's token is not above the old one's");
    held.release().await.unwrap();
}

/// A holder process killed outright: its session ends on the server's clock, and the waiter in
/// this process gets the lock.
pub async fn a_killed_holder_process_hands_over<L: LockUnderTest>(test_name: &str) {
    if let Some(orders) = ChildOrders::of_this_process() {
        return hold_until_killed::<L>(orders).await;
    }
    let path = unique_path("contract-killed");
    let dir = shared_dir("contract-killed");
    let mut holder = spawn_child(test_name, "hold", &path, &dir, 0);
    start_children(&dir, 1).await;
    let observer = connect().await;
    let holder_nodes = std::fs::read_to_string(dir.join("held")).unwrap();
    let holder_token: i64 = holder_nodes.lines().next().unwrap().parse().unwrap();
    let held = holder_nodes.lines().count() - 1;
    wait_for_nodes::<L>(&observer, &path, &holder_nodes.lines().skip(1).map(str::to_owned).collect::<Vec<_>>()).await;
    let (_client, waiter) = queue_waiter::<L>(&path, held).await;
    holder.kill().unwrap();
    holder.wait().unwrap();
    expect_handover(waiter, holder_token).await;
    let _ = std::fs::remove_dir_all(&dir);
}

async fn hold_until_killed<L: LockUnderTest>(orders: ChildOrders) {
    assert_eq!(orders.role, "hold");
    let client =
        Client::connector().with_session_timeout(KILLED_SESSION).connect(&orders.connect_string).await.unwrap();
    let held = L::rival(&client, &orders.path).acquire().await.unwrap();
    let mut report = format!("{}\n", held.fencing_token());
    for node in held.node_paths() {
        report += &format!("{node}\n");
    }
    // Written whole before the ready file, which is what the parent waits for.
    std::fs::write(orders.dir.join("held"), report).unwrap();
    std::fs::write(orders.ready_file(), b"").unwrap();
    orders.wait_for_go().await;
    tokio::time::sleep(Duration::from_secs(60)).await;
    panic!("the holder was not killed");
}

/// A holder whose session expires (the harness's deterministic expiry) hands over to a waiter.
pub async fn an_expired_holder_hands_over<L: LockUnderTest>() {
    let path = unique_path("contract-expired");
    let proxy = start_proxy();
    let holder_client = connect_through(&proxy, Duration::from_secs(20)).await;
    let holder = L::rival(&holder_client, &path).acquire().await.unwrap();
    let (_client, waiter) = queue_waiter::<L>(&path, holder.node_paths().len()).await;
    expire_session(&holder_client, &proxy).await.unwrap();
    expect_handover(waiter, holder.fencing_token()).await;
    drop(holder);
}

/// The release of a lost hold reports the loss, and the reason is the one `lost()` gave.
async fn release_reports<H: Held>(held: H, reason: LossReason) {
    assert!(!held.is_held());
    let released = tokio::time::timeout(PROMPTLY, held.release()).await.expect("release hung");
    assert!(H::release_reports_loss(&released, reason), "{released:?} after {reason:?}");
}

/// `lost()` resolves with `SessionExpired` when the session expires.
pub async fn lost_on_session_expiry<L: LockUnderTest>() {
    let path = unique_path("contract-lost-expiry");
    let proxy = start_proxy();
    let client = connect_through(&proxy, Duration::from_secs(20)).await;
    let held = L::make(&client, &path).acquire().await.unwrap();
    assert!(held.is_held());
    expire_session(&client, &proxy).await.unwrap();
    let reason = tokio::time::timeout(PROMPTLY, held.lost()).await.expect("loss not signalled");
    assert_eq!(reason, LossReason::SessionExpired);
    release_reports(held, reason).await;
}

/// `lost()` resolves with `NodeDeleted` when someone else deletes the node.
pub async fn lost_on_node_deletion<L: LockUnderTest>() {
    let path = unique_path("contract-lost-deleted");
    let client = connect().await;
    let held = L::make(&client, &path).acquire().await.unwrap();
    // Listening first (this sets the node watch); nothing is lost yet.
    assert!(tokio::time::timeout(Duration::from_millis(100), held.lost()).await.is_err(), "lost while held");
    let operator = connect().await;
    operator.delete(&held.node_paths()[0], None).await.unwrap();
    let reason = tokio::time::timeout(PROMPTLY, held.lost()).await.expect("loss not signalled");
    assert_eq!(reason, LossReason::NodeDeleted);
    release_reports(held, reason).await;
    wait_for_nodes::<L>(&client, &path, &[]).await;
}

/// An operator deletes the hold's nodes before anything of ours could notice (no `lost()`
/// asked, within the second before the node watch is set): the release finds them gone and
/// reports the loss as `lost()` does, not as an error of its own. (Should the machine stall past
/// that second, the watch tells first, and the release reports the same.)
pub async fn a_release_that_finds_its_node_deleted_reports_the_loss<L: LockUnderTest>() {
    let path = unique_path("contract-release-deleted");
    let client = connect().await;
    let operator = connect().await;
    let held = L::make(&client, &path).acquire().await.unwrap();
    for node in held.node_paths() {
        operator.delete(&node, None).await.unwrap();
    }
    let released = tokio::time::timeout(PROMPTLY, held.release()).await.expect("release hung");
    assert!(L::Held::release_reports_loss(&released, LossReason::NodeDeleted), "{released:?}");
    wait_for_nodes::<L>(&client, &path, &[]).await;
}

/// A hold kept past the delay of its node watch notices on its own (nobody awaits `lost()`)
/// that someone else deleted its node.
pub async fn a_deleted_node_is_noticed_without_asking_once_held_a_while<L: LockUnderTest>() {
    let path = unique_path("contract-deleted-lazily");
    let client = connect().await;
    let held = L::make(&client, &path).acquire().await.unwrap();
    tokio::time::sleep(Duration::from_millis(1_500)).await; // past the delay of the node watch
    connect().await.delete(&held.node_paths()[0], None).await.unwrap();
    eventually("the hold sees its node deleted", || async { !held.is_held() }).await;
}

/// Under the default policy (`SessionTimeout`), a client cut off for a third of its session
/// loses the lock while the server still has its nodes; its release, once the server has
/// expired the session and the partition healed, still reports that loss.
pub async fn lost_on_a_long_disconnection<L: LockUnderTest>() {
    // Lost after 1 s, expired by the server after 3 s: the node is read within milliseconds of
    // the loss, so two seconds of margin tell "before the expiry" even on a loaded machine.
    let session_timeout = Duration::from_secs(3);
    let path = unique_path("contract-lost-disconnected");
    let proxy = start_proxy();
    let client = connect_through(&proxy, session_timeout).await;
    // Kept alive while held, as a user would (see semaphore_rules for a dropped one).
    let lock = L::make(&client, &path);
    let held = lock.acquire().await.unwrap();
    let observer = connect().await;
    proxy.blackhole();
    let reason = tokio::time::timeout(session_timeout * 2, held.lost()).await.expect("loss not signalled");
    assert!(matches!(reason, LossReason::Disconnected { .. }), "{reason:?}");
    // Given up before the server could expire the session: nobody else can hold yet.
    assert!(observer.check_stat(&held.node_paths()[0]).await.unwrap().is_some(), "signalled only after expiry");
    wait_for_nodes::<L>(&observer, &path, &[]).await; // the server expires the session
    proxy.heal();
    release_reports(held, reason).await;
    drop(lock);
}

/// Under `LossPolicy::AnyDisconnection`, the first disconnection loses the lock.
pub async fn lost_at_once_under_the_strict_policy<L: WithLossPolicy>() {
    let path = unique_path("contract-lost-strict");
    let proxy = start_proxy();
    let client = connect_through(&proxy, Duration::from_secs(20)).await;
    let held = L::with_loss_policy(&client, &path, LossPolicy::AnyDisconnection).acquire().await.unwrap();
    proxy.cut();
    let reason = tokio::time::timeout(PROMPTLY, held.lost()).await.expect("loss not signalled");
    assert_eq!(reason, LossReason::Disconnected { after: Duration::ZERO });
    proxy.heal();
    wait_for_state(&client, SessionState::SyncConnected).await;
    // A lost hold stays lost once the session is back.
    release_reports(held, reason).await;
    // The session survived: the background delete frees the lock.
    wait_for_nodes::<L>(&connect().await, &path, &[]).await;
}

async fn wait_for_state(client: &Client, wanted: SessionState) {
    eventually(&format!("the client is {wanted:?}"), || async { client.state() == wanted }).await;
}

/// A disconnection shorter than the policy allows keeps the hold.
pub async fn a_short_disconnection_keeps_the_hold<L: LockUnderTest>() {
    let path = unique_path("contract-blip-holder");
    let proxy = start_proxy();
    let client = connect_through(&proxy, Duration::from_secs(9)).await;
    let held = L::make(&client, &path).acquire().await.unwrap();
    proxy.cut();
    wait_for_state(&client, SessionState::Disconnected).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    proxy.heal();
    wait_for_state(&client, SessionState::SyncConnected).await;
    assert!(held.is_held(), "a short disconnection lost the hold");
    held.release().await.unwrap();
    wait_for_nodes::<L>(&connect().await, &path, &[]).await;
}

/// A disconnection shorter than the policy allows does not disturb a waiter: its watch is set
/// again on reconnect, and the holder's release reaches it.
pub async fn a_short_disconnection_does_not_disturb_a_waiter<L: LockUnderTest>() {
    let path = unique_path("contract-blip-waiter");
    let holder_client = connect().await;
    let holder = L::rival(&holder_client, &path).acquire().await.unwrap();
    let proxy = start_proxy();
    let client = connect_through(&proxy, Duration::from_secs(20)).await;
    let lock = L::make(&client, &path);
    let waiter = tokio::spawn(async move { lock.acquire().await.unwrap().release().await });
    wait_until_queued::<L>(&holder_client, &path, holder.node_paths().len()).await;

    proxy.cut();
    tokio::time::sleep(Duration::from_millis(300)).await;
    proxy.heal();
    holder.release().await.unwrap();
    let outcome = tokio::time::timeout(PROMPTLY, waiter).await.expect("the waiter missed the release").unwrap();
    assert!(outcome.is_ok(), "{outcome:?}");
    wait_for_nodes::<L>(&holder_client, &path, &[]).await;
}

/// A timed acquire cut off from the server returns `None` in time (its deadline plus a bounded
/// cleanup, far below the session), and what it created goes once the client is back.
pub async fn a_timed_acquire_returns_in_time_while_partitioned<L: LockUnderTest>() {
    let path = unique_path("contract-partitioned-acquire");
    let proxy = start_proxy();
    let client = connect_through(&proxy, Duration::from_secs(20)).await;
    let lock = L::make(&client, &path);
    lock.acquire().await.unwrap().release().await.unwrap(); // the parents exist from here on
    proxy.blackhole();
    let started = std::time::Instant::now();
    let outcome = lock.acquire_timeout(Duration::from_millis(300)).await.unwrap();
    assert!(outcome.is_none());
    // Generous for slow CI, and far below the 20 s session.
    assert!(started.elapsed() < Duration::from_secs(5), "returned after {:?}", started.elapsed());
    proxy.heal();
    wait_for_nodes::<L>(&connect().await, &path, &[]).await;
}

/// A try (`try_acquire`, `acquire_timeout(ZERO)`) waits for no holder, and so for no outage:
/// cut off from ZooKeeper (the client knows at once, as when a server goes), it answers "not
/// acquired" at once instead of holding its requests until a reconnection, and leaves no node.
/// Before, it waited out the outage (the 20 s session here), then took the lock. A silent
/// partition (`blackhole`) is noticed by the client within 2/5 of the session timeout, which
/// bounds a try there (docs/sessions.md).
pub async fn a_try_answers_while_cut_off_and_leaves_no_node<L: LockUnderTest>() {
    let path = unique_path("contract-try-cut-off");
    let proxy = start_proxy();
    let client = connect_through(&proxy, Duration::from_secs(20)).await;
    let lock = L::make(&client, &path);
    lock.acquire().await.unwrap().release().await.unwrap(); // the parents exist from here on
    proxy.cut();
    let tried = tokio::time::timeout(TRY_BOUND, lock.try_acquire()).await.expect("the try waited for the outage");
    assert!(matches!(tried, Ok(None)), "{:?}", tried.map(|held| held.is_some()));
    let zero = tokio::time::timeout(TRY_BOUND, lock.acquire_timeout(Duration::ZERO)).await;
    let zero = zero.expect("acquire_timeout(0) waited for the outage");
    assert!(matches!(zero, Ok(None)), "{:?}", zero.map(|held| held.is_some()));
    proxy.heal();
    wait_for_nodes::<L>(&connect().await, &path, &[]).await;
    // Connected again, a try takes the free lock. The client's connection may drop once more
    // as it comes back through the healed proxy (a try then answers None, rightly): polled.
    let deadline = std::time::Instant::now() + PROMPTLY;
    let held = loop {
        if let Some(held) = lock.try_acquire().await.unwrap() {
            break held;
        }
        assert!(std::time::Instant::now() < deadline, "no try held the free lock in {PROMPTLY:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    held.release().await.unwrap();
}

/// What a try may take cut off: the cleanup's grace (`CLEANUP_AFTER_DEADLINE`, 0.5 s) and a
/// loaded machine's scheduling, far below the 20 s outage it must not wait for.
const TRY_BOUND: Duration = Duration::from_secs(3);

/// A create whose reply is lost (the connection then drops) is found again on reconnect: the
/// acquire holds on the nodes it created, owned by its session, with no second node beside
/// them, and its token was taken on the node it holds on.
pub async fn a_lost_create_reply_finds_our_node_instead_of_orphaning_it<L: LockUnderTest>() {
    let path = unique_path("contract-protection");
    let proxy = start_proxy();
    let client = connect_through(&proxy, Duration::from_secs(10)).await;
    let observer = connect().await;
    let lock = std::sync::Arc::new(L::make(&client, &path));
    // The parents exist from here on, persistent, with the data the recipe gives them (a kazoo
    // semaphore's maximum), as a probe on a path of its own made them: made by an acquire they
    // would be containers, which the server deletes once empty (every second here), and an
    // acquire that found them gone would make them anew with its replies lost, never reaching
    // its own create.
    let probe = unique_path("contract-protection-probe");
    let probing = L::make(&client, &probe).acquire().await.unwrap();
    let persistent = zookeeper_client::CreateMode::Persistent.with_acls(zookeeper_client::Acls::anyone_all());
    for (probed, dir) in L::node_dirs(&probe).iter().zip(L::node_dirs(&path)) {
        let (data, _) = observer.get_data(probed).await.unwrap();
        let (parent, _) = dir.rsplit_once('/').unwrap();
        observer.mkdir(parent, &persistent).await.unwrap();
        observer.create(&dir, &data, &persistent).await.unwrap();
    }
    probing.release().await.unwrap();
    lock.acquire().await.unwrap().release().await.unwrap();
    wait_for_nodes::<L>(&observer, &path, &[]).await;

    proxy.drop_replies();
    let acquiring = tokio::spawn({
        let lock = lock.clone();
        async move { lock.acquire().await }
    });
    // The create reached the server; its reply is lost; the connection then drops.
    wait_until_queued::<L>(&observer, &path, 0).await;
    proxy.cut();
    proxy.heal();
    let held = tokio::time::timeout(PROMPTLY, acquiring).await.expect("acquire hung").unwrap().unwrap();
    let mut held_nodes = held.node_paths();
    held_nodes.sort();
    wait_for_nodes::<L>(&observer, &path, &held_nodes).await;
    for node in &held_nodes {
        let (_, stat) = observer.get_data(node).await.unwrap();
        assert_eq!(stat.ephemeral_owner, client.session_id().0, "{node} is not of the holder's session");
    }
    let last = held.node_paths().last().cloned().unwrap();
    let (_, stat) = observer.get_data(&last).await.unwrap();
    assert_eq!(L::czxid_of_token(held.fencing_token()), stat.czxid, "the token was not taken on {last}");
    held.release().await.unwrap();
    assert!(nodes::<L>(&observer, &path).await.is_empty());
}
