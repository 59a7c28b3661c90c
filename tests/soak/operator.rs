//! The operator: deletes queue nodes of every recipe, a holder's and a waiter's in turn, the way
//! people "unstick" a lock. A holder's node is taken from the holds under way (registered once
//! the hold began); a waiter's is deleted in one transaction that proves it was waiting: with a
//! check that a node it waits for still exists, with that node deleted first (what one `multi`
//! of `zkCli deleteall` does), or with the whole queue, as `deleteall` deletes a directory.
//! What the operator deleted is the only deletion the run forgives, and only once it is known
//! to have run: a delete whose reply was lost is settled by a mark written in its transaction.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use fastrand::Rng;
use zookeeper_client::{Client, MultiWriteError};

use super::recipe::{Paths, Recipe};
use super::tally::{bump, get};
use super::Run;

/// How long the operator looks for a holder or a waiter of a recipe before it moves on.
const PATIENCE: Duration = Duration::from_secs(5);

/// How many more times the operator looks for a holder of a recipe whose holders it has not
/// met in its rounds, or none of whose holders was told of a loss.
const EXTRA_TRIES: usize = 5;

/// The longest any request of the operator may take (the nemesis kills and pauses servers).
const REQUEST_BOUND: Duration = Duration::from_secs(5);

/// When a node went: after `sent` (its delete was sent) and by `done` (the server had run it).
#[derive(Clone, Copy, Debug)]
pub struct Deletion {
    pub sent: Instant,
    pub done: Instant,
}

/// The nodes the operator deleted, with when.
#[derive(Default)]
pub struct Deletions {
    /// Node -> when it went, and whether the operator counts it (a session killed from outside
    /// is forgiven the same way, not counted).
    deleted: Mutex<HashMap<String, (Deletion, bool)>>,
    pub holders: AtomicU64,
    pub waiters: AtomicU64,
    /// Transactions that deleted a waiter right after the node it waited for.
    pub with_blocker: AtomicU64,
    /// Transactions that deleted a whole queue, as `deleteall` does.
    pub whole_queues: AtomicU64,
}

impl Deletions {
    /// When `node` was deleted by the operator (or with a session killed from outside), if it was.
    pub fn of(&self, node: &str) -> Option<Deletion> {
        self.deleted.lock().unwrap().get(node).map(|(deletion, _)| *deletion)
    }

    /// Deletions the operator made.
    pub fn count(&self) -> u64 {
        get(&self.holders) + get(&self.waiters)
    }

    /// `node` went at `at` with a session killed from outside, before its holder could know:
    /// forgiven as the operator's deletions are, and not counted among them.
    pub fn forgive(&self, node: &str, at: Instant) {
        self.deleted.lock().unwrap().insert(node.to_owned(), (Deletion { sent: at, done: at }, false));
    }

    fn record(&self, nodes: &[String], deletion: Deletion, count: &AtomicU64) {
        let mut deleted = self.deleted.lock().unwrap();
        for node in nodes {
            deleted.insert(node.clone(), (deletion, true));
            bump(count);
        }
    }
}

/// The holds under way with their nodes, registered once the hold began: where the operator
/// takes a holder's node from.
#[derive(Default)]
pub struct Holders {
    holds: Mutex<Vec<(u64, Recipe, Vec<String>)>>,
    next: AtomicU64,
}

impl Holders {
    /// Registers a hold of `recipe` on `nodes` for as long as the returned mark lives.
    pub fn mark(&self, recipe: Recipe, nodes: Vec<String>) -> HolderMark<'_> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        self.holds.lock().unwrap().push((id, recipe, nodes));
        HolderMark { holders: self, id }
    }

    /// A node of a hold of `recipe` under way, at random.
    fn pick(&self, recipe: Recipe, rng: &mut Rng) -> Option<String> {
        let holds = self.holds.lock().unwrap();
        let nodes: Vec<&String> =
            holds.iter().filter(|(_, held, _)| *held == recipe).flat_map(|(_, _, nodes)| nodes).collect();
        (!nodes.is_empty()).then(|| nodes[rng.usize(..nodes.len())].clone())
    }
}

/// A hold under way, seen by the operator until dropped.
pub struct HolderMark<'a> {
    holders: &'a Holders,
    id: u64,
}

impl Drop for HolderMark<'_> {
    fn drop(&mut self) {
        self.holders.holds.lock().unwrap().retain(|(id, ..)| *id != self.id);
    }
}

/// Deletes, `rounds` times, a holder's node and a waiter's node of every recipe (each when one
/// shows up within [`PATIENCE`]; holders and waiters in two loops side by side), through a
/// session of its own straight to the ensemble.
pub async fn run(connect_string: String, run: &Run, rounds: usize, rng: &mut Rng) {
    let connecting = Client::connector().with_session_timeout(Duration::from_secs(20)).connect(&connect_string);
    let client = connecting.await.expect("the operator connects");
    let (mut holders_rng, mut waiters_rng) = (Rng::with_seed(rng.u64(..)), Rng::with_seed(rng.u64(..)));
    let holders = async {
        let mut deleted = [false; Recipe::COUNT];
        for recipe in (0..rounds).flat_map(|_| Recipe::all()) {
            tokio::time::sleep(Duration::from_millis(holders_rng.u64(100..600))).await;
            deleted[recipe.index()] |= delete_a_holder(&client, run, recipe, &mut holders_rng).await;
        }
        // Every recipe's holders must meet a deletion, and be told of a loss: a recipe missed is
        // tried again (a holder whose node went just as it released is told nothing, and faults
        // may have met none of a recipe's holders).
        for _ in 0..EXTRA_TRIES {
            for recipe in Recipe::all() {
                if !deleted[recipe.index()] || get(&run.tally.of(recipe).losses) == 0 {
                    deleted[recipe.index()] |= delete_a_holder(&client, run, recipe, &mut holders_rng).await;
                }
            }
            // Time for a holder told of its loss to count it.
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    };
    let waiters = async {
        for (round, recipe) in (0..rounds).flat_map(|round| Recipe::all().map(move |recipe| (round, recipe))) {
            tokio::time::sleep(Duration::from_millis(waiters_rng.u64(100..600))).await;
            // Each way in turn, whatever the seed: every recipe meets each within three rounds.
            let how = WaiterDeletion::ALL[(round + recipe.index()) % WaiterDeletion::ALL.len()];
            delete_a_waiter(&client, run, recipe, how, &mut waiters_rng).await;
        }
    };
    tokio::join!(holders, waiters);
}

/// Deletes `node`, a holder's, as the operator: recorded as its other deletions are.
pub async fn delete_held(client: &Client, run: &Run, node: &str) {
    let nodes = [node.to_owned()];
    if let Outcome::Ran(deletion) = commit_marked(client, None, &nodes, None).await {
        run.deletions.record(&nodes, deletion, &run.deletions.holders);
    }
}

/// Deletes the node of a holder of `recipe`; whether it found one.
async fn delete_a_holder(client: &Client, run: &Run, recipe: Recipe, rng: &mut Rng) -> bool {
    let give_up = Instant::now() + PATIENCE;
    while Instant::now() < give_up {
        if let Some(node) = run.holders.pick(recipe, rng) {
            let nodes = [node];
            match commit_marked(client, None, &nodes, None).await {
                Outcome::Ran(deletion) => run.deletions.record(&nodes, deletion, &run.deletions.holders),
                // Released meanwhile: look again.
                Outcome::Refused => continue,
                Outcome::DidNotRun => {}
            }
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    false
}

/// How the operator deletes a waiter's node, in one transaction each.
#[derive(Clone, Copy, Debug)]
enum WaiterDeletion {
    /// With a check that the node it waits for still exists.
    Checked,
    /// Right after the node it waits for, in the same transaction (one batch of `deleteall`):
    /// the waiter hears of its predecessor's deletion one frame before its own.
    WithItsBlocker,
    /// With every node of its queue and the queue's directory, as `zkCli deleteall` does (the
    /// listing's nodes in reverse, then the directory).
    WholeQueue,
}

impl WaiterDeletion {
    const ALL: [WaiterDeletion; 3] =
        [WaiterDeletion::Checked, WaiterDeletion::WithItsBlocker, WaiterDeletion::WholeQueue];
}

async fn delete_a_waiter(client: &Client, run: &Run, recipe: Recipe, how: WaiterDeletion, rng: &mut Rng) {
    let give_up = Instant::now() + PATIENCE;
    while Instant::now() < give_up {
        let dirs = queues(&run.paths, recipe);
        let dir = &dirs[rng.usize(..dirs.len())];
        let Ok(Ok(children)) = tokio::time::timeout(REQUEST_BOUND, client.list_children(dir)).await else {
            tokio::time::sleep(Duration::from_millis(20)).await;
            continue;
        };
        let waiters = waiting(children.clone(), recipe);
        if waiters.is_empty() {
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        }
        let (waiter, blocker) = &waiters[rng.usize(..waiters.len())];
        let (waiter, blocker) = (format!("{dir}/{waiter}"), format!("{dir}/{blocker}"));
        let (nodes, checked) = match how {
            WaiterDeletion::Checked => (vec![waiter], Some(blocker)),
            WaiterDeletion::WithItsBlocker => (vec![blocker, waiter], None),
            WaiterDeletion::WholeQueue => (children.iter().rev().map(|child| format!("{dir}/{child}")).collect(), None),
        };
        let then_dir = matches!(how, WaiterDeletion::WholeQueue).then_some(dir.as_str());
        let outcome = commit_marked(client, checked.as_deref(), &nodes, then_dir).await;
        match outcome {
            Outcome::Ran(deletion) => {
                match how {
                    WaiterDeletion::Checked => {}
                    WaiterDeletion::WithItsBlocker => bump(&run.deletions.with_blocker),
                    WaiterDeletion::WholeQueue => bump(&run.deletions.whole_queues),
                }
                return run.deletions.record(&nodes, deletion, &run.deletions.waiters);
            }
            // Refused, nothing ran (a node went or came first): look again.
            Outcome::Refused => {}
            Outcome::DidNotRun => return,
        }
    }
}

/// What became of a transaction of the operator's.
enum Outcome {
    Ran(Deletion),
    /// The server refused it: nothing ran.
    Refused,
    /// Its reply was lost, and its mark says it did not run.
    DidNotRun,
}

/// A new name for the mark of one transaction of the operator's.
fn mark_path() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!("/zklock-soak-operator-mark-{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed))
}

/// Sends one transaction: a check that `checked` exists (if given), the deletes of `nodes` in
/// order, the delete of `then_dir` (if given), and the creation of a mark. A reply lost (a lost
/// connection, a paused server) leaves the outcome unknown: the mark, looked for on the
/// operator's session (after the transaction on its connection, or on a later one), says
/// whether it ran. So a deletion is forgiven only once it is known to have run, from when it was
/// sent.
async fn commit_marked(client: &Client, checked: Option<&str>, nodes: &[String], then_dir: Option<&str>) -> Outcome {
    let mark = mark_path();
    let mut transaction = client.new_multi_writer();
    if let Some(checked) = checked {
        transaction.add_check_version(checked, -1).unwrap();
    }
    for node in nodes.iter().map(String::as_str).chain(then_dir) {
        transaction.add_delete(node, None).unwrap();
    }
    let mode = zookeeper_client::CreateMode::Persistent.with_acls(zookeeper_client::Acls::anyone_all());
    transaction.add_create(&mark, b"", &mode).unwrap();
    let sent = Instant::now();
    match tokio::time::timeout(REQUEST_BOUND, transaction.commit()).await {
        Ok(Ok(_)) => return Outcome::Ran(Deletion { sent, done: Instant::now() }),
        Ok(Err(MultiWriteError::OperationFailed { .. })) => return Outcome::Refused,
        _ => {}
    }
    let settle_by = Instant::now() + Duration::from_secs(30);
    while Instant::now() < settle_by {
        if let Ok(Ok(stat)) = tokio::time::timeout(REQUEST_BOUND, client.check_stat(&mark)).await {
            return match stat {
                Some(_) => Outcome::Ran(Deletion { sent, done: Instant::now() }),
                None => Outcome::DidNotRun,
            };
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the operator could not learn whether its transaction ran");
}

/// The queues a waiter of `recipe` waits in: the lock path, or a semaphore's gate mutex
/// (its leases do not queue: a lease node holds, or waits for room without order).
fn queues(paths: &Paths, recipe: Recipe) -> Vec<String> {
    match recipe {
        Recipe::Mutex => vec![paths.mutex.clone()],
        Recipe::HandoffMutex => vec![paths.handoff_mutex.clone()],
        Recipe::Write | Recipe::Read | Recipe::Downgrade => vec![paths.read_write.clone()],
        Recipe::Semaphore => vec![format!("{}/locks", paths.semaphore)],
        Recipe::SemaphoreMutex => vec![format!("{}/locks", paths.semaphore_mutex)],
        Recipe::MultiLock => paths.multi.to_vec(),
        Recipe::LeaderLatch => vec![paths.latch.clone()],
        Recipe::LeaderSelector => vec![paths.selector.clone()],
    }
}

/// The nodes among `children` that wait, each with a node ahead of it that keeps it waiting
/// while it exists: the one just ahead, or for a reader the nearest writer ahead.
fn waiting(mut children: Vec<String>, recipe: Recipe) -> Vec<(String, String)> {
    // Every schema ends a name with its 10-digit sequence (a downgrade's read node with its
    // write node's), which orders the queue.
    children.retain(|child| child.len() >= 10);
    children.sort_by(|a, b| a[a.len() - 10..].cmp(&b[b.len() - 10..]));
    let key = |child: &String| child[child.len() - 10..].to_owned();
    let is_writer = |child: &String| child.contains("__WRIT__");
    let mut waiting = Vec::new();
    for (index, child) in children.iter().enumerate().skip(1) {
        // A downgrade's read node and its write node share a key, and both hold.
        if children.iter().filter(|other| key(other) == key(child)).count() > 1 {
            continue;
        }
        let blocker = match recipe {
            Recipe::Read if child.contains("__READ__") => children[..index].iter().rev().find(|ahead| is_writer(ahead)),
            Recipe::Read => None,
            Recipe::Write | Recipe::Downgrade if !is_writer(child) => None,
            _ => Some(&children[index - 1]),
        };
        if let Some(blocker) = blocker {
            waiting.push((child.clone(), blocker.clone()));
        }
    }
    waiting
}

/// A participant's report that a node of its own was deleted by someone else: an error
/// (a hold lost with `NodeDeleted`) or a fence that refused it while it
/// believed it held. Forgiven only when the operator deleted one of `nodes` before `at`.
#[derive(Debug)]
pub struct Claim {
    pub client: usize,
    pub recipe: Recipe,
    pub nodes: Vec<String>,
    pub at: Instant,
    pub what: String,
}

impl Claim {
    pub fn forgiven(&self, deletions: &Deletions) -> bool {
        self.nodes.iter().any(|node| deletions.of(node).is_some_and(|deleted| deleted.sent <= self.at))
    }
}
