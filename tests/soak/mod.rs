//! The parts of the fault soak (`tests/fault_soak.rs`), one concept per file.

pub mod client;
pub mod election;
pub mod fence;
pub mod history;
pub mod nemesis;
pub mod recipe;
pub mod tally;
pub mod worker;

use std::sync::Mutex;

use tokio::sync::watch;
use zklock::Error;

use client::Slot;
use fence::{Fences, Verdict, Writer};
use history::Section;
use recipe::{Part, Paths, Recipe};
use tally::{bump, Tally};

/// Everything the workers, the election participants, the nemesis and the checks share.
pub struct Run {
    pub paths: Paths,
    pub slots: Vec<Slot>,
    pub tally: Tally,
    pub fences: Fences,
    pub history: Mutex<Vec<Section>>,
    /// Set when the faults are over: workers finish their round and stop; leaders keep their
    /// terms short from then on.
    pub stop: watch::Sender<bool>,
    /// Set once every participant has been elected again after the faults (or that took too
    /// long): participants leave their elections.
    pub stop_elections: watch::Sender<bool>,
}

impl Run {
    /// Accounts for an error of client `index` doing `what` with `recipe`: a documented loss
    /// (the session ended, the lock was lost, or, once a fault has happened, its node was
    /// deleted) is expected; any other error is a violation. A client whose session ended is
    /// replaced.
    pub fn failed(&self, index: usize, recipe: Recipe, what: &str, err: Error) {
        match err {
            Error::SessionExpired | Error::SessionClosed => {
                if self.slots[index].forget_ended_client() {
                    bump(&self.tally.reconnects);
                }
            }
            Error::LockLost(_) => {}
            Error::LockNodeDeleted { .. } if self.tally.faults.total() > 0 => {}
            err => {
                bump(&self.tally.of(recipe).errors);
                eprintln!("soak: client {index} {what} {}: unexpected error: {err}", recipe.name());
            }
        }
    }

    /// A holder of `recipe` (`writer`) uses every resource its hold protects, as `parts`
    /// describes them at that moment; `false` once the holder knows it lost (part of) it, or a
    /// fence refused it (a violation, counted here).
    pub fn access(&self, recipe: Recipe, writer: Writer, parts: impl FnOnce() -> Vec<Part>) -> bool {
        let counts = self.tally.of(recipe);
        let verdicts = self.fences.access(writer, recipe.mode(), parts);
        for verdict in &verdicts {
            match verdict {
                Verdict::Accepted | Verdict::KnownLost => {}
                Verdict::RefusedAfterLoss => bump(&counts.stale_after_loss),
                Verdict::RefusedWhileHeld => {
                    bump(&counts.stale_while_held);
                    eprintln!("soak: a {} holder's token was refused while it believed it held", recipe.name());
                }
            }
        }
        verdicts.iter().all(|verdict| *verdict == Verdict::Accepted)
    }
}
