//! Fenced registers: one per exclusive lock path, refusing a token lower than the highest it
//! has accepted, as a storage service guarded by the lock would.

use std::collections::HashMap;
use std::sync::Mutex;

use super::recipe::{Mode, Part, Resource};

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
    /// A holder (in `mode`) uses each resource it holds, as `parts` describes them. Exclusive holders
    /// write their token; readers read, which needs no writer with a later token to have
    /// written (that writer queued behind the reader and must wait for it). The semaphore's
    /// leases are not exclusive, so they have no register. The holder's belief is read under
    /// the registers' lock, so it is its belief at the moment of the access.
    pub fn access(&self, mode: Mode, parts: impl FnOnce() -> Vec<Part>) -> Vec<Verdict> {
        let mut registers = self.highest.lock().unwrap();
        parts()
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

#[test]
fn fences_refuse_a_stale_holder_and_a_reader_behind_a_later_writer() {
    let part = |token, believed_held| move || vec![Part { resource: Resource::ReadWrite, token, believed_held }];
    let fences = Fences::default();
    assert_eq!(fences.access(Mode::Exclusive, part(10, true)), [Verdict::Accepted]);
    assert_eq!(fences.access(Mode::Shared, part(12, true)), [Verdict::Accepted], "a later reader may read");
    assert_eq!(fences.access(Mode::Exclusive, part(9, true)), [Verdict::RefusedWhileHeld]);
    assert_eq!(fences.access(Mode::Shared, part(9, true)), [Verdict::RefusedWhileHeld], "writer 10 wrote past it");
    assert_eq!(fences.access(Mode::Exclusive, part(8, false)), [Verdict::RefusedAfterLoss]);
    assert_eq!(fences.access(Mode::Exclusive, part(20, false)), [Verdict::KnownLost]);
    assert_eq!(fences.access(Mode::Exclusive, part(11, true)), [Verdict::Accepted], "a holder that knew wrote nothing");
    assert_eq!(fences.access(Mode::Lease, part(1, true)), [Verdict::Accepted], "leases are not fenced");
}
