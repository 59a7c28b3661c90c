//! The election participants: every client takes part in a leader latch's election and in a
//! leader selector's all along. While it leads it writes through the election's fenced register
//! with its leadership's epoch as the token, and it stops the moment it is told it lost.

use std::sync::Arc;
use std::time::{Duration, Instant};

use fastrand::Rng;
use zklock::election::Leadership;
use zklock::hold::Hold as _;
use zklock::{LeaderLatch, LeaderSelector, LossReason};

use super::client::{Hold, Holding};
use super::history::Section;
use super::operator::HolderMark;
use super::recipe::{Part, Recipe, Resource};
use super::tally::bump;
use super::worker::hold_time;
use super::Run;

/// One term in this many is long enough to meet a fault while leading (the nemesis cuts off
/// long holders), the rest are short so that leaders take many turns.
const LONG_TERM_ONE_IN: u8 = 3;

/// The longest term once the faults have stopped.
const SHORT_TERM: Duration = Duration::from_millis(40);

/// How often a leader writes to the register during its term: a stale leader that still
/// believes it leads meets the next leader's writes.
const WRITE_EVERY: Duration = Duration::from_millis(100);

/// Takes part in the latch's election until the elections stop. After a full term it leaves
/// and joins again with a new latch, so that leaders take turns; after a loss the latch is back
/// in the election by itself. A client whose session ended is replaced, and its latch with it:
/// a latch cannot rejoin on an ended session.
pub async fn latch(index: usize, run: &Run, rng: &mut Rng) {
    let recipe = Recipe::LeaderLatch;
    let mut stop = run.stop_elections.subscribe();
    while !*stop.borrow() {
        let client = run.slots[index].client().await;
        let latch = LeaderLatch::new(&client, &run.paths.latch, &participant_id(index)).unwrap();
        if let Err(err) = latch.start().await {
            run.failed(index, recipe, "joining", err, &[]);
            continue;
        }
        // The term this latch led last: a leader whose fenced write was refused has lost it,
        // but the latch hears of its node's deletion only through the node watch, and until
        // then hands out that same term again.
        let mut last_epoch = None;
        loop {
            let elected = tokio::select! {
                elected = latch.await_leadership() => elected,
                _ = async { let _ = stop.wait_for(|stopped| *stopped).await; } => break,
            };
            match elected {
                // A term that ended before we looked (its end is still being handled, and then
                // the latch queues again by itself), or the one we were just told we lost:
                // nobody leads on it, so it is no term of ours. Wait for the latch to see it end.
                Ok(leadership) if !leadership.is_held() || last_epoch == Some(leadership.fencing_token()) => {
                    let _ = tokio::time::timeout(Duration::from_secs(2), leadership.ended()).await;
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                Ok(leadership) => {
                    last_epoch = Some(leadership.fencing_token());
                    if !lead(run, index, recipe, leadership, hold_time(rng, LONG_TERM_ONE_IN)).await {
                        break;
                    }
                }
                Err(err) => {
                    run.failed(index, recipe, "awaiting leadership", err, &[]);
                    break;
                }
            }
        }
        if let Err(err) = latch.close().await {
            run.failed(index, recipe, "leaving", err, &[]);
        }
    }
}

/// Takes part in the selector's election (auto-requeue) until the elections stop: each time it
/// is elected, its closure leads for one term and returns. A client whose session ended is
/// replaced, and its selector with it.
pub async fn selector(index: usize, run: Arc<Run>, mut rng: Rng) {
    let recipe = Recipe::LeaderSelector;
    let mut stop = run.stop_elections.subscribe();
    while !*stop.borrow() {
        let client = run.slots[index].client().await;
        let selector = LeaderSelector::builder(&client, &run.paths.selector, &participant_id(index))
            .auto_requeue(true)
            .build()
            .unwrap();
        let lead_one_term = {
            let run = Arc::clone(&run);
            let mut rng = Rng::with_seed(rng.u64(..));
            move |leadership| {
                let run = Arc::clone(&run);
                let term = hold_time(&mut rng, LONG_TERM_ONE_IN);
                async move {
                    lead(&run, index, recipe, leadership, term).await;
                }
            }
        };
        if let Err(err) = selector.start(lead_one_term).await {
            run.failed(index, recipe, "joining", err, &[]);
            continue;
        }
        let mut session = client.state_watcher();
        tokio::select! {
            _ = async { let _ = stop.wait_for(|stopped| *stopped).await; } => {}
            _ = async { while !client.state().is_terminated() { session.changed().await; } } => {}
        }
        // Reports the session's end, if that is what ended the selector.
        if let Err(err) = selector.close().await {
            run.failed(index, recipe, "leaving", err, &[]);
        }
    }
}

/// The name client `index` takes part under.
fn participant_id(index: usize) -> String {
    format!("client-{index}")
}

/// One term of `leadership` of `recipe`'s election, planned to last `length`: writes to the
/// register at once, then every [`WRITE_EVERY`] and at the end, unless told it lost; returns
/// whether it was. Once the faults stop, terms are short (a long one under way ends then), so
/// that every participant is elected again soon after.
async fn lead(run: &Run, index: usize, recipe: Recipe, leadership: Leadership, length: Duration) -> bool {
    let mut stop = run.stop.subscribe();
    let during_faults = !*stop.borrow();
    let length = if during_faults { length } else { length.min(SHORT_TERM) };
    let mut term = Term::begin(run, index, recipe, leadership.clone(), length);
    let resource = term.resource();
    let writer = run.fences.writer();
    let node = leadership.node_path().to_owned();
    let write = || {
        run.access(index, recipe, writer, || {
            let believed_held = leadership.is_held();
            vec![Part { resource, node: node.clone(), token: leadership.fencing_token(), believed_held }]
        })
    };
    let until = term.start + length;
    let mut told_lost = !write();
    while !told_lost && Instant::now() < until {
        let next = (Instant::now() + WRITE_EVERY).min(until);
        tokio::select! {
            _ = tokio::time::sleep_until(next.into()) => told_lost = !write(),
            // Ends however the term ends (a selector closed as the faults stop too): only a loss counts.
            end = leadership.ended() => {
                told_lost = end.loss().is_some();
                term.reason = end.loss();
                break;
            }
            _ = async { let _ = stop.wait_for(|stopped| *stopped).await; }, if during_faults => break,
        }
    }
    term.told_lost = told_lost;
    told_lost
}

/// A term under way; recorded in the history when it ends, also when the selector cancels it
/// (on a loss, or when it is closed).
struct Term<'a> {
    run: &'a Run,
    client: usize,
    recipe: Recipe,
    leadership: Leadership,
    start: Instant,
    told_lost: bool,
    /// The loss it was told of, if `lost()` said.
    reason: Option<LossReason>,
    _holding: Holding<'a>,
    _marked: HolderMark<'a>,
}

impl<'a> Term<'a> {
    fn begin(run: &'a Run, client: usize, recipe: Recipe, leadership: Leadership, length: Duration) -> Self {
        let start = Instant::now();
        let holding = run.slots[client].holding(Hold::Leadership, start + length);
        // Registered after `start`: a node the operator takes from here went during the term.
        let marked = run.holders.mark(recipe, vec![leadership.node_path().to_owned()]);
        bump(&run.tally.of(recipe).acquisitions);
        Term {
            run,
            client,
            recipe,
            leadership,
            start,
            told_lost: false,
            reason: None,
            _holding: holding,
            _marked: marked,
        }
    }

    fn resource(&self) -> Resource {
        match self.recipe {
            Recipe::LeaderLatch => Resource::Latch,
            Recipe::LeaderSelector => Resource::Selector,
            recipe => unreachable!("{} is not an election", recipe.name()),
        }
    }
}

impl Drop for Term<'_> {
    fn drop(&mut self) {
        let end = Instant::now();
        let reason = self.reason.or_else(|| lost_already(&self.leadership));
        let told_lost = self.told_lost || reason.is_some();
        if told_lost {
            bump(&self.run.tally.of(self.recipe).losses);
        }
        let node = self.leadership.node_path().to_owned();
        if reason == Some(LossReason::NodeDeleted) {
            self.run.claim(self.client, self.recipe, vec![node.clone()], "was told its leadership's node was deleted");
        }
        self.run.history.lock().unwrap().push(Section {
            client: self.client,
            recipe: self.recipe,
            resource: self.resource(),
            node,
            invoked: None,
            start: self.start,
            end,
            token: self.leadership.fencing_token(),
            told_lost,
        });
    }
}

/// The loss the leader has been told of, if any, without waiting.
fn lost_already(leadership: &Leadership) -> Option<LossReason> {
    leadership.end_reason().and_then(|end| end.loss())
}
