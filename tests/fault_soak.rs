//! The fault soak: several clients, each behind its own proxy to a 3-node ensemble, take every
//! lock recipe at once (each round a recipe at random: the mutex, the mutex with local handoff
//! (three acquires of the client side by side, passing the hold between them), either side of
//! the read-write lock, a semaphore of two leases, the semaphore mutex, a multi-lock over two
//! paths; random timeouts, random cancellations) and take part in two leader elections all along (a latch
//! whose leader leaves after its term and joins again, a selector whose closure leads for one
//! term), while a nemesis kills and pauses the leader, partitions clients, expires their
//! sessions and loses the server's replies to them, and an operator deletes queue nodes of every
//! recipe (a holder's and a waiter's in turn). Every critical section and every term of
//! leadership goes through a fenced register per exclusive lock path or election (a leader
//! writes its epoch, again and again during its term) and into one shared history. The last
//! client is a `zklock::Session` whose lock objects are built once, before the faults, and used
//! through every expiry; once the faults stop its session is expired once more, and the same
//! objects must take every lock again (on a new session: the line's "on a Session" row).
//!
//! The run then checks each recipe's rule against the history (exclusion for the mutexes, each
//! path of the multi-lock and each election's leaders, readers-writers for the read-write lock,
//! at most two leases for the semaphore), that no holder's access was refused by a fence while it
//! believed it held (tokens strictly increase from one holder to the next), that no error other
//! than a documented loss came back, that the faults really happened (a partition or lost
//! replies only count when they lost some of the client's traffic) and every recipe's holders
//! were told of a loss, that every client gets every lock back and is elected again in every
//! election once the faults stop, and that no node is left under any lock or election path.
//!
//! The operator's deletions are the only ones forgiven, and only those known to have run (a
//! delete whose reply was lost is settled by a mark in its transaction): a hold on a node it
//! deleted ends, for the check, when the delete was sent (no client can know of it in time;
//! fencing protects there), and a loss for `NodeDeleted` and a fence's
//! refusal are accepted only for a node it deleted. A hold on a node that the operator had
//! deleted while its owner waited is a violation (a ghost holder), and so is an overlap with it,
//! and so is a hold passed on within a client (local handoff) later than the notification
//! window after the deletion. The operator deletes waiters' nodes with a check, together with
//! the node they wait for in one transaction, and with their whole queue as `zkCli deleteall`
//! does.
//!
//! Sessions expire the way they do in production: a client is partitioned for longer than the
//! session timeout and the server expires it. (Curator's KillSession trick, which closes a
//! session from outside at once, is not a fault a holder can detect in time, any more than an
//! operator deleting its node; only fencing protects there. The soak uses it once, after the
//! faults, on the `Session`'s client, where what is checked is that the objects recover.)
//!
//! Deterministic in count and bounded in time: `ZKLOCK_SOAK_ROUNDS` rounds (default 2, about
//! half a minute each) of every fault kind once and, meanwhile, of the operator deleting a
//! holder's and a waiter's node of every recipe (each it finds within 5 s), then at most about
//! half a minute of recovery and checks. `ZKLOCK_SOAK_SEED` fixes the random choices (the timing
//! still varies). Prints one summary line beginning with `soak:`.

mod common;
mod soak;

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fastrand::Rng;
use tokio::sync::watch;
use zklock::Error;
use zklock_testcontainers::{expire_session, Ensemble, Proxy};
use zookeeper_client::Client;

use soak::client::{Slot, SESSION_TIMEOUT};
use soak::fence::Fences;
use soak::history::check;
use soak::operator::{self, Claim, Deletions, Holders};
use soak::recipe::{Failed, Locks, Paths, Recipe, Resource, MAX_LEASES};
use soak::tally::{get, Tally};
use soak::{election, nemesis, worker, Run};

const CLIENTS: usize = 5;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_recipe_keeps_its_rule_through_faults() {
    let rounds: usize = std::env::var("ZKLOCK_SOAK_ROUNDS").ok().and_then(|s| s.parse().ok()).unwrap_or(2);
    let seed: u64 =
        std::env::var("ZKLOCK_SOAK_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| fastrand::u64(..));
    // Said first: a worker's panic ends the run before its summary. The seed replays the random
    // choices (not the timings).
    eprintln!("soak: seed {seed} (ZKLOCK_SOAK_SEED={seed} chooses the same again)");
    let ensemble = Ensemble::start(3).await.expect("start an ensemble");
    let paths = Paths::unique();
    // The last client is a `zklock::Session`, its locks built once for the whole run.
    let mut slots: Vec<Slot> =
        (0..CLIENTS - 1).map(|_| Slot::new(Proxy::start_many(&ensemble.addresses()).unwrap())).collect();
    slots.push(Slot::on_session(Proxy::start_many(&ensemble.addresses()).unwrap(), &paths).await);
    let run = Arc::new(Run {
        paths,
        slots,
        tally: Tally::default(),
        fences: Fences::default(),
        history: Mutex::default(),
        holders: Holders::default(),
        deletions: Deletions::default(),
        claims: Mutex::default(),
        stop: watch::Sender::new(false),
        stop_elections: watch::Sender::new(false),
    });

    let workers: Vec<_> = (0..CLIENTS)
        .map(|index| {
            let run = Arc::clone(&run);
            let mut rng = Rng::with_seed(seed.wrapping_add(1 + index as u64));
            tokio::spawn(async move { worker::work(index, &run, &mut rng).await })
        })
        .collect();
    let participants: Vec<_> = (0..CLIENTS)
        .flat_map(|index| {
            let seed = seed.wrapping_add(1 + (CLIENTS + 2 * index) as u64);
            let latch = {
                let run = Arc::clone(&run);
                let mut rng = Rng::with_seed(seed);
                tokio::spawn(async move { election::latch(index, &run, &mut rng).await })
            };
            let selector =
                tokio::spawn(election::selector(index, Arc::clone(&run), Rng::with_seed(seed.wrapping_add(1))));
            [latch, selector]
        })
        .collect();
    let operator = {
        let (run, connect_string) = (Arc::clone(&run), ensemble.connect_string());
        let mut rng = Rng::with_seed(seed.wrapping_sub(1));
        tokio::spawn(async move { operator::run(connect_string, &run, rounds, &mut rng).await })
    };
    let faults_started = Instant::now();
    let nemesis = {
        let run = Arc::clone(&run);
        let mut rng = Rng::with_seed(seed);
        tokio::task::spawn_blocking(move || nemesis::run(ensemble, &run.slots, &run.tally.faults, rounds, &mut rng))
    };
    let ensemble = nemesis.await.unwrap();
    operator.await.unwrap();
    let faults_took = faults_started.elapsed();
    let healed = Instant::now();
    run.stop.send_replace(true);
    for worker in workers {
        worker.await.unwrap();
    }

    // Faults are over: every client must get every lock back, and be elected again in every
    // election (which went on meanwhile), within the session timeout and a few seconds (a
    // partitioned client may first have to find out that its session expired).
    let recovery_started = Instant::now();
    let deadline = recovery_started + SESSION_TIMEOUT + Duration::from_secs(20);
    // The client on a `Session` meets one expiry more, whatever the nemesis chose: its lock
    // objects, built before the faults, must take every lock again below (on a new session).
    let on_session = &run.slots[CLIENTS - 1];
    let killed = on_session.client().await;
    // Killed from outside, its nodes go at once, before its holders and leaders can know (its
    // elections go on): forgiven as the operator's deletions are, from the moment it is cut off
    // (nothing of the session's gets through after that, so the nodes listed are all it has).
    on_session.proxy.cut();
    let killed_at = Instant::now();
    let observer = Client::connect(&ensemble.connect_string()).await.unwrap();
    for (_, path) in run.paths.all() {
        for node in ephemerals_under(&observer, path, Some(killed.session_id().0)).await {
            run.deletions.forgive(&node, killed_at);
        }
    }
    if let Err(err) = expire_session(&killed, &on_session.proxy).await {
        eprintln!("soak: expiring the Session's client: {err}");
    }
    let recoveries: Vec<_> = (0..CLIENTS)
        .map(|index| {
            let run = Arc::clone(&run);
            tokio::spawn(async move { recover(&run.slots[index], &run.paths, deadline).await })
        })
        .collect();
    let mut unrecovered = Vec::new();
    for (index, recovery) in recoveries.into_iter().enumerate() {
        unrecovered.extend(recovery.await.unwrap().into_iter().map(|recipe| (index, recipe)));
    }
    unrecovered.extend(elected_again(&run, healed, deadline).await);
    let recovery_took = recovery_started.elapsed();
    // The shared rules once more, after the faults and whatever the random rounds met: readers
    // hold together, and the semaphore's leases are all taken at once (the peaks checked below).
    for (recipe, parties) in [(Recipe::Read, 2), (Recipe::Semaphore, MAX_LEASES)] {
        if let Err(err) = hold_together(&run, recipe, parties, deadline).await {
            eprintln!("soak: holding the {} together: {err}", recipe.name());
            unrecovered.push((0, recipe));
        }
    }
    // A lock none of whose holders was told of a loss in the random rounds (the operator's
    // deletions met holds just as they ended, say) is shown one now, so that every run tests
    // every lock's loss signal.
    for recipe in Recipe::LOCKS {
        if get(&run.tally.of(recipe).losses) == 0 {
            if let Err(err) = told_of_a_deletion(&run, recipe, deadline).await {
                eprintln!("soak: deleting a holder's node of the {}: {err}", recipe.name());
                unrecovered.push((0, recipe));
            }
        }
    }
    run.stop_elections.send_replace(true);
    for participant in participants {
        participant.await.unwrap();
    }

    // No orphans: once every client is gone, no lock, lease or election node is left.
    for slot in &run.slots {
        slot.forget_client();
    }
    let mut orphans = Vec::new();
    for _ in 0..200 {
        orphans = Vec::new();
        for (resource, path) in run.paths.all() {
            orphans.extend(ephemerals_under(&observer, path, None).await.into_iter().map(|node| (resource, node)));
        }
        if orphans.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    let deletions = &run.deletions;
    let checked = check(&run.history.lock().unwrap(), |node| deletions.of(node));
    let claims = run.claims.lock().unwrap();
    let unforgiven: Vec<&Claim> = claims.iter().filter(|claim| !claim.forgiven(deletions)).collect();
    for claim in &unforgiven {
        eprintln!(
            "soak: client {} ({}) {} on {:?}, which the operator did not delete",
            claim.client,
            claim.recipe.name(),
            claim.what,
            claim.nodes
        );
    }
    let conflicts = &checked.conflicts;
    for conflict in conflicts {
        eprintln!("soak: conflict: {}", conflict.description);
    }
    for (index, recipe) in &unrecovered {
        match Recipe::ELECTIONS.contains(recipe) {
            true => eprintln!("soak: client {index} was not elected again in the {} after the faults", recipe.name()),
            false => eprintln!("soak: client {index} did not get the {} back after the faults", recipe.name()),
        }
    }
    for (_, node) in &orphans {
        eprintln!("soak: orphan {node}");
    }
    let tally = &run.tally;
    let violations_of = |recipe: Recipe| {
        let counts = tally.of(recipe);
        get(&counts.errors)
            + unforgiven.iter().filter(|claim| claim.recipe == recipe).count() as u64
            + conflicts.iter().filter(|conflict| conflict.recipe == recipe).count() as u64
            + unrecovered.iter().filter(|(_, unrecovered)| *unrecovered == recipe).count() as u64
            + orphans.iter().filter(|(resource, node)| orphan_recipe(*resource, node) == recipe).count() as u64
    };
    let per_recipe: Vec<String> = Recipe::all()
        .map(|recipe| {
            let counts = tally.of(recipe);
            if Recipe::ELECTIONS.contains(&recipe) {
                let unserved = unrecovered.iter().filter(|(_, unserved)| *unserved == recipe).count();
                return format!(
                    "{} terms={} losses={} elected after heal={}/{CLIENTS} violations={}",
                    recipe.name(),
                    get(&counts.acquisitions),
                    get(&counts.losses),
                    CLIENTS - unserved,
                    violations_of(recipe)
                );
            }
            let handed_on = match recipe {
                Recipe::HandoffMutex => format!(" handed on={}", get(&counts.handed_on)),
                _ => String::new(),
            };
            format!(
                "{} acq={}{handed_on} timeouts={} cancels={} losses={} violations={}",
                recipe.name(),
                get(&counts.acquisitions),
                get(&counts.timeouts),
                get(&counts.cancellations),
                get(&counts.losses),
                violations_of(recipe)
            )
        })
        .collect();
    // The same history, written to a file and checked by the checker users run on theirs.
    let history_path = std::env::var_os("ZKLOCK_SOAK_HISTORY")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join(format!("zklock-soak-history-{seed}.jsonl")));
    let history = soak::history::write_and_check(&checked.kept, &history_path).expect("the history is written");
    for violation in &history.violations {
        eprintln!("soak: zklock-history: {violation}");
    }
    let violations: u64 = Recipe::all().map(violations_of).sum::<u64>() + history.violations.len() as u64;
    let on_session_holds = run.slots[CLIENTS - 1].held_on.lock().unwrap().clone();
    let faults = &tally.faults;
    let peak = |resource| checked.peaks.get(&resource).copied().unwrap_or(0);
    let (readers, leases) = (peak(Resource::ReadWrite), peak(Resource::Semaphore));
    let stale_after_loss: u64 = Recipe::all().map(|recipe| get(&tally.of(recipe).stale_after_loss)).sum();
    // Written to stderr directly, past the test harness's capture, so CI logs always show it.
    let _ = writeln!(
        std::io::stderr(),
        "soak: seed={seed} {rounds} rounds of faults in {:.1}s, {CLIENTS} clients, 3-node ensemble, session {}s | {} | faults: \
         leader kills={} leader pauses={} partitions={} expiries={} lost replies={} | operator deletions={} (holders={} \
         waiters={}, of which with their predecessor={} whole queues={}; deletions forgiven={} passes forgiven={}) | losses signalled={} reconnects={} fenced after loss={stale_after_loss} | most \
         at once: readers={readers} leases={leases} | on a Session (client {}): acq={} on {} sessions | \
         violations={violations} (conflicts={} unrecovered={} orphans={} unforgiven deletions={} by zklock-history={}) | \
         history {} ({} invokes, {} holds) | recovery {:.1}s",
        faults_took.as_secs_f64(),
        SESSION_TIMEOUT.as_secs(),
        per_recipe.join(" | "),
        get(&faults.kills),
        get(&faults.pauses),
        get(&faults.partitions),
        get(&faults.expiries),
        get(&faults.lost_replies),
        deletions.count(),
        get(&deletions.holders),
        get(&deletions.waiters),
        get(&deletions.with_blocker),
        get(&deletions.whole_queues),
        claims.len() - unforgiven.len(),
        checked.passes_forgiven,
        tally.losses(),
        get(&tally.reconnects),
        CLIENTS - 1,
        on_session_holds.values().sum::<u64>(),
        on_session_holds.len(),
        conflicts.len(),
        unrecovered.len(),
        orphans.len(),
        unforgiven.len(),
        history.violations.len(),
        history_path.display(),
        history.invokes,
        history.holds,
        recovery_took.as_secs_f64(),
    );
    assert_eq!(violations, 0, "see the soak line above");
    assert!(
        on_session_holds.len() >= 2,
        "the Session's lock objects never held on a second session: {on_session_holds:?}"
    );
    for recipe in Recipe::all() {
        assert!(get(&tally.of(recipe).acquisitions) > 0, "nobody ever got the {}", recipe.name());
    }
    for (fault, count) in [
        ("leader kills", &faults.kills),
        ("leader pauses", &faults.pauses),
        ("partitions", &faults.partitions),
        ("expiries", &faults.expiries),
        ("lost replies", &faults.lost_replies),
    ] {
        assert!(get(count) > 0, "no {fault} happened: the run did not test them");
    }
    for recipe in Recipe::all() {
        let losses = get(&tally.of(recipe).losses);
        assert!(losses > 0, "no {} holder was told of a loss: the run did not test its losses", recipe.name());
    }
    assert!(deletions.count() > 0, "the operator deleted no node: the run did not test deletions");
    assert!(readers > 1, "readers never shared the read-write lock: the run did not test its rule");
    assert_eq!(leases, MAX_LEASES, "the semaphore's leases were never all taken: the run did not test its rule");
    drop(ensemble);
}

/// Has `parties` clients hold `recipe` at once, records their sections, and releases them: the
/// recipe's sharing is shown whatever the random rounds met (a broken rule still fails the
/// check: the sections overlap).
async fn hold_together(run: &Run, recipe: Recipe, parties: usize, deadline: Instant) -> Result<(), String> {
    let mut holds = Vec::new();
    for index in 0..parties {
        let client = run.slots[index].client().await;
        let locks = Locks::new(&client, &run.paths);
        let patience = deadline.saturating_duration_since(Instant::now()).max(Duration::from_secs(5));
        let invoked = Instant::now();
        match locks.acquire_timeout(recipe, patience).await {
            Ok(Some(held)) => holds.push((index, held, invoked)),
            Ok(None) => return Err(format!("client {index} could not take it beside {}", holds.len())),
            Err(err) => return Err(format!("client {index}: {err}")),
        }
    }
    let start = Instant::now();
    tokio::time::sleep(Duration::from_millis(10)).await;
    let end = Instant::now();
    let history =
        holds.iter().flat_map(|(index, held, invoked)| held.sections(*index, recipe, *invoked, start, end, false));
    run.history.lock().unwrap().extend(history);
    for (index, held, _) in holds {
        held.release().await.map_err(|err| format!("client {index} releasing: {err}"))?;
    }
    Ok(())
}

/// Takes `recipe` through one client, has the operator (another client) delete the hold's node,
/// and checks that the holder is told of the loss.
async fn told_of_a_deletion(run: &Run, recipe: Recipe, deadline: Instant) -> Result<(), String> {
    let (client, operator) = (run.slots[0].client().await, run.slots[1].client().await);
    let patience = deadline.saturating_duration_since(Instant::now()).max(Duration::from_secs(5));
    let invoked = Instant::now();
    let held = match Locks::new(&client, &run.paths).acquire_timeout(recipe, patience).await {
        Ok(Some(held)) => held,
        Ok(None) => return Err("could not take it".to_owned()),
        Err(err) => return Err(err.to_string()),
    };
    let start = Instant::now();
    let nodes = held.nodes();
    operator::delete_held(&operator, run, &nodes[0]).await;
    let told = tokio::time::timeout(Duration::from_secs(10), held.lost()).await.is_ok();
    let end = Instant::now();
    run.history.lock().unwrap().extend(held.sections(0, recipe, invoked, start, end, told));
    // The release reports the loss.
    let _ = held.release().await;
    if !told {
        return Err(format!("the holder of {} was never told", nodes[0]));
    }
    soak::tally::bump(&run.tally.of(recipe).losses);
    Ok(())
}

/// Takes and releases every lock once through the slot's client (a new one if its session
/// ended; on a `Session`, its own lock objects) before `deadline`; returns the locks it could not
/// get back.
async fn recover(slot: &Slot, paths: &Paths, deadline: Instant) -> Vec<Recipe> {
    let mut unrecovered = Vec::new();
    for recipe in Recipe::LOCKS {
        let once = async {
            loop {
                // On a session, the very objects its worker used through the faults.
                let locks = match slot.session_locks() {
                    Some(locks) => locks,
                    None => Arc::new(Locks::new(&slot.client().await, paths)),
                };
                let outcome = locks.acquire_timeout(recipe, deadline.saturating_duration_since(Instant::now())).await;
                match outcome {
                    Ok(Some(held)) => {
                        if slot.session_locks().is_some() {
                            let session = slot.client().await.session_id().0;
                            *slot.held_on.lock().unwrap().entry(session).or_default() += 1;
                        }
                        return held.release().await.map(|()| true);
                    }
                    Ok(None) => return Ok(false),
                    Err(Failed { err: Error::SessionExpired | Error::SessionClosed, .. }) => {
                        slot.forget_ended_client();
                    }
                    Err(failed) => return Err(failed.err),
                }
            }
        };
        match tokio::time::timeout_at(deadline.into(), once).await {
            Ok(Ok(true)) => {}
            Ok(Err(err)) => {
                eprintln!("soak: recovering the {}: {err}", recipe.name());
                unrecovered.push(recipe);
            }
            _ => unrecovered.push(recipe),
        }
    }
    unrecovered
}

/// Waits until every client has led a term in every election since `healed` without being told
/// it lost, or until `deadline`; returns the clients and elections for which that did not happen.
async fn elected_again(run: &Run, healed: Instant, deadline: Instant) -> Vec<(usize, Recipe)> {
    loop {
        let unserved: Vec<(usize, Recipe)> = {
            let history = run.history.lock().unwrap();
            (0..CLIENTS)
                .flat_map(|index| Recipe::ELECTIONS.map(|recipe| (index, recipe)))
                .filter(|&(index, recipe)| {
                    !history.iter().any(|section| {
                        section.client == index
                            && section.recipe == recipe
                            && section.start >= healed
                            && !section.told_lost
                    })
                })
                .collect()
        };
        if unserved.is_empty() || Instant::now() >= deadline {
            return unserved;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The ephemeral nodes anywhere under `path` (a semaphore keeps its nodes one level down), of
/// session `owner` only when given.
async fn ephemerals_under(client: &Client, path: &str, owner: Option<i64>) -> Vec<String> {
    let mut found = Vec::new();
    let mut to_list = vec![path.to_owned()];
    while let Some(parent) = to_list.pop() {
        for child in common::children(client, &parent).await {
            let child = format!("{parent}/{child}");
            match client.check_stat(&child).await {
                Ok(Some(stat)) if stat.ephemeral_owner != 0 => {
                    found.extend(owner.is_none_or(|owner| owner == stat.ephemeral_owner).then_some(child))
                }
                Ok(Some(_)) => to_list.push(child),
                _ => {}
            }
        }
    }
    found
}

/// The recipe that left `node` under the path of `resource`.
fn orphan_recipe(resource: Resource, node: &str) -> Recipe {
    match resource {
        Resource::Mutex => Recipe::Mutex,
        Resource::HandoffMutex => Recipe::HandoffMutex,
        Resource::ReadWrite if node.contains("__READ__") => Recipe::Read,
        Resource::ReadWrite => Recipe::Write,
        Resource::Semaphore => Recipe::Semaphore,
        Resource::SemaphoreMutex => Recipe::SemaphoreMutex,
        Resource::Multi(_) => Recipe::MultiLock,
        Resource::Latch => Recipe::LeaderLatch,
        Resource::Selector => Recipe::LeaderSelector,
    }
}
