//! Fenced registers: one per exclusive lock path, refusing a token lower than the highest it
//! has accepted, as a storage service guarded by the lock would.

use std::collections::HashMap;
use std::sync::Mutex;

use super::recipe::{Held, Mode, Resource};

/// What the register said to one holder's access to one resource.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    Accepted,
    /// The holder knew it had lost the lock, so it did not write; the register would have
    /// refused it (fencing would have saved a holder that did not look).
    RefusedAfterLoss,
    /// The holder knew it had lost the lock and did not write; the register would have taken it.
    KnownLost,
    /// Refused while the holder believed it held: a stale holder reached the resource.
    RefusedWhileHeld,
}

#[derive(Default)]
pub struct Fences {
    highest: Mutex<HashMap<Resource, i64>>,
}

impl Fences {
    /// The holder of `held` (taken in `mode`) uses each resource it holds. Exclusive holders
    /// write their token; readers read, which needs no writer with a later token to have
    /// written (that writer queued behind the reader and must wait for it). The semaphore's
    /// leases are not exclusive, so they have no register. The holder's belief is read under
    /// the registers' lock, so it is its belief at the moment of the access.
    pub fn access(&self, mode: Mode, held: &Held) -> Vec<Verdict> {
        let mut registers = self.highest.lock().unwrap();
        held.parts()
            .into_iter()
            .map(|part| {
                let highest = registers.entry(part.resource).or_insert(i64::MIN);
                let acceptable = mode == Mode::Lease || part.token >= *highest;
                match (part.believed_held, acceptable) {
                    (true, true) => {
                        if mode == Mode::Exclusive {
                            *highest = part.token;
                        }
                        Verdict::Accepted
                    }
                    (true, false) => Verdict::RefusedWhileHeld,
                    (false, true) => Verdict::KnownLost,
                    (false, false) => Verdict::RefusedAfterLoss,
                }
            })
            .collect()
    }
}
