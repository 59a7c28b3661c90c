//! Deadlocks across processes, on a real server: acquires built with `fail_on_deadlock` in a
//! ring of sessions (separate clients, and separate processes), exactly one victim failing with
//! `Error::Deadlock` within two ticks of the server and leaving no node, the others holding
//! once it gave up; and no error where there is no ring (a plain contended wait, a task waiting
//! on its sibling's lock), nor a request on the uncontended path or after a cancelled acquire.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{connect, eventually, server, unique_path, wait_for_children};
use tokio::task::JoinHandle;
use zklock::deadlock::Deadlock;
use zklock::hold::Hold;
use zklock::queue::{watch_queue, QueuePosition};
use zklock::{Error, InterProcessMutex, InterProcessReadWriteLock, LocalHandoff, LockGuard, NodeSchema};
use zklock_testcontainers::__private::spawn_tied_to_process;
use zklock_testcontainers::ServerOptions;
use zookeeper_client::Client;

/// Generous bound for "promptly": a hang exceeds it, a slow machine does not.
const PROMPTLY: Duration = Duration::from_secs(20);

/// Two ticks of the test server: the bound on finding a ring, from its completion to the error.
fn two_ticks() -> Duration {
    2 * ServerOptions::default().tick_time
}

/// A scan period no test outlasts: a lock built with it finds a ring within a test only by the
/// look its wait takes when it starts.
const FIRST_LOOK_ONLY: Duration = Duration::from_secs(600);

fn mutex(client: &Client, path: &str, root: &str) -> InterProcessMutex {
    InterProcessMutex::builder(client, path).fail_on_deadlock(root).build().unwrap()
}

/// A mutex that looks for a deadlock only when its wait starts.
fn mutex_first_look(client: &Client, path: &str, root: &str) -> InterProcessMutex {
    let builder = InterProcessMutex::builder(client, path).fail_on_deadlock(root);
    builder.deadlock_scan_period(FIRST_LOOK_ONLY).build().unwrap()
}

/// A mutex that is not reentrant (each acquire its own owner) and looks for a deadlock only
/// when its wait starts.
fn mutex_not_reentrant_first_look(client: &Client, path: &str, root: &str) -> InterProcessMutex {
    let builder = InterProcessMutex::builder(client, path).reentrant(false).fail_on_deadlock(root);
    builder.deadlock_scan_period(FIRST_LOOK_ONLY).build().unwrap()
}

/// A write lock that looks for a deadlock only when its wait starts.
fn write_lock_first_look(client: &Client, path: &str, root: &str) -> InterProcessMutex {
    let builder = InterProcessReadWriteLock::builder(client, path).fail_on_deadlock(root);
    builder.deadlock_scan_period(FIRST_LOOK_ONLY).build().unwrap().write_lock().clone()
}

/// A write lock in kazoo's layout that looks for a deadlock only when its wait starts.
fn kazoo_write_lock_first_look(client: &Client, path: &str, root: &str) -> InterProcessMutex {
    let builder = InterProcessReadWriteLock::builder(client, path).node_schema(NodeSchema::Kazoo);
    let builder = builder.fail_on_deadlock(root).deadlock_scan_period(FIRST_LOOK_ONLY);
    builder.build().unwrap().write_lock().clone()
}

/// `waiting` (a spawned acquire) holds once `held` is let go, within [`PROMPTLY`]; then lets go.
async fn holds_once_released(held: LockGuard, waiting: JoinHandle<zklock::Result<LockGuard>>) {
    held.release().await.unwrap();
    let guard = tokio::time::timeout(PROMPTLY, waiting).await.expect("holds once released").unwrap();
    guard.unwrap().release().await.unwrap();
}

/// How a party of a ring ended: its own hold, the outcome of its wait, how long the wait took
/// and when it ended.
struct PartyEnd {
    own: LockGuard,
    outcome: zklock::Result<LockGuard>,
    waited: Duration,
    ended: Instant,
}

impl PartyEnd {
    /// Lets go of both holds; panics unless the wait held.
    async fn release_both(self, who: &str) {
        let next = self.outcome.unwrap_or_else(|err| panic!("{who}'s wait failed: {err}"));
        next.release().await.unwrap();
        self.own.release().await.unwrap();
    }
}

/// A party of a ring, as a process is one: a task of its own that holds `own` (returned once it
/// does), waits for the go, then waits on `next`, `watched` by `watch_queue` when given. One
/// task holds and waits, so the nodes it creates carry one owner tag: a ring of such parties is
/// a ring of tasks, not only of sessions.
async fn party(
    own: InterProcessMutex,
    next: InterProcessMutex,
    watched: Option<tokio::sync::watch::Sender<Option<QueuePosition>>>,
) -> (tokio::sync::oneshot::Sender<()>, JoinHandle<PartyEnd>) {
    let (holds, held) = tokio::sync::oneshot::channel();
    let (go, gone) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        let own = own.acquire().await.unwrap();
        holds.send(()).unwrap();
        gone.await.unwrap();
        let started = Instant::now();
        let outcome = match watched {
            Some(position) => watch_queue(position, next.acquire()).await,
            None => next.acquire().await,
        };
        PartyEnd { own, outcome, waited: started.elapsed(), ended: Instant::now() }
    });
    held.await.expect("the party holds its own lock");
    (go, task)
}

/// The end of `party` within [`PROMPTLY`].
async fn ended(party: JoinHandle<PartyEnd>, what: &str) -> PartyEnd {
    tokio::time::timeout(PROMPTLY, party).await.unwrap_or_else(|_| panic!("{what} in time")).unwrap()
}

/// A root of its own with two lock paths under it, and two sessions.
async fn two_locks_two_sessions(name: &str) -> (String, [String; 2], Client, Client) {
    let root = unique_path(name);
    let paths = [0, 1].map(|i| format!("{root}/lock-{i}"));
    (root, paths, connect().await, connect().await)
}

/// The deadlock `err` carries; panics on any other outcome.
fn deadlock<T: std::fmt::Debug>(outcome: zklock::Result<T>) -> Deadlock {
    match outcome {
        Err(Error::Deadlock(deadlock)) => *deadlock,
        other => panic!("expected Error::Deadlock, got {other:?}"),
    }
}

/// `n` sessions in a ring, one task each (a party): party i holds lock i, then waits on lock
/// i+1; the last one's wait completes the ring. It is the victim (its node is the newest): its
/// error comes within two ticks of the start of its acquire, from the look its wait takes when
/// it starts (`lock` looks again only after [`FIRST_LOOK_ONLY`]), names every session, leaves
/// no node; and once it lets go of its own lock, the party before it holds, and so on round
/// the ring.
async fn a_ring_has_one_victim(name: &str, n: usize, lock: fn(&Client, &str, &str) -> InterProcessMutex) {
    let root = unique_path(name);
    let paths: Vec<String> = (0..n).map(|i| format!("{root}/lock-{i}")).collect();
    let observer = connect().await;
    let mut clients = Vec::new();
    let mut gos = Vec::new();
    let mut waiting = Vec::new();
    for (i, path) in paths.iter().enumerate() {
        let client = connect().await;
        let (go, task) = party(lock(&client, path, &root), lock(&client, &paths[(i + 1) % n], &root), None).await;
        gos.push(go);
        waiting.push(task);
        clients.push(client);
    }
    for (i, go) in gos.into_iter().enumerate() {
        go.send(()).unwrap();
        if i + 1 < n {
            wait_for_children(&observer, &paths[i + 1], 2).await;
        }
    }
    let last = ended(waiting.pop().unwrap(), "the ring is found").await;
    let took = last.waited;
    let found = deadlock(last.outcome);
    eprintln!("{name}: a ring of {n} sessions found {took:?} after its last wait began (two ticks: {:?})", two_ticks());
    assert!(took < two_ticks(), "found after {took:?}, over two ticks ({:?})", two_ticks());
    let sessions: std::collections::BTreeSet<i64> = found.hops.iter().map(|hop| hop.waiter_session).collect();
    let expected = clients.iter().map(|client| client.session_id().0).collect();
    assert_eq!(sessions, expected, "{found:?}");
    assert!(found.hops.iter().all(|hop| hop.waiter_owner.is_some()), "each party told as its task: {found:?}");
    let first = lock(&observer, &paths[0], &root);
    assert_eq!(first.participants().await.unwrap().len(), 1, "the victim's node is gone, the holder's stays");
    // Nobody else gave up: every other wait is still under way.
    tokio::time::sleep(ServerOptions::default().tick_time).await;
    assert!(waiting.iter().all(|wait| !wait.is_finished()), "only the victim gave up");
    // The victim lets go of its lock: the party before it holds, and the ring unwinds.
    last.own.release().await.unwrap();
    for i in (0..n - 1).rev() {
        ended(waiting.pop().unwrap(), "holds once the victim gave up").await.release_both(&format!("party {i}")).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_sessions_in_a_ring_one_victim_fails_within_two_ticks_and_the_other_holds() {
    a_ring_has_one_victim("deadlock-two", 2, mutex_first_look).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_sessions_in_a_ring_of_write_locks_one_victim_fails_within_two_ticks() {
    a_ring_has_one_victim("deadlock-three", 3, write_lock_first_look).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_sessions_in_a_ring_of_kazoo_layout_write_locks_one_victim_fails_within_two_ticks() {
    a_ring_has_one_victim("deadlock-three-kazoo", 3, kazoo_write_lock_first_look).await;
}

/// Not reentrant, each acquire counts its holds alone, but its node carries its task's tag:
/// the task that holds one lock and waits on the other is one vertex, and the ring is found.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_sessions_in_a_ring_of_mutexes_that_are_not_reentrant_one_victim_fails_within_two_ticks() {
    a_ring_has_one_victim("deadlock-not-reentrant", 2, mutex_not_reentrant_first_look).await;
}

/// A real ring through two tasks of one process: P's task A holds L1 and waits on L2, held by
/// its sibling B, which waits on L3, held by Q, which waits on L1. Its tags tell A and B apart,
/// so the ring is found, with a hop from one task of P to the other; Q, the newest wait, gives
/// up, and B, then A, hold once it lets go.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ring_through_two_tasks_of_one_process_and_another_process_is_found() {
    let root = unique_path("deadlock-sibling-ring");
    let [l1, l2, l3] = [1, 2, 3].map(|i| format!("{root}/lock-{i}"));
    let (p, q, observer) = (connect().await, connect().await, connect().await);
    let (a_go, a_party) = party(mutex(&p, &l1, &root), mutex(&p, &l2, &root), None).await;
    let (b_go, b_party) = party(mutex(&p, &l2, &root), mutex(&p, &l3, &root), None).await;
    let (q_go, q_party) = party(mutex(&q, &l3, &root), mutex(&q, &l1, &root), None).await;
    a_go.send(()).unwrap();
    wait_for_children(&observer, &l2, 2).await;
    b_go.send(()).unwrap();
    wait_for_children(&observer, &l3, 2).await;
    q_go.send(()).unwrap();
    let q_end = ended(q_party, "the ring is found").await;
    let found = deadlock(q_end.outcome);
    assert_eq!(found.hops.len(), 3, "{found:?}");
    let p_session = p.session_id().0;
    let within_p = found.hops.iter().find(|hop| hop.waiter_session == p_session && hop.holder_session == p_session);
    let within_p = within_p.unwrap_or_else(|| panic!("a hop from one task of P to the other: {found:?}"));
    assert!(within_p.waiter_owner.is_some() && within_p.waiter_owner != within_p.holder_owner, "{found:?}");
    assert!(!a_party.is_finished() && !b_party.is_finished(), "only the victim gave up");
    q_end.own.release().await.unwrap();
    ended(b_party, "B holds once Q let go").await.release_both("B").await;
    ended(a_party, "A holds once B let go").await.release_both("A").await;
}

/// A victim whose wait is watched (`watch_queue`) gives up as any victim does, its place told
/// first. With local handoff on its waiting lock, its nodes carry no owner tag (a hold passes
/// from task to task behind one node), its session is read whole, and the same ring is only
/// possible: nobody gives up (`a_possible_ring_through_a_session_read_whole_fails_no_acquire`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watched_victim_gives_up_too() {
    let (root, [first, second], a, b) = two_locks_two_sessions("deadlock-meets").await;
    let (a_go, a_party) = party(mutex(&a, &first, &root), mutex(&a, &second, &root), None).await;
    let (position, seen) = tokio::sync::watch::channel(None::<QueuePosition>);
    let (b_go, b_party) = party(mutex(&b, &second, &root), mutex(&b, &first, &root), Some(position)).await;
    a_go.send(()).unwrap();
    wait_for_children(&b, &second, 2).await;
    b_go.send(()).unwrap();
    let b_end = ended(b_party, "the ring is found").await;
    deadlock(b_end.outcome);
    assert_eq!(seen.borrow().as_ref().and_then(|position| position.ahead), Some(1), "told its place first");
    assert!(!a_party.is_finished(), "only the victim gave up");
    b_end.own.release().await.unwrap();
    ended(a_party, "A holds once B let go").await.release_both("A").await;
}

/// Local handoff passes a hold from task to task behind one node, so its nodes carry no tag (a
/// tag names the task that created the node, which may no longer hold it) and its session is
/// read whole. The case a creator's tag gets wrong, all in one process: T1 takes L1 through a
/// handoff mutex and passes it to T2 (the node stays; T2 holds and waits on nothing); U holds L2
/// and waits on L1 behind that node; then T1 waits on L2. Tagged with T1, the node would make
/// T1 and U a ring, and T1 the victim; there is none: no error, and all hold once T2 lets go.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hold_handed_to_another_task_is_no_deadlock_of_the_task_that_created_its_node() {
    let root = unique_path("deadlock-handoff-tag");
    let [l1, l2] = [1, 2].map(|i| format!("{root}/lock-{i}"));
    let (p, observer) = (connect().await, connect().await);
    let handoff = InterProcessMutex::builder(&p, &l1)
        .fail_on_deadlock(&root)
        .local_handoff(LocalHandoff::new(8, PROMPTLY))
        .build()
        .unwrap();
    let t1_holds = handoff.acquire().await.unwrap();
    let created = t1_holds.node_path().to_owned();
    let (t2_holds, t2_held) = tokio::sync::oneshot::channel();
    let (let_t2_go, t2_may_go) = tokio::sync::oneshot::channel::<()>();
    let t2 = tokio::spawn(async move {
        let held = handoff.acquire().await.unwrap();
        t2_holds.send(held.node_path().to_owned()).unwrap();
        let _ = t2_may_go.await;
        held.release().await.unwrap();
    });
    // T2 queues in the process's line, behind T1 (the path check below proves it did).
    tokio::time::sleep(Duration::from_millis(50)).await;
    t1_holds.release().await.unwrap();
    assert_eq!(t2_held.await.unwrap(), created, "T1 handed its node to T2");
    let (u_go, u_party) = party(mutex(&p, &l2, &root), mutex(&p, &l1, &root), None).await;
    u_go.send(()).unwrap();
    wait_for_children(&observer, &l1, 2).await;
    let t1_waits = mutex(&p, &l2, &root);
    let both = async {
        tokio::join!(t1_waits.acquire(), async {
            tokio::time::sleep(3 * two_ticks()).await;
            assert_eq!(common::children(&observer, &l2).await.len(), 2, "T1 still waits on L2, no error");
            assert!(!u_party.is_finished(), "U still waits, no error");
            let_t2_go.send(()).unwrap();
            ended(u_party, "U holds once T2 let go").await.release_both("U").await;
        })
    };
    let (t1_got, ()) = tokio::time::timeout(PROMPTLY, both).await.expect("T1 holds once U let go");
    tokio::time::timeout(PROMPTLY, t2).await.unwrap().unwrap();
    t1_got.unwrap_or_else(|err| panic!("T1: {err}")).release().await.unwrap();
}

/// Only the victim gives up: a ring whose victim (the newest wait) did not opt in stands, and
/// the member that did looks at it period after period and waits on, as documented; it holds
/// once the victim's own patience runs out and it lets go.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_that_is_not_the_victim_never_gives_up() {
    let (root, [first, second], a, b) = two_locks_two_sessions("deadlock-not-victim").await;
    let (a_go, a_party) = party(mutex(&a, &first, &root), mutex(&a, &second, &root), None).await;
    let b_holds = InterProcessMutex::new(&b, &second).unwrap().acquire().await.unwrap();
    a_go.send(()).unwrap();
    let observer = connect().await;
    wait_for_children(&observer, &second, 2).await;
    let b_waits = InterProcessMutex::new(&b, &first).unwrap();
    assert!(b_waits.acquire_timeout(4 * two_ticks()).await.unwrap().is_none(), "the ring stood");
    assert!(!a_party.is_finished(), "A looked at the ring period after period and waited on");
    b_holds.release().await.unwrap();
    ended(a_party, "A holds once B let go").await.release_both("A").await;
}

/// A ring whose victim waits behind a node whose data keeps changing (its holder or an operator
/// rewriting it, as a revocation request and `zklock`'s restore do: each change wakes the
/// victim's wait, which lists and watches again) is found all the same: the look under way goes
/// on across the wait's wakings. It used to start again after each, and with changes coming
/// faster than a look takes none ever ended: a ring nobody gave up on (issue 49, item 3).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ring_whose_victim_is_woken_again_and_again_is_still_found() {
    let (root, [first, second], a, b) = two_locks_two_sessions("deadlock-woken").await;
    let (a_go, a_party) = party(mutex(&a, &first, &root), mutex(&a, &second, &root), None).await;
    let (b_go, b_party) = party(mutex(&b, &second, &root), mutex(&b, &first, &root), None).await;
    let observer = connect().await;
    a_go.send(()).unwrap();
    wait_for_children(&observer, &second, 2).await;
    // A's node on `first`: what B's wait, the newest and so the victim, watches.
    let held = InterProcessMutex::new(&observer, &first).unwrap().participants().await.unwrap().remove(0);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let rewrites = tokio::spawn({
        let (observer, stop) = (observer.clone(), std::sync::Arc::clone(&stop));
        async move {
            let mut count = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                observer.set_data(&held, format!("{count}").as_bytes(), None).await.unwrap();
                count += 1;
            }
            count
        }
    });
    b_go.send(()).unwrap();
    let b_end = tokio::time::timeout(PROMPTLY, b_party).await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let rewritten = rewrites.await.unwrap();
    let b_end = b_end.unwrap_or_else(|_| panic!("no victim within {PROMPTLY:?} ({rewritten} rewrites)")).unwrap();
    eprintln!("the victim gave up after {:?}, its predecessor rewritten {rewritten} times", b_end.waited);
    deadlock(b_end.outcome);
    b_end.own.release().await.unwrap();
    ended(a_party, "A holds once B gave up").await.release_both("A").await;
}

/// The regression the opt-in answers: the same ring without it waits for ever (here until a
/// timeout), both sides.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_opt_in_a_ring_waits_until_it_times_out() {
    let (_root, [first, second], a, b) = two_locks_two_sessions("deadlock-plain").await;
    let _a_holds = InterProcessMutex::new(&a, &first).unwrap().acquire().await.unwrap();
    let _b_holds = InterProcessMutex::new(&b, &second).unwrap().acquire().await.unwrap();
    let a_waits = InterProcessMutex::new(&a, &second).unwrap();
    let b_waits = InterProcessMutex::new(&b, &first).unwrap();
    let patience = 3 * two_ticks();
    let (a_got, b_got) = tokio::join!(a_waits.acquire_timeout(patience), b_waits.acquire_timeout(patience));
    assert!(a_got.unwrap().is_none() && b_got.unwrap().is_none(), "a ring holds nobody");
}

/// A waiter waits on every node ahead of it, not only on the holder: one task of A waits on
/// two locks at once (`join!`), on L1 behind C and on L2 behind B; B's task holds L2 and waits
/// on L1 behind C and A. A holds L1 next, then waits on B: a ring of A and B whatever C does,
/// found by B's first look (its wait closes it) while C still holds; before issue 38 the graph
/// drew waits to holders only and saw it only once C let go.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ring_through_a_waiting_node_ahead_is_found_before_the_holder_lets_go() {
    let root = unique_path("deadlock-ahead");
    let [l1, l2] = [1, 2].map(|i| format!("{root}/lock-{i}"));
    let (a, b, c) = (connect().await, connect().await, connect().await);
    let observer = connect().await;
    let c_holds = mutex(&c, &l1, &root).acquire().await.unwrap();
    let (b_go, b_party) = party(mutex(&b, &l2, &root), mutex_first_look(&b, &l1, &root), None).await;
    let (a1, a2) = (mutex(&a, &l1, &root), mutex(&a, &l2, &root));
    let a_waits = tokio::spawn(async move {
        let (first, second) = tokio::join!(a1.acquire(), a2.acquire());
        (first, second)
    });
    wait_for_children(&observer, &l1, 2).await;
    wait_for_children(&observer, &l2, 2).await;
    b_go.send(()).unwrap();
    let b_end = ended(b_party, "the ring is found").await;
    let found = deadlock(b_end.outcome);
    assert!(b_end.waited < two_ticks(), "found by its first look: {:?}", b_end.waited);
    assert_eq!(found.hops.len(), 2, "{found:?}");
    assert!(found.is_certain(), "{found:?}");
    assert!(!a_waits.is_finished(), "only the victim gave up");
    c_holds.release().await.unwrap();
    b_end.own.release().await.unwrap();
    let (first, second) = tokio::time::timeout(PROMPTLY, a_waits).await.expect("A holds both").unwrap();
    first.unwrap().release().await.unwrap();
    second.unwrap().release().await.unwrap();
}

/// A ring no create closes, seen by a later look: two tasks of one process in a ring (T1 holds
/// L1 and waits on L2, T2 holds L2 and waits on L1), while the process also holds L3 through a
/// lock without the opt-in. That untagged node makes the session one vertex, and a session
/// waiting on itself is no edge: no ring. Once L3 is let go the session is read as its tasks,
/// and the victim finds the ring within a scan period and a read (under two ticks).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ring_revealed_by_a_release_is_found_within_two_ticks() {
    let root = unique_path("deadlock-revealed");
    let [l1, l2, l3] = [1, 2, 3].map(|i| format!("{root}/lock-{i}"));
    let (process, observer) = (connect().await, connect().await);
    let untagged = InterProcessMutex::new(&process, &l3).unwrap().acquire().await.unwrap();
    let (t1_go, t1) = party(mutex(&process, &l1, &root), mutex(&process, &l2, &root), None).await;
    let (t2_go, t2) = party(mutex(&process, &l2, &root), mutex(&process, &l1, &root), None).await;
    t1_go.send(()).unwrap();
    wait_for_children(&observer, &l2, 2).await;
    t2_go.send(()).unwrap();
    wait_for_children(&observer, &l1, 2).await;
    tokio::time::sleep(2 * two_ticks()).await;
    assert!(!t1.is_finished() && !t2.is_finished(), "no ring while the session is read whole");
    let revealed = Instant::now();
    untagged.release().await.unwrap();
    let t2_end = ended(t2, "the ring is found").await;
    let took = t2_end.ended - revealed;
    let found = deadlock(t2_end.outcome);
    eprintln!("a ring revealed by a release found {took:?} after it (two ticks: {:?})", two_ticks());
    assert!(took < two_ticks(), "found after {took:?}, over two ticks ({:?})", two_ticks());
    assert!(found.is_certain() && found.hops.len() == 2, "{found:?}");
    assert!(!t1.is_finished(), "only the victim, the newest wait, gave up");
    t2_end.own.release().await.unwrap();
    ended(t1, "T1 holds once T2 let go").await.release_both("T1").await;
}

/// A lock under a root of its own (its path returned), held by one session while another,
/// opted in, waits on it (queued once this returns).
async fn a_contended_wait(name: &str) -> (String, Client, LockGuard, JoinHandle<zklock::Result<LockGuard>>) {
    let root = unique_path(name);
    let path = format!("{root}/lock");
    let (holder, waiter) = (connect().await, connect().await);
    let held = mutex(&holder, &path, &root).acquire().await.unwrap();
    let waits = mutex(&waiter, &path, &root);
    let waiting = tokio::spawn(async move { waits.acquire().await });
    wait_for_children(&holder, &path, 2).await;
    (path, waiter, held, waiting)
}

/// A plain contended wait with the opt-in, looked at for several periods: no error, and the
/// lock once its holder lets go.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_contended_wait_with_the_opt_in_is_no_deadlock() {
    let (_path, _waiter, held, waiting) = a_contended_wait("deadlock-none").await;
    tokio::time::sleep(3 * two_ticks()).await;
    assert!(!waiting.is_finished(), "still waiting, no error");
    holds_once_released(held, waiting).await;
}

/// Tasks of one process share its session: a task waiting on a lock its sibling holds waits on
/// its own session, which is no edge. The sibling also waits (on a lock another session holds,
/// which waits on nothing): a graph that kept the self-wait would have a ring of one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_waiting_on_its_siblings_lock_is_no_deadlock() {
    let (root, [l1, l2], process, other) = two_locks_two_sessions("deadlock-siblings").await;
    let other_holds = mutex(&other, &l2, &root).acquire().await.unwrap();
    let sibling = mutex(&process, &l1, &root);
    let sibling_l2 = mutex(&process, &l2, &root);
    let sibling_done = tokio::spawn(async move {
        let held = sibling.acquire().await.unwrap();
        let second = sibling_l2.acquire().await.unwrap();
        second.release().await.unwrap();
        held.release().await.unwrap();
    });
    let observer = connect().await;
    wait_for_children(&observer, &l2, 2).await;
    let task = mutex(&process, &l1, &root);
    let waiting = tokio::spawn(async move { task.acquire().await });
    wait_for_children(&observer, &l1, 2).await;
    tokio::time::sleep(3 * two_ticks()).await;
    assert!(!waiting.is_finished() && !sibling_done.is_finished(), "both still wait, no error");
    other_holds.release().await.unwrap();
    tokio::time::timeout(PROMPTLY, sibling_done).await.unwrap().unwrap();
    let guard = tokio::time::timeout(PROMPTLY, waiting).await.unwrap().unwrap();
    guard.unwrap().release().await.unwrap();
}

/// Requests the server has received from `client`'s session.
fn requests(client: &Client) -> u64 {
    server().session_requests(client.session_id().0).expect("the session in the server's cons")
}

/// The opt-in costs nothing on the uncontended path: an acquire that holds at once sends what
/// one without it sends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_uncontended_acquire_sends_nothing_for_the_opt_in() {
    let root = unique_path("deadlock-free");
    let client = connect().await;
    let mut cost = Vec::new();
    for opted_in in [false, true] {
        let path = format!("{root}/lock-{opted_in}");
        // A persistent lock path: neither acquire creates parents, nor finds them reaped.
        let persistent = zookeeper_client::CreateMode::Persistent.with_acls(zookeeper_client::Acls::anyone_all());
        client.mkdir(&path, &persistent).await.unwrap();
        let builder = InterProcessMutex::builder(&client, &path);
        let lock = if opted_in { builder.fail_on_deadlock(&root) } else { builder }.build().unwrap();
        let before = requests(&client);
        lock.acquire().await.unwrap().release().await.unwrap();
        cost.push(requests(&client) - before);
    }
    assert_eq!(cost[0], cost[1], "requests of an acquire and release without, then with the opt-in");
}

/// A cancelled acquire stops looking: its session sends nothing more once the cancelled wait's
/// node is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_acquire_stops_looking_for_deadlocks() {
    let (path, waiter, _held, waiting) = a_contended_wait("deadlock-cancel").await;
    let observer = connect().await;
    let before = requests(&waiter);
    tokio::time::sleep(5 * ServerOptions::default().tick_time).await;
    let looking = requests(&waiter) - before;
    assert!(looking >= 6, "a waiting acquire looks every period: {looking} requests in five ticks");
    waiting.abort();
    wait_for_children(&observer, &path, 1).await;
    tokio::time::sleep(ServerOptions::default().tick_time).await;
    let before = requests(&waiter);
    tokio::time::sleep(5 * ServerOptions::default().tick_time).await;
    // A ping may fall in the span (one every third of the 20 s session at most).
    assert!(requests(&waiter) - before <= 1, "a cancelled acquire sends nothing more");
}

// Separate processes: this binary run again as two children, each holding its own lock and
// then waiting on the other's.

const ROLE: &str = "ZKLOCK_DEADLOCK_CHILD";
const ZK: &str = "ZKLOCK_DEADLOCK_ZK";
const ROOT: &str = "ZKLOCK_DEADLOCK_ROOT";
const DIR: &str = "ZKLOCK_DEADLOCK_DIR";

/// What a child tells its parent, in `{dir}/outcome-{party}`: `deadlock {micros}` (the victim:
/// how long after its wait began) or `held`.
fn outcome_file(dir: &Path, party: usize) -> PathBuf {
    dir.join(format!("outcome-{party}"))
}

/// A child's part (run only as a child, else it returns at once): hold lock `party`, say ready,
/// wait for the parent's go, then wait on the other lock; write the outcome; once the victim
/// has spoken, let go.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deadlock_child() {
    let Ok(party) = std::env::var(ROLE) else { return };
    let party: usize = party.parse().unwrap();
    let var = |name| std::env::var(name).unwrap_or_else(|_| panic!("{name} unset in a child"));
    let (connect_string, root, dir) = (var(ZK), var(ROOT), PathBuf::from(var(DIR)));
    let client = common::connect_to(&connect_string).await;
    let own = mutex(&client, &format!("{root}/lock-{party}"), &root).acquire().await.unwrap();
    std::fs::write(dir.join(format!("ready-{party}")), b"").unwrap();
    let deadline = Instant::now() + PROMPTLY;
    while !dir.join("go").exists() {
        assert!(Instant::now() < deadline, "no go from the parent");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let other = mutex(&client, &format!("{root}/lock-{}", 1 - party), &root);
    let started = Instant::now();
    let outcome = tokio::time::timeout(PROMPTLY, other.acquire()).await.expect("the ring is broken in time");
    let told = match outcome {
        Err(Error::Deadlock(_)) => format!("deadlock {}", started.elapsed().as_micros()),
        Ok(guard) => {
            guard.release().await.unwrap();
            "held".to_owned()
        }
        Err(err) => panic!("child {party}: {err}"),
    };
    std::fs::write(outcome_file(&dir, party), told).unwrap();
    own.release().await.unwrap();
}

fn spawn_child(root: &str, dir: &Path, party: usize) -> Child {
    let stderr = std::fs::File::create(dir.join(format!("child-{party}.err"))).unwrap();
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .args([
            "--exact",
            &crate::common::harness_name(module_path!(), "deadlock_child"),
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env(ROLE, party.to_string())
        .env(ZK, server().connect_string())
        .env(ROOT, root)
        .env(DIR, dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr);
    spawn_tied_to_process(command).unwrap()
}

/// Two processes, each holding one lock and then waiting on the other's, at once: exactly one
/// is the victim, within two ticks of the start of its wait, and the other holds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_in_a_ring_one_victim_fails_and_the_other_holds() {
    if std::env::var(ROLE).is_ok() {
        return;
    }
    let root = unique_path("deadlock-processes");
    let dir = std::env::temp_dir().join(root.trim_start_matches('/').replace('/', "-"));
    std::fs::create_dir_all(&dir).unwrap();
    let mut children: Vec<Child> = (0..2).map(|party| spawn_child(&root, &dir, party)).collect();
    eventually("both children hold their lock", || async {
        (0..2).all(|party| dir.join(format!("ready-{party}")).exists())
    })
    .await;
    std::fs::write(dir.join("go"), b"").unwrap();
    eventually("both children told their outcome", || async { (0..2).all(|party| outcome_file(&dir, party).exists()) })
        .await;
    for (party, child) in children.iter_mut().enumerate() {
        let status = child.wait().unwrap();
        let stderr = std::fs::read_to_string(dir.join(format!("child-{party}.err"))).unwrap_or_default();
        assert!(status.success(), "child {party} failed ({status}):\n{stderr}");
    }
    let outcomes: Vec<String> =
        (0..2).map(|party| std::fs::read_to_string(outcome_file(&dir, party)).unwrap()).collect();
    let victims: Vec<&String> = outcomes.iter().filter(|outcome| outcome.starts_with("deadlock")).collect();
    assert_eq!(victims.len(), 1, "exactly one victim: {outcomes:?}");
    assert!(outcomes.contains(&"held".to_owned()), "the other holds: {outcomes:?}");
    let micros: u64 = victims[0].trim_start_matches("deadlock ").parse().unwrap();
    let took = Duration::from_micros(micros);
    eprintln!("two processes: the victim gave up {took:?} after its wait began (two ticks: {:?})", two_ticks());
    assert!(took < two_ticks(), "found after {took:?}, over two ticks ({:?})", two_ticks());
    let _ = std::fs::remove_dir_all(&dir);
}

/// The ring of sessions that is no deadlock: process P's task A holds L1 and waits on nothing,
/// its task B waits on L2; process Q holds L2 and waits on L1. Sessions make a ring (P -> Q ->
/// P), tasks do not: A lets go, Q goes on, then B. With the opt-in on every lock (each node
/// tagged with its task), nobody gets `Error::Deadlock` over several scan periods, and all three
/// hold once A lets go.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_ring_through_a_task_that_does_not_wait_is_no_deadlock() {
    a_ring_through_a_task_that_does_not_wait("deadlock-tasks", true).await;
}

/// P's task A holds L1 (through a lock with the opt-in when `a_opts_in`) and waits on nothing;
/// P's task B waits on L2; Q holds L2 and waits on L1. Nobody gets `Error::Deadlock` over
/// several scan periods, `find_deadlocks` reports no ring (A tagged) or one possible ring (A
/// untagged: P read whole), and all three hold once A lets go.
async fn a_ring_through_a_task_that_does_not_wait(name: &str, a_opts_in: bool) {
    let (root, [l1, l2], p, q) = two_locks_two_sessions(name).await;
    let observer = connect().await;
    let a_lock = if a_opts_in { mutex(&p, &l1, &root) } else { InterProcessMutex::new(&p, &l1).unwrap() };
    let b_lock = mutex(&p, &l2, &root);
    let (a_holds, a_held) = tokio::sync::oneshot::channel();
    let (let_a_go, a_may_go) = tokio::sync::oneshot::channel::<()>();
    let a = tokio::spawn(async move {
        let held = a_lock.acquire().await?;
        a_holds.send(()).unwrap();
        let _ = a_may_go.await;
        held.release().await
    });
    a_held.await.unwrap();
    let (q_go, q_party) = party(mutex(&q, &l2, &root), mutex(&q, &l1, &root), None).await;
    let b = tokio::spawn(async move { b_lock.acquire().await?.release().await });
    wait_for_children(&observer, &l2, 2).await;
    q_go.send(()).unwrap();
    wait_for_children(&observer, &l1, 2).await;
    tokio::time::sleep(3 * two_ticks()).await;
    assert!(!q_party.is_finished() && !b.is_finished(), "Q and B still wait, no error");
    let report = zklock::deadlock::find_deadlocks(&observer, &root).await.unwrap();
    assert_eq!(report.certain().count(), 0, "{report:?}");
    assert_eq!(
        report.deadlocks.len(),
        usize::from(!a_opts_in),
        "a possible ring only when P is read whole: {report:?}"
    );
    let_a_go.send(()).unwrap();
    tokio::time::timeout(PROMPTLY, a).await.expect("A lets go in time").unwrap().unwrap();
    ended(q_party, "Q holds once A let go").await.release_both("Q").await;
    let b_got = tokio::time::timeout(PROMPTLY, b).await.expect("B holds once Q let go").unwrap();
    b_got.unwrap_or_else(|err| panic!("B: {err}"));
}

/// Issue 38, item 1: a leader selector is an election named like a mutex (as Curator's), and
/// its nodes carry no owner tag. Read as a lock, the follower's session waited on the leader's
/// and the leader's work, waiting on a lock a follower's task holds while waiting on nothing,
/// closed a ring of sessions: the work failed with `Error::Deadlock`. An election is not a
/// lock: its participant waits in a task that holds nothing but its place. The work waits,
/// `find_deadlocks` reports nothing, and the work holds once the follower's task lets go.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leaders_work_waiting_on_a_lock_a_followers_task_holds_is_no_deadlock() {
    let root = unique_path("deadlock-selector");
    let (election, lock) = (format!("{root}/election"), format!("{root}/work"));
    let (leader_client, follower_client, observer) = (connect().await, connect().await, connect().await);
    let (outcomes, mut outcome) = tokio::sync::mpsc::unbounded_channel();
    let go = std::sync::Arc::new(tokio::sync::Notify::new());
    let leader = zklock::LeaderSelector::new(&leader_client, &election, "leader").unwrap();
    let work_lock = mutex(&leader_client, &lock, &root);
    let work_go = std::sync::Arc::clone(&go);
    leader
        .start(move |_leadership| {
            let (work_lock, go, outcomes) = (work_lock.clone(), std::sync::Arc::clone(&work_go), outcomes.clone());
            async move {
                go.notified().await;
                let held = work_lock.acquire().await;
                let _ = outcomes.send(held.as_ref().map(|_| ()).map_err(|err| format!("{err:?}")));
                if let Ok(held) = held {
                    held.release().await.unwrap();
                }
                std::future::pending::<()>().await;
            }
        })
        .await
        .unwrap();
    eventually("the first selector leads", || async { leader.has_leadership() }).await;
    let follower_task_holds = mutex(&follower_client, &lock, &root).acquire().await.unwrap();
    let follower = zklock::LeaderSelector::new(&follower_client, &election, "follower").unwrap();
    follower.start(|_leadership| std::future::pending::<()>()).await.unwrap();
    wait_for_children(&observer, &election, 2).await;
    go.notify_one();
    wait_for_children(&observer, &lock, 2).await;
    tokio::time::sleep(3 * two_ticks()).await;
    assert!(outcome.try_recv().is_err(), "the leader's work still waits, no error");
    let report = zklock::deadlock::find_deadlocks(&observer, &root).await.unwrap();
    assert!(report.deadlocks.is_empty(), "an election is not read as a lock: {report:?}");
    follower_task_holds.release().await.unwrap();
    let held = tokio::time::timeout(PROMPTLY, outcome.recv()).await.expect("the work holds in time");
    assert_eq!(held, Some(Ok(())), "the leader's work holds once the follower's task let go");
    follower.close().await.unwrap();
    leader.close().await.unwrap();
}

/// Issue 38, item 2: a read-write lock that is not reentrant, with the opt-in. Task T holds a
/// read lock; another session's writer queues behind it; T reads again and waits behind that
/// writer, which waits behind T's first read: a ring of T and the writer, never found while a
/// waiter's edges went to holders only (T's own). T's second read, the newest wait, is the
/// victim; the writer never gives up, and holds once T lets go of its first read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_behind_a_writer_that_waits_behind_its_own_read_is_the_victim() {
    let root = unique_path("deadlock-reread");
    let path = format!("{root}/rw");
    let (t_client, w_client, observer) = (connect().await, connect().await, connect().await);
    let rw = |client: &Client| {
        let builder = InterProcessReadWriteLock::builder(client, &path).reentrant(false).fail_on_deadlock(&root);
        builder.build().unwrap()
    };
    let (t_lock, w_lock) = (rw(&t_client), rw(&w_client));
    let (first_held, first_holds) = tokio::sync::oneshot::channel();
    let (go, gone) = tokio::sync::oneshot::channel::<()>();
    let t = tokio::spawn(async move {
        let first = t_lock.read_lock().acquire().await.unwrap();
        first_held.send(()).unwrap();
        gone.await.unwrap();
        let again = t_lock.read_lock().acquire().await;
        (first, again)
    });
    first_holds.await.unwrap();
    let writer = tokio::spawn(async move { w_lock.write_lock().acquire().await });
    wait_for_children(&observer, &path, 2).await;
    go.send(()).unwrap();
    let (first, again) = tokio::time::timeout(PROMPTLY, t).await.expect("T's second read is the victim").unwrap();
    let ring = deadlock(again);
    assert!(ring.is_certain(), "T and the writer are tasks, told by their tags: {ring:?}");
    assert_eq!(ring.hops.len(), 2, "{ring:?}");
    assert!(ring.waits().any(|wait| wait.holder_waiting), "T waits on the writer's waiting node: {ring:?}");
    wait_for_children(&observer, &path, 2).await;
    assert!(!writer.is_finished(), "the writer is not the victim");
    first.release().await.unwrap();
    let held = tokio::time::timeout(PROMPTLY, writer).await.expect("the writer holds in time").unwrap();
    held.unwrap().release().await.unwrap();
}

/// Issue 38, item 4: the ring of sessions through a task that does not wait, where that task's
/// lock has no opt-in: its session is read whole, so the ring is only possible. `find_deadlocks`
/// reports it as such, and no acquire fails on it (a false alarm fails a healthy wait): all
/// three hold once A lets go.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_possible_ring_through_a_session_read_whole_fails_no_acquire() {
    a_ring_through_a_task_that_does_not_wait("deadlock-possible", false).await;
}

/// Issue 38, item 6: a root that does not exist, or holds no lock, says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_root_or_one_without_locks_says_so() {
    let client = connect().await;
    let root = unique_path("deadlock-empty");
    let missing = zklock::deadlock::find_deadlocks(&client, &root).await.unwrap();
    assert!(!missing.root_exists && missing.locks_read == 0 && missing.deadlocks.is_empty(), "{missing:?}");
    // mkdir: run first on a fresh server, the tests' common parent does not exist yet.
    client
        .mkdir(&root, &zookeeper_client::CreateMode::Persistent.with_acls(zookeeper_client::Acls::anyone_all()))
        .await
        .unwrap();
    let empty = zklock::deadlock::find_deadlocks(&client, &root).await.unwrap();
    assert!(empty.root_exists && empty.locks_read == 0, "{empty:?}");
}

/// A link of chain `chain` on `path`: a mutex whose nodes carry the chain's id, looking for a
/// deadlock (only when its wait starts) if `looks`.
fn link(client: &Client, path: &str, chain: u64, root: Option<&str>) -> InterProcessMutex {
    let builder = InterProcessMutex::builder(client, path).owner_chain(chain);
    let builder = match root {
        Some(root) => builder.fail_on_deadlock(root).deadlock_scan_period(FIRST_LOOK_ONLY),
        None => builder,
    };
    builder.build().unwrap()
}

/// Issue 38, item 3, as `zklock /a -- zklock /b` beside `zklock /b -- zklock /a` makes it: four
/// sessions, two chains. Chain one's outer link holds A, its inner link waits on B; chain two's
/// outer link holds B, its inner link waits on A. As sessions, nobody that waits holds anything;
/// as chains, it is one certain ring, each hop naming the two chains and each wait its sessions.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_chains_across_four_sessions_are_one_certain_ring() {
    let (root, [a, b], outer_one, outer_two) = two_locks_two_sessions("deadlock-chains").await;
    let (inner_one, inner_two) = (connect().await, connect().await);
    let (one, two) = (0x0c4a_1000_0001, 0x0c4a_1000_0002);
    let _one_holds = link(&outer_one, &a, one, None).acquire().await.unwrap();
    let _two_holds = link(&outer_two, &b, two, None).acquire().await.unwrap();
    let waits = [(&inner_one, &b, one), (&inner_two, &a, two)].map(|(client, path, chain)| {
        let lock = link(client, path, chain, None);
        tokio::spawn(async move { lock.acquire_timeout(PROMPTLY).await })
    });
    wait_for_children(&outer_one, &a, 2).await;
    wait_for_children(&outer_one, &b, 2).await;
    let report = zklock::deadlock::find_deadlocks(&outer_one, &root).await.unwrap();
    assert_eq!(report.deadlocks.len(), 1, "{report:?}");
    let ring = &report.deadlocks[0];
    assert!(ring.is_certain(), "{ring:?}");
    let chains: Vec<(Option<u64>, Option<u64>)> =
        ring.hops.iter().map(|hop| (hop.waiter_chain, hop.holder_chain)).collect();
    assert_eq!(chains, [(Some(one), Some(two)), (Some(two), Some(one))], "{ring:?}");
    let session = |client: &Client| client.session_id().0;
    let sessions: Vec<(i64, i64)> = ring.waits().map(|wait| (wait.waiter_session, wait.holder_session)).collect();
    assert_eq!(sessions, [(session(&inner_one), session(&outer_two)), (session(&inner_two), session(&outer_one))]);
    for wait in waits {
        wait.abort();
    }
}

/// The same ring with `fail_on_deadlock` on the inner links: the newest wait (chain two's) is
/// the victim and gives up, leaving no node; chain one's inner link waits on, and holds once
/// chain two's outer link lets go (as a `zklock` does once its command, the victim, ended).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ring_of_two_chains_has_one_victim_and_the_other_chain_holds_once_it_let_go() {
    let (root, [a, b], outer_one, outer_two) = two_locks_two_sessions("deadlock-chains-victim").await;
    let (inner_one, inner_two) = (connect().await, connect().await);
    let (one, two) = (0x0c4a_2000_0001, 0x0c4a_2000_0002);
    let one_holds = link(&outer_one, &a, one, None).acquire().await.unwrap();
    let two_holds = link(&outer_two, &b, two, None).acquire().await.unwrap();
    let one_lock = link(&inner_one, &b, one, Some(&root));
    let one_waits = tokio::spawn(async move { one_lock.acquire().await });
    wait_for_children(&outer_one, &b, 2).await;
    let two_lock = link(&inner_two, &a, two, Some(&root));
    let two_waits = tokio::time::timeout(PROMPTLY, two_lock.acquire()).await.expect("the ring is found");
    let ring = deadlock(two_waits);
    assert!(ring.is_certain(), "{ring:?}");
    let chains: std::collections::BTreeSet<Option<u64>> = ring.hops.iter().map(|hop| hop.waiter_chain).collect();
    assert_eq!(chains, [Some(one), Some(two)].into(), "{ring:?}");
    assert_eq!(common::children(&outer_one, &a).await.len(), 1, "the victim left no node");
    assert!(!one_waits.is_finished(), "only the victim gave up");
    two_holds.release().await.unwrap();
    let held = tokio::time::timeout(PROMPTLY, one_waits).await.expect("chain one holds in time").unwrap();
    held.unwrap().release().await.unwrap();
    one_holds.release().await.unwrap();
}

/// An owner chain's id has 48 bits of room in a node's uuid: a larger one is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_owner_chain_over_48_bits_is_refused() {
    let client = connect().await;
    let path = unique_path("deadlock-chain-id");
    let refused = InterProcessMutex::builder(&client, &path).owner_chain(1 << 48).build();
    assert!(matches!(refused, Err(Error::InvalidOptions(_))), "{refused:?}");
    assert!(InterProcessMutex::builder(&client, &path).owner_chain((1 << 48) - 1).build().is_ok());
}
