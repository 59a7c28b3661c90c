//! What happened during a run, counted per recipe and per fault.

use std::sync::atomic::{AtomicU64, Ordering};

use super::recipe::Recipe;

/// Counts of one recipe.
#[derive(Default)]
pub struct RecipeCounts {
    pub acquisitions: AtomicU64,
    pub timeouts: AtomicU64,
    pub cancellations: AtomicU64,
    /// Critical sections that ended because the holder was told of a loss.
    pub losses: AtomicU64,
    /// Accesses the register refused while the holder believed it held (each a claim that its
    /// node was deleted, forgiven only for a node the operator deleted).
    pub stale_while_held: AtomicU64,
    /// Accesses the register would have refused, skipped because the holder knew of its loss.
    pub stale_after_loss: AtomicU64,
    /// Errors that are not a documented loss.
    pub errors: AtomicU64,
    /// Holds passed on by a task of the same client, with no request (local handoff).
    pub handed_on: AtomicU64,
}

/// Faults the nemesis injected and saw take effect.
#[derive(Default)]
pub struct FaultCounts {
    pub kills: AtomicU64,
    pub pauses: AtomicU64,
    /// Partitions that lost some of the client's traffic.
    pub partitions: AtomicU64,
    /// Sessions the server expired (seen by the client), not just partitions meant to expire one.
    pub expiries: AtomicU64,
    /// Spells during which a client's requests ran but some of their replies were lost.
    pub lost_replies: AtomicU64,
}

#[derive(Default)]
pub struct Tally {
    recipes: [RecipeCounts; Recipe::COUNT],
    pub faults: FaultCounts,
    /// Clients that replaced a client whose session had ended.
    pub reconnects: AtomicU64,
}

impl Tally {
    pub fn of(&self, recipe: Recipe) -> &RecipeCounts {
        &self.recipes[recipe.index()]
    }

    pub fn losses(&self) -> u64 {
        self.recipes.iter().map(|counts| get(&counts.losses)).sum()
    }
}

pub fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::SeqCst);
}

pub fn get(counter: &AtomicU64) -> u64 {
    counter.load(Ordering::SeqCst)
}
