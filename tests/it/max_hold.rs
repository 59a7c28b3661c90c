//! The maximum hold time (`max_hold`): each way a bounded hold ends. The bound passes: the holder
//! is told `MaxHoldTime` before a waiter of another session holds, reentry and release report
//! it, the node is gone; a release before the bound ends as any other; a reentrant hold has its
//! outermost hold's bound; a node passed on between tasks (local handoff) keeps its bound; a
//! semaphore's lease, a multi-lock and both sides of a read-write lock are bounded too, a
//! downgrade's read hold by a bound of its own; a zero or absurd bound is refused at build.

use crate::common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{children, connect, unique_path, wait_for_children};
use zklock::hold::Hold;
use zklock::{
    Error, InterProcessMultiLock, InterProcessMutex, InterProcessReadWriteLock, InterProcessSemaphoreV2, LocalHandoff,
    LossReason,
};

/// How long a test waits for what must happen: a bound against a hang, not a timing.
const HANG: Duration = Duration::from_secs(20);

/// The bound the tests give their holds: short, so that a test waits it out quickly.
const BOUND: Duration = Duration::from_millis(500);

const LOST: LossReason = LossReason::MaxHoldTime { bound: BOUND };

#[tokio::test]
async fn the_holder_is_told_before_a_waiter_of_another_session_holds() {
    let path = unique_path("max-hold-passes");
    let client = connect().await;
    let mutex =
        InterProcessMutex::builder(&client, &path).options(zklock::LockOptions::new().max_hold(BOUND)).build().unwrap();
    let guard = Arc::new(mutex.acquire().await.unwrap());
    let holder_token = guard.fencing_token();
    let events = Arc::new(Mutex::new(Vec::new()));

    let watching = {
        let (guard, events) = (Arc::clone(&guard), Arc::clone(&events));
        tokio::spawn(async move {
            let reason = guard.lost().await;
            events.lock().unwrap().push("holder told");
            reason
        })
    };
    let rival_client = connect().await;
    let rival = InterProcessMutex::new(&rival_client, &path).unwrap();
    let waiting = {
        let (guard, events) = (Arc::clone(&guard), Arc::clone(&events));
        tokio::spawn(async move {
            let taken = rival.acquire_timeout(HANG).await.unwrap().expect("the lock passes on after the bound");
            // By then the holder knows: its loss was marked before the delete was sent.
            let holder_still_held = guard.is_held();
            events.lock().unwrap().push("waiter holds");
            (taken, holder_still_held)
        })
    };
    wait_for_children(&client, &path, 2).await;

    let (taken, holder_still_held) = tokio::time::timeout(HANG, waiting).await.unwrap().unwrap();
    assert_eq!(tokio::time::timeout(HANG, watching).await.unwrap().unwrap(), LOST);
    assert!(!holder_still_held, "the holder's is_held() was false before the waiter held");
    assert_eq!(*events.lock().unwrap(), ["holder told", "waiter holds"]);
    assert!(taken.fencing_token() > holder_token);
    assert_eq!(children(&client, &path).await, [taken.node_path().rsplit('/').next().unwrap()]);

    // The owner of the lost hold cannot re-enter it, and its release says why.
    assert!(matches!(mutex.acquire().await, Err(Error::LockLost(reason)) if reason == LOST));
    let guard = Arc::into_inner(guard).expect("the other tasks are done");
    assert!(matches!(guard.release().await, Err(Error::LockLost(reason)) if reason == LOST));
    assert!(taken.is_held());
    taken.release().await.unwrap();
    assert_eq!(LOST.to_string(), "held for its maximum hold time of 500ms");
}

#[tokio::test]
async fn a_hold_released_before_its_bound_ends_as_any_other_and_nothing_fires_later() {
    let path = unique_path("max-hold-released");
    let client = connect().await;
    let bounded =
        InterProcessMutex::builder(&client, &path).options(zklock::LockOptions::new().max_hold(BOUND)).build().unwrap();
    let guard = bounded.acquire().await.unwrap();
    assert!(guard.is_held());
    guard.release().await.unwrap();

    // Another holder, of this session and of another: they hold past the first hold's bound.
    let unbounded = InterProcessMutex::new(&client, &path).unwrap();
    let next = unbounded.acquire().await.unwrap();
    let later_bounded = bounded.acquire_timeout(HANG);
    let rival_client = connect().await;
    let rival = InterProcessMutex::new(&rival_client, &path).unwrap();
    let rival_waits = rival.acquire_timeout(HANG);
    tokio::pin!(later_bounded, rival_waits);
    // The first hold's bound passes while these wait (a wait, not a measurement).
    tokio::select! {
        biased;
        _ = &mut later_bounded => panic!("took a held lock"),
        _ = &mut rival_waits => panic!("took a held lock"),
        () = tokio::time::sleep(BOUND * 3) => {}
    }
    assert!(next.is_held());
    assert_eq!(children(&client, &path).await.len(), 3, "nothing deleted a node that was not its own");
    next.release().await.unwrap();

    // Each takes its turn, in whichever order they queued.
    let (second, third) =
        tokio::join!(async { later_bounded.await.unwrap().expect("its turn comes").release().await }, async {
            rival_waits.await.unwrap().expect("its turn comes").release().await
        },);
    second.unwrap();
    third.unwrap();
}

/// The server's count of what the released hold's session sends: once the release is
/// confirmed, nothing more, also when the bound passes (its timer stopped with the hold).
#[tokio::test]
async fn a_released_holds_timer_sends_nothing_when_its_bound_passes() {
    let path = unique_path("max-hold-quiet");
    // A long session: no ping falls inside the measurement.
    let client = common::connect_with(&common::server().connect_string(), Duration::from_secs(60)).await;
    let mutex =
        InterProcessMutex::builder(&client, &path).options(zklock::LockOptions::new().max_hold(BOUND)).build().unwrap();
    mutex.acquire().await.unwrap().release().await.unwrap();
    let sent = || common::server().session_requests(client.session_id().0).expect("the session in cons");
    let before = sent();
    tokio::time::sleep(BOUND * 3).await;
    assert_eq!(sent(), before, "a request went out after the release");
}

#[tokio::test]
async fn a_reentrant_hold_ends_at_its_outermost_holds_bound() {
    let path = unique_path("max-hold-reentrant");
    let client = connect().await;
    let mutex =
        InterProcessMutex::builder(&client, &path).options(zklock::LockOptions::new().max_hold(BOUND)).build().unwrap();
    let outer = mutex.acquire().await.unwrap();
    let inner = mutex.acquire().await.unwrap();
    assert_eq!(inner.node_path(), outer.node_path(), "a reentry shares the hold");
    // The inner hold ends first; the outer one, on its own, still ends at the bound.
    let early = mutex.acquire().await.unwrap();
    early.release().await.unwrap();
    let (outer_lost, inner_lost) =
        tokio::time::timeout(HANG, async { tokio::join!(outer.lost(), inner.lost()) }).await.unwrap();
    assert_eq!((outer_lost, inner_lost), (LOST, LOST));
    assert!(!outer.is_held() && !inner.is_held());
    common::eventually("the node is deleted", || async { children(&client, &path).await.is_empty() }).await;
    assert!(matches!(inner.release().await, Err(Error::LockLost(reason)) if reason == LOST));
    assert!(matches!(outer.release().await, Err(Error::LockLost(reason)) if reason == LOST));
    // Its owner starts afresh once every guard of the lost hold is gone.
    let again = mutex.acquire().await.unwrap();
    assert!(again.is_held());
    again.release().await.unwrap();
}

/// Two tasks pass one node to and fro (local handoff), each holding far less than the bound: the
/// node is still given up at the bound, counted from its first holder. Were the bound counted per
/// holder, no hold would ever reach it and the test would fail at its deadline.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_passed_on_between_tasks_keeps_the_bound_of_its_first_hold() {
    let path = unique_path("max-hold-handoff");
    let client = connect().await;
    let mutex = InterProcessMutex::builder(&client, &path)
        .local_handoff(LocalHandoff::new(LocalHandoff::MAX_HOLDERS, Duration::from_secs(60)))
        .options(zklock::LockOptions::new().max_hold(BOUND))
        .build()
        .unwrap();
    let nodes = Arc::new(Mutex::new(Vec::<String>::new()));
    let tasks: Vec<_> = (0..2)
        .map(|_| {
            let (mutex, nodes) = (mutex.clone(), Arc::clone(&nodes));
            tokio::spawn(async move {
                loop {
                    let guard = mutex.acquire_timeout(HANG).await.unwrap().expect("the line moves");
                    nodes.lock().unwrap().push(guard.node_path().to_owned());
                    // A short hold, cut short by the loss if it comes.
                    if let Ok(reason) = tokio::time::timeout(BOUND / 10, guard.lost()).await {
                        assert!(matches!(guard.release().await, Err(Error::LockLost(r)) if r == reason));
                        return reason;
                    }
                    guard.release().await.unwrap();
                }
            })
        })
        .collect();
    let (mut first, mut second) = {
        let mut tasks = tasks.into_iter();
        (tasks.next().unwrap(), tasks.next().unwrap())
    };
    let reason = tokio::time::timeout(HANG, async {
        tokio::select! {
            reason = &mut first => reason.unwrap(),
            reason = &mut second => reason.unwrap(),
        }
    })
    .await
    .expect("the passed-on node is given up at its bound");
    assert_eq!(reason, LOST);
    first.abort();
    second.abort();
    let nodes = nodes.lock().unwrap().clone();
    let first_node = &nodes[0];
    let holders = nodes.iter().take_while(|node| *node == first_node).count();
    assert!(holders >= 3, "the node was passed on before its bound ({holders} holders)");
}

#[tokio::test]
async fn a_lease_is_given_up_at_its_bound_and_another_taker_gets_it() {
    let path = unique_path("max-hold-lease");
    let client = connect().await;
    let semaphore = InterProcessSemaphoreV2::builder(&client, &path, 1)
        .options(zklock::LockOptions::new().max_hold(BOUND))
        .build()
        .unwrap();
    let lease = semaphore.acquire().await.unwrap();
    let rival_client = connect().await;
    let rival = InterProcessSemaphoreV2::new(&rival_client, &path, 1).unwrap();
    let taken = rival.acquire_timeout(HANG).await.unwrap().expect("the lease frees at the bound");
    // Told before its node went, so before the rival could hold.
    assert!(!lease.is_held());
    assert_eq!(tokio::time::timeout(HANG, lease.lost()).await.unwrap(), LOST);
    taken.release().await.unwrap();
}

#[tokio::test]
async fn a_multi_lock_and_a_read_write_lock_take_the_bound_from_their_builders() {
    let client = connect().await;
    let (a, b) = (unique_path("max-hold-multi-a"), unique_path("max-hold-multi-b"));
    let multi = InterProcessMultiLock::builder(&client, &[a.as_str(), b.as_str()])
        .options(zklock::LockOptions::new().max_hold(BOUND))
        .build()
        .unwrap();
    let held = multi.acquire().await.unwrap();
    assert_eq!(tokio::time::timeout(HANG, held.lost()).await.unwrap(), LOST);
    assert!(!held.is_held());
    drop(held);

    let path = unique_path("max-hold-rw");
    let rw = InterProcessReadWriteLock::builder(&client, &path)
        .options(zklock::LockOptions::new().max_hold(BOUND))
        .build()
        .unwrap();
    let (read, write) = (rw.read_lock().acquire().await.unwrap(), rw.write_lock().clone());
    assert_eq!(tokio::time::timeout(HANG, read.lost()).await.unwrap(), LOST);
    drop(read);
    let written = write.acquire().await.unwrap();
    assert_eq!(tokio::time::timeout(HANG, written.lost()).await.unwrap(), LOST);
    common::eventually("the write node is deleted", || async { children(&client, &path).await.is_empty() }).await;
}

/// A downgrade: the read hold taken under the write hold is a hold of its own, bounded from
/// its own start. The write hold ends at its bound first (told `MaxHoldTime`, its node gone,
/// the read hold standing, so readers of other sessions join and writers still wait), then the
/// read hold at its, and a writer of another session holds. The read hold is taken half a bound
/// after the write hold: the checks between the two ends have that second, where they take a
/// few round trips.
#[tokio::test]
async fn a_downgraded_read_hold_keeps_a_bound_of_its_own_after_the_write_hold_ends_at_its() {
    const BOUND: Duration = Duration::from_secs(2);
    const LOST: LossReason = LossReason::MaxHoldTime { bound: BOUND };
    let path = unique_path("max-hold-downgrade");
    let client = connect().await;
    let rw = InterProcessReadWriteLock::builder(&client, &path)
        .options(zklock::LockOptions::new().max_hold(BOUND))
        .build()
        .unwrap();
    let write = rw.write_lock().acquire().await.unwrap();
    tokio::time::sleep(BOUND / 2).await;
    let read = rw.read_lock().acquire().await.unwrap();
    assert_eq!(tokio::time::timeout(HANG, write.lost()).await.unwrap(), LOST);
    assert!(read.is_held(), "the read hold outlives the write hold's bound");
    let read_node = read.node_path().rsplit('/').next().unwrap().to_owned();
    common::eventually("the write node is deleted", || async {
        children(&client, &path).await == [read_node.as_str()]
    })
    .await;
    let rival_client = connect().await;
    let rival = InterProcessReadWriteLock::new(&rival_client, &path).unwrap();
    let other_reader = rival.read_lock().try_acquire().await.unwrap().expect("readers join the downgraded hold");
    other_reader.release().await.unwrap();
    assert!(rival.write_lock().try_acquire().await.unwrap().is_none(), "a writer waits for the read hold");
    assert!(read.is_held(), "the checks above ran within the read hold's bound");
    assert_eq!(tokio::time::timeout(HANG, read.lost()).await.unwrap(), LOST);
    let taken = tokio::time::timeout(HANG, rival.write_lock().acquire()).await.unwrap().unwrap();
    assert!(taken.fencing_token() > read.fencing_token());
    drop((write, read));
    taken.release().await.unwrap();
}

#[tokio::test]
async fn a_zero_or_absurd_bound_is_refused_at_build() {
    let client = connect().await;
    let path = unique_path("max-hold-refused");
    for bad in [Duration::ZERO, Duration::from_secs(366 * 24 * 3600)] {
        let refused = |built: Result<(), Error>| assert!(matches!(built, Err(Error::InvalidOptions(_))), "{bad:?}");
        refused(
            InterProcessMutex::builder(&client, &path)
                .options(zklock::LockOptions::new().max_hold(bad))
                .build()
                .map(drop),
        );
        refused(
            InterProcessReadWriteLock::builder(&client, &path)
                .options(zklock::LockOptions::new().max_hold(bad))
                .build()
                .map(drop),
        );
        refused(
            InterProcessSemaphoreV2::builder(&client, &path, 2)
                .options(zklock::LockOptions::new().max_hold(bad))
                .build()
                .map(drop),
        );
        refused(
            InterProcessMultiLock::builder(&client, &[path.as_str()])
                .options(zklock::LockOptions::new().max_hold(bad))
                .build()
                .map(drop),
        );
    }
}

/// Issue 49, item 6: a bounded hold on a `Session` whose connection drops and comes back mid-hold
/// (no expiry): the reconnection neither resets nor cancels the bound. The holder is told
/// `MaxHoldTime` and its node goes, counted from the hold's start, and a rival then holds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reconnection_mid_hold_keeps_the_bound() {
    let path = unique_path("max-hold-reconnect");
    let proxy = zklock_testcontainers::Proxy::start(common::server().address()).unwrap();
    let session = zklock::Session::builder().connect_to(&proxy.connect_string()).await.unwrap();
    let bound = Duration::from_secs(2);
    let mutex = InterProcessMutex::builder(&session, &path)
        .options(zklock::LockOptions::new().max_hold(bound))
        .build()
        .unwrap();
    let started = std::time::Instant::now();
    let guard = mutex.acquire().await.unwrap();
    let node = guard.node_path().to_owned();
    proxy.cut();
    let mut states = session.subscribe();
    let suspended =
        |state: &zklock::session::ConnectionState| matches!(state, zklock::session::ConnectionState::Suspended);
    tokio::time::timeout(HANG, states.wait_for(suspended)).await.unwrap().unwrap();
    proxy.heal();
    let back = |state: &zklock::session::ConnectionState| {
        matches!(state, zklock::session::ConnectionState::Reconnected { expiries: 0, .. })
    };
    tokio::time::timeout(HANG, states.wait_for(back)).await.unwrap().unwrap();
    let reason = tokio::time::timeout(HANG, guard.lost()).await.expect("the bound passed unseen");
    assert_eq!(reason, LossReason::MaxHoldTime { bound });
    assert!(started.elapsed() >= bound, "told before the bound: {:?}", started.elapsed());
    let observer = connect().await;
    common::eventually("the bounded node is gone", || async { observer.check_stat(&node).await.unwrap().is_none() })
        .await;
    let rival = InterProcessMutex::new(&observer, &path).unwrap();
    tokio::time::timeout(HANG, rival.acquire()).await.unwrap().unwrap().release().await.unwrap();
}
