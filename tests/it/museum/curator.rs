//! Apache Curator's (and Netflix Curator's) double holders, double leaders and orphan nodes.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use zklock::election::TermEnd;
use zklock::hold::Hold;
use zklock::zookeeper_client::Client;
use zklock::{Error, InterProcessMutex, LeaderLatch, LeaderSelector, LossReason, Session};
use zklock_testcontainers::{expire_session, Proxy};
use zookeeper_client::SessionState;

use crate::common::{
    children, connect, connect_through, connect_with, eventually, server, unique_path, wait_for_children,
};
use crate::museum::{behind_proxy, owner_of, promptly, Belief, Believers, SHORT_SESSION};

/// A loss that a partition explains: given up after the policy's third of the session
/// timeout, or the expiry itself.
fn lost_to_a_partition(reason: LossReason) -> bool {
    matches!(reason, LossReason::Disconnected { .. } | LossReason::SessionExpired)
}

fn latch_belief(latch: &Arc<LeaderLatch>) -> Belief {
    let latch = latch.clone();
    Box::new(move || latch.has_leadership())
}

/// The end every latch scenario shares: `a` leaves, `b` leads next, never two leaders at once
/// through the whole scenario, and once `b` leaves no node is left.
async fn a_hands_over_to_b_and_both_leave(
    a: &LeaderLatch,
    b: &LeaderLatch,
    believers: Believers,
    observer: &Client,
    path: &str,
) {
    a.close().await.unwrap();
    promptly("b leads once a leaves", b.await_leadership()).await.unwrap();
    assert_eq!(believers.most_at_once().await, 1, "two leaders at once");
    b.close().await.unwrap();
    assert!(children(observer, path).await.is_empty(), "no node left");
}

/// A latch through `proxy` that joins again through it after an expiry: on a `Session` made
/// from `client`.
fn rejoining_latch(proxy: &Proxy, client: &Client, path: &str, id: &str) -> Arc<LeaderLatch> {
    let connect_string = proxy.connect_string();
    let session = zklock::Session::from_client(client.clone(), move || {
        let connect_string = connect_string.clone();
        async move { Client::connector().with_session_timeout(SHORT_SESSION).connect(&connect_string).await }
    })
    .unwrap();
    Arc::new(LeaderLatch::new(&session, path, id).unwrap())
}

/// The id of the participant whose node is first, as the server sees it.
async fn leader_on_server(latch: &LeaderLatch) -> Option<String> {
    latch.leader().await.unwrap().map(|leader| leader.id())
}

/// [CURATOR-206](https://issues.apache.org/jira/browse/CURATOR-206): a holder partitioned until
/// its ephemeral node expired kept "holding" while a second client took the same lock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_partitioned_past_its_session_is_told_before_another_holds() {
    let path = unique_path("museum-curator-206");
    let (proxy, holder_client) = behind_proxy(SHORT_SESSION).await;
    let holder = InterProcessMutex::new(&holder_client, &path).unwrap().acquire().await.unwrap();
    let other_client = connect().await;
    let other = InterProcessMutex::new(&other_client, &path).unwrap();
    let waiting = tokio::spawn(async move {
        let guard = other.acquire().await;
        (Instant::now(), guard)
    });
    wait_for_children(&other_client, &path, 2).await;
    proxy.blackhole();
    let told = async {
        let reason = holder.lost().await;
        (Instant::now(), reason)
    };
    let ((told_at, reason), waited) =
        promptly("the loss and the handover", async { tokio::join!(told, waiting) }).await;
    let (held_at, guard) = waited.unwrap();
    let guard = guard.unwrap();
    assert!(lost_to_a_partition(reason), "{reason:?}");
    assert!(told_at < held_at, "the partitioned holder was told {:?} after the other held", told_at - held_at);
    assert!(!holder.is_held());
    proxy.heal();
    let released = promptly("the lost holder's release", holder.release()).await;
    assert!(matches!(released, Err(Error::LockLost(_))), "{released:?}");
    guard.release().await.unwrap();
    assert!(children(&other_client, &path).await.is_empty(), "no node left");
}

/// [CURATOR-604](https://issues.apache.org/jira/browse/CURATOR-604): after the session expired
/// and the client reconnected with a new one, `acquire()` held on the previous session's node,
/// about to be deleted, so two clients held the lock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acquire_across_an_expiry_never_holds_on_the_old_sessions_node() {
    let path = unique_path("museum-curator-604");
    let proxy = Proxy::start(server().address()).unwrap();
    let connect_string = proxy.connect_string();
    let session = Session::connect(move || {
        let connect_string = connect_string.clone();
        async move { Client::connector().with_session_timeout(Duration::from_secs(20)).connect(&connect_string).await }
    })
    .await
    .unwrap();
    let observer = connect().await;
    let mutex = InterProcessMutex::new(&session, &path).unwrap();
    // The lock path exists, so that the acquire's first request is its create, which reaches
    // the server and whose reply is lost; then the session expires under the acquire.
    let persistent = zookeeper_client::CreateMode::Persistent.with_acls(zookeeper_client::Acls::anyone_all());
    observer.mkdir(&path, &persistent).await.unwrap();
    proxy.drop_replies();
    let acquiring = tokio::spawn({
        let mutex = mutex.clone();
        async move { mutex.acquire().await }
    });
    wait_for_children(&observer, &path, 1).await;
    let old_node = format!("{path}/{}", children(&observer, &path).await[0]);
    let old_session = session.session_id();
    expire_session(&session.client(), &proxy).await.unwrap();
    let outcome = promptly("the acquire across the expiry", acquiring).await.unwrap();
    assert!(owner_of(&observer, &old_node).await.is_none(), "the old session's node went with it");
    let contender = InterProcessMutex::new(&observer, &path).unwrap();
    // On a `Session` an acquire rides over an expiry within its patience: it holds on the new
    // session, never on the node that went with the old one.
    let guard = outcome.expect("an acquire on a Session rides over the expiry");
    assert_ne!(guard.node_path(), old_node, "held on the expired session's node");
    let owner = owner_of(&observer, guard.node_path()).await;
    assert_eq!(owner, Some(session.session_id()), "held on a node of the new session");
    assert_ne!(owner, Some(old_session));
    assert!(contender.try_acquire().await.unwrap().is_none(), "two holders");
    guard.release().await.unwrap();
    let taken = contender.try_acquire().await.unwrap().expect("the lock is free");
    taken.release().await.unwrap();
    assert!(children(&observer, &path).await.is_empty(), "no node left");
    observer.delete(&path, None).await.unwrap();
}

/// [CURATOR-444](https://issues.apache.org/jira/browse/CURATOR-444): a `LeaderLatch` whose
/// ZooKeeper link was blocked for exactly its session timeout sent events that left two
/// participants leading at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_latch_leader_cut_off_for_its_session_timeout_never_leads_beside_another() {
    let path = unique_path("museum-curator-444");
    let (proxy, a_client) = behind_proxy(SHORT_SESSION).await;
    let a = rejoining_latch(&proxy, &a_client, &path, "a");
    a.start().await.unwrap();
    let term = promptly("a leads", a.await_leadership()).await.unwrap();
    let b = Arc::new(LeaderLatch::new(&connect().await, &path, "b").unwrap());
    b.start().await.unwrap();
    let believers = Believers::watch(vec![latch_belief(&a), latch_belief(&b)]);
    proxy.blackhole();
    tokio::time::sleep(SHORT_SESSION).await;
    proxy.heal();
    let end = promptly("a's term ends", term.ended()).await;
    assert!(matches!(end, TermEnd::Lost(reason) if lost_to_a_partition(reason)), "{end}");
    // Whoever leads once the dust settles leads alone, and is the first node on the server.
    let observer = connect().await;
    eventually("one of them leads", || async { a.has_leadership() || b.has_leadership() }).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(believers.most_at_once().await, 1, "two leaders at once");
    let leader = if a.has_leadership() { "a" } else { "b" };
    assert_eq!(leader_on_server(&b).await.as_deref(), Some(leader));
    assert_eq!(children(&observer, &path).await.len(), 2, "one node each");
    a.close().await.unwrap();
    b.close().await.unwrap();
    assert!(children(&observer, &path).await.is_empty(), "no node left");
}

/// [CURATOR-460](https://issues.apache.org/jira/browse/CURATOR-460): Curator's timed tolerance
/// of SUSPENDED told the leader of its loss a full session timeout after the disconnection,
/// after the server had already expired the session, so two `LeaderSelector`s led at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_selector_cut_off_drops_its_work_before_another_selector_starts() {
    let path = unique_path("museum-curator-460");
    let log = Arc::new(Mutex::new(Vec::<String>::new()));
    /// Logs "{id} end" when the work's future is dropped, however its term ended.
    struct EndsIn(Arc<Mutex<Vec<String>>>, &'static str);
    impl Drop for EndsIn {
        fn drop(&mut self) {
            self.0.lock().unwrap().push(format!("{} end", self.1));
        }
    }
    let work = |id: &'static str, log: Arc<Mutex<Vec<String>>>| {
        move |_term| {
            let log = log.clone();
            async move {
                log.lock().unwrap().push(format!("{id} start"));
                let _end = EndsIn(log, id);
                std::future::pending::<()>().await;
            }
        }
    };
    let (proxy, a_client) = behind_proxy(SHORT_SESSION).await;
    let a = LeaderSelector::new(&a_client, &path, "a").unwrap();
    a.start(work("a", log.clone())).await.unwrap();
    eventually("a leads", || async { log.lock().unwrap().contains(&"a start".to_owned()) }).await;
    let b_client = connect().await;
    let b = LeaderSelector::new(&b_client, &path, "b").unwrap();
    b.start(work("b", log.clone())).await.unwrap();
    wait_for_children(&b_client, &path, 2).await;
    proxy.blackhole();
    eventually("b leads", || async { log.lock().unwrap().contains(&"b start".to_owned()) }).await;
    let seen = log.lock().unwrap().clone();
    assert_eq!(seen, ["a start", "a end", "b start"], "a's work still ran when b's started");
    proxy.heal();
    b.close().await.unwrap();
    drop(a);
    eventually("no node left", || async { children(&b_client, &path).await.is_empty() }).await;
}

/// [CURATOR-504](https://issues.apache.org/jira/browse/CURATOR-504) (and its clone CURATOR-644):
/// after reconnections a `LeaderLatch` raced its own reset ("Can't find our node. Resetting"),
/// deleting and recreating its node over and over, so that the queue held extra nodes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_whose_connection_flaps_keeps_one_node_and_the_leader_keeps_leading() {
    let path = unique_path("museum-curator-504");
    let observer = connect().await;
    let a = Arc::new(LeaderLatch::new(&observer, &path, "a").unwrap());
    a.start().await.unwrap();
    promptly("a leads", a.await_leadership()).await.unwrap();
    let (proxy, b_client) = behind_proxy(Duration::from_secs(20)).await;
    let b = Arc::new(LeaderLatch::new(&b_client, &path, "b").unwrap());
    b.start().await.unwrap();
    wait_for_children(&observer, &path, 2).await;
    let queue = children(&observer, &path).await;
    let believers = Believers::watch(vec![latch_belief(&a), latch_belief(&b)]);
    for _ in 0..5 {
        proxy.cut();
        tokio::time::sleep(Duration::from_millis(100)).await;
        proxy.heal();
        tokio::time::sleep(Duration::from_millis(150)).await;
    }
    eventually("b is connected again", || async { b_client.state() == SessionState::SyncConnected }).await;
    assert_eq!(children(&observer, &path).await, queue, "the same two nodes, none reset");
    assert!(a.has_leadership() && !b.has_leadership());
    a_hands_over_to_b_and_both_leave(&a, &b, believers, &observer, &path).await;
}

/// [CURATOR-620](https://issues.apache.org/jira/browse/CURATOR-620): two RECONNECTED events in
/// quick succession interleaved a `LeaderLatch`'s event threads, deleting its node after it had
/// become leader: it led on a node that no longer existed while another participant led too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_reconnecting_twice_in_quick_succession_leads_only_on_its_own_node() {
    let path = unique_path("museum-curator-620");
    let (proxy, a_client) = behind_proxy(Duration::from_secs(20)).await;
    let a = Arc::new(LeaderLatch::new(&a_client, &path, "a").unwrap());
    a.start().await.unwrap();
    promptly("a leads", a.await_leadership()).await.unwrap();
    let observer = connect().await;
    let b = Arc::new(LeaderLatch::new(&observer, &path, "b").unwrap());
    b.start().await.unwrap();
    wait_for_children(&observer, &path, 2).await;
    let believers = Believers::watch(vec![latch_belief(&a), latch_belief(&b)]);
    for _ in 0..2 {
        proxy.cut();
        tokio::time::sleep(Duration::from_millis(30)).await;
        proxy.heal();
    }
    eventually("a is connected again", || async { a_client.state() == SessionState::SyncConnected }).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let term = a.leadership().expect("a short blip keeps the term (or a new one on the same node)");
    assert!(owner_of(&observer, term.node_path()).await.is_some(), "a leads on a deleted node");
    assert_eq!(leader_on_server(&b).await.as_deref(), Some("a"));
    assert_eq!(children(&observer, &path).await.len(), 2, "one node each");
    a_hands_over_to_b_and_both_leave(&a, &b, believers, &observer, &path).await;
}

/// [CURATOR-653](https://issues.apache.org/jira/browse/CURATOR-653) (also CURATOR-652): the
/// ensemble became unavailable to every participant at once (a leader change); on reconnecting,
/// each `LeaderLatch` reset, deleting and recreating its node, and their interleaved resets left
/// two leaders.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn participants_all_cut_off_at_once_and_back_never_lead_two_at_a_time() {
    let path = unique_path("museum-curator-653");
    // One proxy for both: the server is gone for both at the same moment, as in a leader change.
    let proxy = Proxy::start(server().address()).unwrap();
    let a_client = connect_through(&proxy, Duration::from_secs(20)).await;
    let b_client = connect_through(&proxy, Duration::from_secs(20)).await;
    let a = Arc::new(LeaderLatch::new(&a_client, &path, "a").unwrap());
    let b = Arc::new(LeaderLatch::new(&b_client, &path, "b").unwrap());
    a.start().await.unwrap();
    promptly("a leads", a.await_leadership()).await.unwrap();
    b.start().await.unwrap();
    let observer = connect().await;
    wait_for_children(&observer, &path, 2).await;
    let queue = children(&observer, &path).await;
    let believers = Believers::watch(vec![latch_belief(&a), latch_belief(&b)]);
    for pause in [50, 400, 1500] {
        proxy.cut();
        tokio::time::sleep(Duration::from_millis(pause)).await;
        proxy.heal();
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    for client in [&a_client, &b_client] {
        eventually("connected again", || async { client.state() == SessionState::SyncConnected }).await;
    }
    eventually("a leads again", || async { a.has_leadership() }).await;
    assert_eq!(children(&observer, &path).await, queue, "the same two nodes: nobody reset");
    a_hands_over_to_b_and_both_leave(&a, &b, believers, &observer, &path).await;
}

/// [CURATOR-696](https://issues.apache.org/jira/browse/CURATOR-696): ZooKeeper was away until
/// the leader's session expired; on reconnecting, the `LeaderLatch` set itself leader again on
/// its old path, which the expiry then deleted, so it led beside the new leader. Replayed with a
/// real expiry (the server's timeout while the leader is black-holed): `expire_session` closes
/// the session at once, sooner than any server would, which no client can foresee.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_whose_session_expired_never_leads_on_its_old_node() {
    let path = unique_path("museum-curator-696");
    let (proxy, a_client) = behind_proxy(SHORT_SESSION).await;
    let a = rejoining_latch(&proxy, &a_client, &path, "a");
    a.start().await.unwrap();
    let term = promptly("a leads", a.await_leadership()).await.unwrap();
    let old_node = term.node_path().to_owned();
    let observer = connect().await;
    let b = Arc::new(LeaderLatch::new(&observer, &path, "b").unwrap());
    b.start().await.unwrap();
    wait_for_children(&observer, &path, 2).await;
    let believers = Believers::watch(vec![latch_belief(&a), latch_belief(&b)]);
    proxy.blackhole();
    let end = promptly("a's term ends", term.ended()).await;
    assert!(matches!(end, TermEnd::Lost(reason) if lost_to_a_partition(reason)), "{end}");
    promptly("b leads", b.await_leadership()).await.unwrap();
    proxy.heal();
    // a joins again with a new node behind b's, and never leads on the old one.
    eventually("a queued again", || async { children(&observer, &path).await.len() == 2 && !a.has_leadership() }).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!a.has_leadership());
    assert!(owner_of(&observer, &old_node).await.is_none());
    assert_eq!(leader_on_server(&b).await.as_deref(), Some("b"));
    assert_eq!(believers.most_at_once().await, 1, "two leaders at once");
    b.close().await.unwrap();
    let next = promptly("a leads once b leaves", a.await_leadership()).await.unwrap();
    assert_ne!(next.node_path(), old_node, "led on the expired session's node");
    assert!(next.fencing_token() > term.fencing_token());
    a.close().await.unwrap();
    assert!(children(&observer, &path).await.is_empty(), "no node left");
}

/// [Netflix/curator#216](https://github.com/Netflix/curator/issues/216): after connection
/// problems, 3 of 12 `LeaderLatch`es reported `hasLeadership()` at once, for ten minutes, since
/// the latch did not clear its leader state on connection trouble.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_latches_under_connection_faults_never_report_two_leaders() {
    let path = unique_path("museum-netflix-216");
    let mut proxies = Vec::new();
    let mut latches = Vec::new();
    for id in ["a", "b", "c", "d"] {
        let (proxy, client) = behind_proxy(SHORT_SESSION).await;
        let latch = rejoining_latch(&proxy, &client, &path, id);
        latch.start().await.unwrap();
        proxies.push(proxy);
        latches.push(latch);
    }
    let observer = connect().await;
    wait_for_children(&observer, &path, 4).await;
    let believers = Believers::watch(latches.iter().map(latch_belief).collect());
    for round in 0..4 {
        // Whoever leads is black-holed long enough to lose its term (and maybe its session);
        // another participant's connection is cut and healed meanwhile.
        let leader = latches.iter().position(|latch| latch.has_leadership());
        let victim = leader.unwrap_or(round % 4);
        proxies[victim].blackhole();
        proxies[(victim + 1) % 4].cut();
        tokio::time::sleep(Duration::from_millis(300)).await;
        proxies[(victim + 1) % 4].heal();
        tokio::time::sleep(SHORT_SESSION).await;
        proxies[victim].heal();
    }
    eventually("one latch leads, four queued", || async {
        latches.iter().filter(|latch| latch.has_leadership()).count() == 1
            && children(&observer, &path).await.len() == 4
    })
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(believers.most_at_once().await, 1, "two leaders at once");
    let leader = latches.iter().find(|latch| latch.has_leadership()).unwrap();
    assert_eq!(leader_on_server(leader).await.as_deref(), Some(leader.id()));
    for latch in &latches {
        latch.close().await.unwrap();
    }
    assert!(children(&observer, &path).await.is_empty(), "no node left");
}

/// [CURATOR-202](https://issues.apache.org/jira/browse/CURATOR-202): a `LeaderSelector` that
/// lost its connection gave up leadership, failed to delete its node (no connection), and
/// reconnected to the same session: the old node stayed first forever and nobody led.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_selector_whose_term_ended_while_disconnected_leaves_no_node_that_blocks_the_election() {
    let path = unique_path("museum-curator-202");
    let (proxy, a_client) = behind_proxy(Duration::from_secs(10)).await;
    let a = LeaderSelector::builder(&a_client, &path, "a").auto_requeue(true).build().unwrap();
    let (term_tx, mut term_rx) = tokio::sync::mpsc::unbounded_channel();
    a.start(move |term| {
        let _ = term_tx.send(term);
        std::future::pending()
    })
    .await
    .unwrap();
    let term = promptly("a leads", term_rx.recv()).await.unwrap();
    let observer = connect().await;
    let b = LeaderSelector::new(&observer, &path, "b").unwrap();
    let b_led = Arc::new(std::sync::atomic::AtomicBool::new(false));
    b.start({
        let b_led = b_led.clone();
        move |_term| {
            b_led.store(true, std::sync::atomic::Ordering::SeqCst);
            std::future::pending()
        }
    })
    .await
    .unwrap();
    wait_for_children(&observer, &path, 2).await;
    proxy.blackhole();
    // Healed as soon as a gives its term up: its session (10 s) still lives on the server.
    let end = promptly("a's term ends", term.ended()).await;
    proxy.heal();
    assert!(matches!(end, TermEnd::Lost(LossReason::Disconnected { .. })), "{end}");
    eventually("somebody leads on the server", || async {
        let leader = b.leader().await.ok().flatten();
        leader.is_some_and(|leader| {
            (leader.id() == "a" && a.has_leadership()) || (leader.id() == "b" && b.has_leadership())
        })
    })
    .await;
    let nodes = children(&observer, &path).await;
    assert_eq!(nodes.len(), 2, "one node each, none stale: {nodes:?}");
    assert!(!(a.has_leadership() && b.has_leadership()));
    a.close().await.unwrap();
    eventually("b leads once a leaves", || async { b.has_leadership() }).await;
    assert!(b_led.load(std::sync::atomic::Ordering::SeqCst));
    b.close().await.unwrap();
    assert!(children(&observer, &path).await.is_empty(), "no node left");
}

/// [CURATOR-3](https://issues.apache.org/jira/browse/CURATOR-3) (Netflix/curator#265): a
/// `LeaderLatch` closed while its watch handler ran found its node gone and reset, creating a
/// node after `close()`: an orphan in the election.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_latch_closed_while_its_predecessor_leaves_leaves_no_node() {
    let observer = connect().await;
    for round in 0..10 {
        let path = unique_path(&format!("museum-curator-3-{round}"));
        let a = LeaderLatch::new(&observer, &path, "a").unwrap();
        a.start().await.unwrap();
        promptly("a leads", a.await_leadership()).await.unwrap();
        let b_client = connect_with(&server().connect_string(), Duration::from_secs(20)).await;
        let b = LeaderLatch::new(&b_client, &path, "b").unwrap();
        b.start().await.unwrap();
        wait_for_children(&observer, &path, 2).await;
        // a's leaving fires b's watch while b closes.
        let (left, closed) = tokio::join!(a.close(), b.close());
        left.unwrap();
        closed.unwrap();
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(children(&observer, &path).await.is_empty(), "round {round}: a node after close");
    }
}
