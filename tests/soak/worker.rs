//! A client's rounds: pick a recipe, acquire it (with a timeout, or cancelled), use the
//! resources it protects through their fences, and record the critical section.

use std::sync::Arc;
use std::time::{Duration, Instant};

use fastrand::Rng;
use tokio::sync::watch;

use super::client::Hold;
use super::recipe::{Failed, Held, Locks, Recipe};
use super::tally::bump;
use super::Run;

/// One critical section in this many is long enough to meet a fault while holding.
const LONG_HOLD_ONE_IN: u8 = 10;

pub async fn work(index: usize, run: &Run, rng: &mut Rng) {
    let slot = &run.slots[index];
    let mut stop = run.stop.subscribe();
    let mut locks: Option<(i64, Arc<Locks>)> = None;
    let on_session = slot.session_locks();
    while !*stop.borrow() {
        let client = slot.client().await;
        let session = client.session_id().0;
        let locks = match &on_session {
            // Built once, on a `Session`: the same objects through every expiry.
            Some(locks) => locks,
            None => {
                if locks.as_ref().is_none_or(|(owner, _)| *owner != session) {
                    locks = Some((session, Arc::new(Locks::new(&client, &run.paths))));
                }
                &locks.as_ref().unwrap().1
            }
        };
        let recipe = Recipe::LOCKS[rng.usize(..Recipe::LOCKS.len())];
        let on_session = on_session.is_some().then_some(session);
        if recipe == Recipe::HandoffMutex {
            // Three side by side on one lock object: the hold passes between them.
            let [mut a, mut b, mut c] = std::array::from_fn(|_| (Rng::with_seed(rng.u64(..)), stop.clone()));
            tokio::join!(
                round(index, recipe, locks, on_session, run, &mut a.0, &mut a.1),
                round(index, recipe, locks, on_session, run, &mut b.0, &mut b.1),
                round(index, recipe, locks, on_session, run, &mut c.0, &mut c.1),
            );
        } else {
            round(index, recipe, locks, on_session, run, rng, &mut stop).await;
        }
    }
}

/// One acquire of `recipe` (with a timeout, or cancelled) and, if it holds, its critical
/// section; `on_session` is the `Session`'s current session id, for a `Session`'s slot.
async fn round(
    index: usize,
    recipe: Recipe,
    locks: &Locks,
    on_session: Option<i64>,
    run: &Run,
    rng: &mut Rng,
    stop: &mut watch::Receiver<bool>,
) {
    let counts = run.tally.of(recipe);
    let invoked = Instant::now();
    let attempt = if rng.u8(0..10) < 2 {
        // Cancel the acquire after a few milliseconds, wherever it is.
        let cancel_after = Duration::from_millis(rng.u64(1..50));
        match tokio::time::timeout(cancel_after, locks.acquire_timeout(recipe, Duration::from_secs(60))).await {
            Ok(outcome) => outcome,
            Err(_) => return bump(&counts.cancellations),
        }
    } else {
        locks.acquire_timeout(recipe, Duration::from_millis(rng.u64(200..3_000))).await
    };
    match attempt {
        Ok(Some(held)) => {
            if let Some(session) = on_session {
                *run.slots[index].held_on.lock().unwrap().entry(session).or_default() += 1;
            }
            critical_section(index, recipe, held, invoked, run, rng, stop).await
        }
        Ok(None) => bump(&counts.timeouts),
        Err(Failed { err, nodes }) => run.failed(index, recipe, "acquire", err, &nodes),
    }
}

async fn critical_section(
    index: usize,
    recipe: Recipe,
    held: Held,
    invoked: Instant,
    run: &Run,
    rng: &mut Rng,
    stop: &mut watch::Receiver<bool>,
) {
    let counts = run.tally.of(recipe);
    bump(&counts.acquisitions);
    if held.parts().iter().any(|part| recipe.passed_on(part.token)) {
        bump(&counts.handed_on);
    }
    let start = Instant::now();
    let hold = hold_time(rng, LONG_HOLD_ONE_IN);
    let holding = run.slots[index].holding(Hold::Lock, start + hold);
    let nodes = held.nodes();
    // Registered after `start`: a node the operator takes from here went during the section.
    let marked = run.holders.mark(recipe, nodes.clone());
    let writer = run.fences.writer();
    let access = || run.access(index, recipe, writer, || held.parts());
    let mut told_lost = !access();
    if !told_lost {
        tokio::select! {
            _ = tokio::time::sleep(hold) => told_lost = !access(),
            _ = held.lost() => told_lost = true,
            _ = async { let _ = stop.wait_for(|stopped| *stopped).await; } => {}
        }
    }
    let end = Instant::now();
    drop((holding, marked));
    if told_lost {
        bump(&counts.losses);
    }
    run.history.lock().unwrap().extend(held.sections(index, recipe, invoked, start, end, told_lost));
    // A lost hold's release reports the loss; `failed` expects that.
    if let Err(err) = held.release().await {
        run.failed(index, recipe, "release", err, &nodes);
    }
}

/// Mostly short holds; one in `one_in` long enough to meet a fault while holding.
pub fn hold_time(rng: &mut Rng, one_in: u8) -> Duration {
    Duration::from_millis(if rng.u8(0..one_in) == 0 { rng.u64(2_000..12_000) } else { rng.u64(1..40) })
}
