//! The parts of the fault soak (`tests/fault_soak.rs`), one concept per file.

pub mod client;
pub mod election;
pub mod fence;
pub mod history;
pub mod nemesis;
pub mod operator;
pub mod recipe;
pub mod tally;
pub mod worker;

use std::sync::Mutex;
use std::time::Instant;

use tokio::sync::watch;
use zklock::{Error, LossReason};

use client::Slot;
use fence::{Fences, Verdict, Writer};
use history::Section;
use operator::{Claim, Deletions, Holders};
use recipe::{Part, Paths, Recipe};
use tally::{bump, Tally};

/// Everything the workers, the election participants, the nemesis and the checks share.
pub struct Run {
    pub paths: Paths,
    pub slots: Vec<Slot>,
    pub tally: Tally,
    pub fences: Fences,
    pub history: Mutex<Vec<Section>>,
    /// The holds under way, where the operator finds holders' nodes.
    pub holders: Holders,
    /// What the operator deleted.
    pub deletions: Deletions,
    /// Reports of nodes deleted under their participants, checked against `deletions` at the end.
    pub claims: Mutex<Vec<Claim>>,
    /// Set when the faults are over: workers finish their round and stop; leaders keep their
    /// terms short from then on.
    pub stop: watch::Sender<bool>,
    /// Set once every participant has been elected again after the faults (or that took too
    /// long): participants leave their elections.
    pub stop_elections: watch::Sender<bool>,
}

impl Run {
    /// Accounts for an error of client `index` doing `what` with `recipe` (holding `nodes`, if
    /// it held): a documented loss (the session ended, the lock was lost) is expected, but a
    /// node deleted under it (a loss for `NodeDeleted`) only if the operator
    /// deleted it (a claim, checked at the end); any other error is a violation. A client
    /// whose session ended is replaced.
    pub fn failed(&self, index: usize, recipe: Recipe, what: &str, err: Error, nodes: &[String]) {
        match err {
            Error::SessionExpired | Error::SessionClosed => {
                if self.slots[index].forget_ended_client() {
                    bump(&self.tally.reconnects);
                }
            }
            Error::LockLost(LossReason::NodeDeleted) => self.claim(index, recipe, nodes.to_vec(), what),
            Error::LockLost(_) => {}
            err => {
                bump(&self.tally.of(recipe).errors);
                eprintln!("soak: client {index} {what} {}: unexpected error: {err}", recipe.name());
            }
        }
    }

    /// Records that client `index` found one of `nodes` of `recipe` deleted under it.
    pub fn claim(&self, client: usize, recipe: Recipe, nodes: Vec<String>, what: &str) {
        let claim = Claim { client, recipe, nodes, at: Instant::now(), what: what.to_owned() };
        self.claims.lock().unwrap().push(claim);
    }

    /// Client `index`, a holder of `recipe` (`writer`), uses every resource its hold protects,
    /// as `parts` describes them at that moment; `false` once the holder knows it lost (part
    /// of) it, or a fence refused it (a claim that its node was deleted, checked at the end).
    pub fn access(&self, index: usize, recipe: Recipe, writer: Writer, parts: impl FnOnce() -> Vec<Part>) -> bool {
        let counts = self.tally.of(recipe);
        let verdicts = self.fences.access(writer, recipe.mode(), parts);
        for verdict in &verdicts {
            match verdict {
                Verdict::Accepted | Verdict::KnownLost => {}
                Verdict::RefusedAfterLoss => bump(&counts.stale_after_loss),
                Verdict::RefusedWhileHeld { node } => {
                    bump(&counts.stale_while_held);
                    self.claim(index, recipe, vec![node.clone()], "was refused by a fence while it believed it held");
                }
            }
        }
        verdicts.iter().all(|verdict| *verdict == Verdict::Accepted)
    }
}
