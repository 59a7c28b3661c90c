//! The fault soak: several clients, each behind its own proxy to a 3-node ensemble, take one
//! lock over and over (random timeouts, random cancellations) while a nemesis kills and pauses
//! the leader, partitions clients and expires their sessions. Every critical section writes
//! through a fenced register. The run then checks that nobody wrote while wrongly believing it
//! held the lock, that no two holders overlapped unless the earlier one had been told of its
//! loss, that every client gets the lock back once the faults stop, and that no node is left.
//!
//! Sessions expire the way they do in production: a client is partitioned for longer than the
//! session timeout and the server expires it. (Curator's KillSession trick, which closes a
//! session from outside at once, is not a fault a holder can detect in time, any more than an
//! operator deleting its node; only fencing protects there, and `expire_session` tests it
//! elsewhere.)
//!
//! Bounded: `ZKLOCK_SOAK_SECS` seconds of faults (default 60), then at most about a minute of
//! recovery and checks. Prints one summary line beginning with `soak:`.

mod common;

use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use zklock::{Error, InterProcessMutex, LockGuard};
use zklock_testcontainers::{Ensemble, Proxy};
use zookeeper_client::Client;

const CLIENTS: usize = 4;
const SESSION_TIMEOUT: Duration = Duration::from_secs(6);

/// A resource that refuses writes carrying a token lower than the highest it has accepted.
#[derive(Default)]
struct FencedRegister {
    highest: i64,
}

impl FencedRegister {
    fn write(&mut self, token: i64) -> bool {
        if token < self.highest {
            return false;
        }
        self.highest = token;
        true
    }
}

/// One critical section as the holder saw it.
struct Section {
    client: usize,
    start: Instant,
    /// When it stopped: before its release, or when it was told the lock was lost.
    end: Instant,
}

#[derive(Default)]
struct Counts {
    acquisitions: AtomicU64,
    timeouts: AtomicU64,
    cancellations: AtomicU64,
    losses: AtomicU64,
    reconnects: AtomicU64,
    stale_rejected_after_loss: AtomicU64,
    stale_accepted_while_held: AtomicU64,
    other_errors: AtomicU64,
    kills: AtomicU64,
    pauses: AtomicU64,
    partitions: AtomicU64,
    expiries: AtomicU64,
}

struct Shared {
    register: Mutex<FencedRegister>,
    sections: Mutex<Vec<Section>>,
    counts: Counts,
    stop: AtomicBool,
    lock_path: String,
    /// The client in a critical section, if any: the nemesis likes to partition it.
    holder: Mutex<Option<usize>>,
}

/// A client slot the nemesis can reach: the current client of a worker and its proxy.
struct Slot {
    proxy: Proxy,
    client: Mutex<Option<Client>>,
}

async fn connect_through(proxy: &Proxy) -> Option<Client> {
    let connect_string = proxy.connect_string();
    let connecting = Client::connector().with_session_timeout(SESSION_TIMEOUT).connect(&connect_string);
    tokio::time::timeout(SESSION_TIMEOUT * 2, connecting).await.ok()?.ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fault_soak() {
    let seconds: u64 = std::env::var("ZKLOCK_SOAK_SECS").ok().and_then(|s| s.parse().ok()).unwrap_or(60);
    let ensemble = tokio::task::block_in_place(|| Ensemble::start(3)).expect("start an ensemble");
    let shared = Arc::new(Shared {
        register: Mutex::default(),
        sections: Mutex::default(),
        counts: Counts::default(),
        stop: AtomicBool::new(false),
        lock_path: common::unique_path("soak"),
        holder: Mutex::default(),
    });
    let slots: Arc<Vec<Slot>> = Arc::new(
        (0..CLIENTS)
            .map(|_| Slot { proxy: Proxy::start_many(&ensemble.addresses()).unwrap(), client: Mutex::new(None) })
            .collect(),
    );

    let workers: Vec<_> =
        (0..CLIENTS).map(|index| tokio::spawn(worker(index, Arc::clone(&slots), Arc::clone(&shared)))).collect();
    let nemesis = {
        let (slots, shared) = (Arc::clone(&slots), Arc::clone(&shared));
        tokio::task::spawn_blocking(move || nemesis(ensemble, &slots, &shared, Duration::from_secs(seconds)))
    };
    let ensemble = nemesis.await.unwrap();
    shared.stop.store(true, Ordering::SeqCst);
    for worker in workers {
        worker.await.unwrap();
    }

    // Faults are over: every client must get the lock within the session timeout and a few
    // seconds (a partitioned client may first have to find out that its session expired).
    let recovery_budget = SESSION_TIMEOUT + Duration::from_secs(15);
    let mut slowest = Duration::ZERO;
    for (index, slot) in slots.iter().enumerate() {
        let started = Instant::now();
        let acquired = tokio::time::timeout(recovery_budget, async {
            loop {
                let client = current_client(slot).await;
                let mutex = InterProcessMutex::new(&client, &shared.lock_path).unwrap();
                match mutex.acquire_timeout(recovery_budget).await {
                    Ok(Some(guard)) => return guard.release().await.is_ok(),
                    Err(Error::SessionExpired | Error::SessionClosed) => *slot.client.lock().unwrap() = None,
                    _ => return false,
                }
            }
        })
        .await;
        assert_eq!(acquired, Ok(true), "client {index} did not get the lock back within {recovery_budget:?}");
        slowest = slowest.max(started.elapsed());
    }

    // No orphans: once every client is gone, nothing is left in the queue.
    for slot in slots.iter() {
        slot.client.lock().unwrap().take();
    }
    let observer = Client::connect(&ensemble.connect_string()).await.unwrap();
    let mut left = Vec::new();
    for _ in 0..200 {
        left = common::children(&observer, &shared.lock_path).await;
        if left.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    let overlaps = overlaps(&shared.sections.lock().unwrap());
    let counts = &shared.counts;
    let stale_held = counts.stale_accepted_while_held.load(Ordering::SeqCst);
    let violations = overlaps + stale_held + left.len() as u64;
    let get = |counter: &AtomicU64| counter.load(Ordering::SeqCst);
    // Written to stderr directly, past the test harness's capture, so CI logs always show it.
    let _ = writeln!(
        std::io::stderr(),
        "soak: {seconds}s of faults, {CLIENTS} clients, 3-node ensemble, session {}s | acquisitions={} timeouts={} \
         cancellations={} faults={} (leader kills={} leader pauses={} partitions={} expiries={}) losses signalled={} \
         reconnects={} stale writes refused after loss={} errors={} | violations={violations} (stale while held={stale_held} \
         overlaps={overlaps} orphans={}) | slowest recovery {:.1}s",
        SESSION_TIMEOUT.as_secs(),
        get(&counts.acquisitions),
        get(&counts.timeouts),
        get(&counts.cancellations),
        get(&counts.kills) + get(&counts.pauses) + get(&counts.partitions) + get(&counts.expiries),
        get(&counts.kills),
        get(&counts.pauses),
        get(&counts.partitions),
        get(&counts.expiries),
        get(&counts.losses),
        get(&counts.reconnects),
        get(&counts.stale_rejected_after_loss),
        get(&counts.other_errors),
        left.len(),
        slowest.as_secs_f64(),
    );
    assert!(get(&counts.acquisitions) > 0, "nobody ever got the lock");
    assert_eq!(violations, 0, "see the soak line above");
    drop(ensemble);
}

/// The worker's current client, reconnecting through its proxy when there is none.
async fn current_client(slot: &Slot) -> Client {
    loop {
        if let Some(client) = slot.client.lock().unwrap().clone() {
            return client;
        }
        if let Some(client) = connect_through(&slot.proxy).await {
            *slot.client.lock().unwrap() = Some(client.clone());
            return client;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn worker(index: usize, slots: Arc<Vec<Slot>>, shared: Arc<Shared>) {
    let slot = &slots[index];
    let counts = &shared.counts;
    let mut mutex: Option<(i64, InterProcessMutex)> = None;
    while !shared.stop.load(Ordering::SeqCst) {
        let client = current_client(slot).await;
        let session = client.session_id().0;
        if mutex.as_ref().is_none_or(|(owner, _)| *owner != session) {
            mutex = Some((session, InterProcessMutex::new(&client, &shared.lock_path).unwrap()));
        }
        let lock = &mutex.as_ref().unwrap().1;
        let attempt = if fastrand::u8(0..10) < 2 {
            // Cancel the acquire after a few milliseconds, wherever it is.
            match tokio::time::timeout(Duration::from_millis(fastrand::u64(1..50)), lock.acquire()).await {
                Ok(outcome) => outcome.map(Some),
                Err(_) => {
                    counts.cancellations.fetch_add(1, Ordering::SeqCst);
                    continue;
                }
            }
        } else {
            lock.acquire_timeout(Duration::from_millis(fastrand::u64(200..3_000))).await
        };
        match attempt {
            Ok(Some(guard)) => critical_section(index, guard, &shared).await,
            Ok(None) => {
                counts.timeouts.fetch_add(1, Ordering::SeqCst);
            }
            Err(Error::SessionExpired | Error::SessionClosed) => {
                counts.reconnects.fetch_add(1, Ordering::SeqCst);
                slot.client.lock().unwrap().take();
            }
            Err(err) => {
                counts.other_errors.fetch_add(1, Ordering::SeqCst);
                eprintln!("soak client {index}: {err}");
            }
        }
    }
}

async fn critical_section(index: usize, guard: LockGuard, shared: &Shared) {
    let counts = &shared.counts;
    counts.acquisitions.fetch_add(1, Ordering::SeqCst);
    let start = Instant::now();
    *shared.holder.lock().unwrap() = Some(index);
    let mut lost = !fenced_write(&guard, shared);
    if !lost {
        tokio::select! {
            _ = tokio::time::sleep(hold_time()) => {
                lost = !fenced_write(&guard, shared);
            }
            _ = guard.lost() => lost = true,
        }
    }
    if lost {
        counts.losses.fetch_add(1, Ordering::SeqCst);
    }
    shared.sections.lock().unwrap().push(Section { client: index, start, end: Instant::now() });
    *shared.holder.lock().unwrap() = None;
    // A lost lock's release reports the loss; that is expected here.
    let _ = guard.release().await;
}

/// Mostly short critical sections; one in ten long enough to meet a fault while holding.
fn hold_time() -> Duration {
    Duration::from_millis(if fastrand::u8(0..10) == 0 { fastrand::u64(2_000..12_000) } else { fastrand::u64(1..40) })
}

/// Writes with the guard's token while it believes it holds; `false` once it knows it does not.
fn fenced_write(guard: &LockGuard, shared: &Shared) -> bool {
    let mut register = shared.register.lock().unwrap();
    let believed_held = guard.is_held();
    let accepted = register.write(guard.fencing_token());
    match (believed_held, accepted) {
        (true, true) => true,
        (true, false) => {
            // The holder was not told: a stale token reached the resource.
            shared.counts.stale_accepted_while_held.fetch_add(1, Ordering::SeqCst);
            eprintln!("soak: stale token {} refused from a holder that believed it held", guard.fencing_token());
            false
        }
        (false, accepted) => {
            if !accepted {
                shared.counts.stale_rejected_after_loss.fetch_add(1, Ordering::SeqCst);
            }
            false
        }
    }
}

/// Pairs of sections of different clients that overlap in time. Each section ends when its
/// holder stopped working or learned of its loss, so any overlap is a violation.
fn overlaps(sections: &[Section]) -> u64 {
    let mut sorted: Vec<&Section> = sections.iter().collect();
    sorted.sort_by_key(|s| s.start);
    let mut count = 0;
    let mut latest: Option<&Section> = None;
    for section in sorted {
        if let Some(previous) = latest {
            if section.start < previous.end && section.client != previous.client {
                eprintln!("soak: client {} started while client {} still held", section.client, previous.client);
                count += 1;
            }
        }
        if latest.is_none_or(|previous| section.end > previous.end) {
            latest = Some(section);
        }
    }
    count
}

/// Injects faults until `duration` has passed, then heals everything and returns the ensemble.
fn nemesis(mut ensemble: Ensemble, slots: &[Slot], shared: &Shared, duration: Duration) -> Ensemble {
    let counts = &shared.counts;
    let started = Instant::now();
    while started.elapsed() < duration {
        std::thread::sleep(Duration::from_millis(fastrand::u64(1_000..3_000)));
        match fastrand::u8(0..4) {
            0 => {
                if let Some(leader) = ensemble.leader() {
                    counts.kills.fetch_add(1, Ordering::SeqCst);
                    ensemble.kill(leader);
                    std::thread::sleep(Duration::from_millis(fastrand::u64(500..3_000)));
                    ensemble.restart(leader).expect("restart the killed leader");
                }
            }
            1 => {
                if let Some(leader) = ensemble.leader() {
                    counts.pauses.fetch_add(1, Ordering::SeqCst);
                    ensemble.pause(leader);
                    std::thread::sleep(Duration::from_millis(fastrand::u64(500..4_000)));
                    ensemble.resume(leader);
                }
            }
            2 => {
                // Shorter than the session timeout: sometimes within the loss grace, sometimes past it.
                let slot = &slots[victim(slots.len(), shared)];
                counts.partitions.fetch_add(1, Ordering::SeqCst);
                slot.proxy.blackhole();
                std::thread::sleep(Duration::from_millis(fastrand::u64(300..4_000)));
                slot.proxy.heal();
            }
            _ => {
                // Past the session timeout: the server expires the session.
                let slot = &slots[victim(slots.len(), shared)];
                counts.expiries.fetch_add(1, Ordering::SeqCst);
                slot.proxy.blackhole();
                std::thread::sleep(SESSION_TIMEOUT + Duration::from_millis(fastrand::u64(1_500..4_000)));
                slot.proxy.heal();
            }
        }
        let _ = ensemble.wait_for_quorum(Duration::from_secs(60));
    }
    for slot in slots {
        slot.proxy.heal();
    }
    ensemble.wait_for_quorum(Duration::from_secs(60)).expect("the ensemble recovers");
    ensemble
}

/// The client to partition: the current holder half of the time, else anyone.
fn victim(clients: usize, shared: &Shared) -> usize {
    let holder = *shared.holder.lock().unwrap();
    match holder {
        Some(holder) if fastrand::bool() => holder,
        _ => fastrand::usize(0..clients),
    }
}
