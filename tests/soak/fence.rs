//! Fenced registers: one per exclusive resource (a lock path, an election), refusing a token
//! lower than the highest it has accepted, and the highest again from another writer, as a
//! storage service guarded by the lock or the leadership would.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
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
    /// Refused while the holder believed it held: a stale holder reached the resource, or a
    /// second holder came with the token of the first (tokens did not strictly increase).
    RefusedWhileHeld {
        node: String,
    },
}

/// One hold's identity at the registers: every critical section and every term of leadership
/// is a writer of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Writer(u64);

/// What a register last accepted.
#[derive(Clone, Copy)]
struct Register {
    highest: i64,
    writer: Option<Writer>,
}

#[derive(Default)]
pub struct Fences {
    registers: Mutex<HashMap<Resource, Register>>,
    writers: AtomicU64,
}

impl Fences {
    /// A new writer, for one hold.
    pub fn writer(&self) -> Writer {
        Writer(self.writers.fetch_add(1, Ordering::Relaxed))
    }

    /// A holder (`writer`, in `mode`) uses each resource it holds, as `parts` describes them.
    /// Exclusive holders write their token, which must be above the highest written, or be the
    /// highest and theirs; readers read, which needs no writer with a later token to have
    /// written (that writer queued behind the reader and must wait for it). The semaphore's
    /// leases are not exclusive, so they have no register. The holder's belief is read under
    /// the registers' lock, so it is its belief at the moment of the access.
    pub fn access(&self, writer: Writer, mode: Mode, parts: impl FnOnce() -> Vec<Part>) -> Vec<Verdict> {
        let mut registers = self.registers.lock().unwrap();
        parts()
            .into_iter()
            .map(|part| {
                let register = registers.entry(part.resource).or_insert(Register { highest: i64::MIN, writer: None });
                let acceptable = match mode {
                    Mode::Lease => true,
                    Mode::Shared => part.token >= register.highest,
                    Mode::Exclusive => {
                        part.token > register.highest
                            || (part.token == register.highest && register.writer == Some(writer))
                    }
                };
                match (part.believed_held, acceptable) {
                    (true, true) => {
                        if mode == Mode::Exclusive {
                            *register = Register { highest: part.token, writer: Some(writer) };
                        }
                        Verdict::Accepted
                    }
                    (true, false) => Verdict::RefusedWhileHeld { node: part.node },
                    (false, true) => Verdict::KnownLost,
                    (false, false) => Verdict::RefusedAfterLoss,
                }
            })
            .collect()
    }
}

#[test]
fn fences_refuse_a_stale_holder_a_repeated_token_and_a_reader_behind_a_later_writer() {
    let node = || "/rw/n".to_owned();
    let part = move |token, believed_held| {
        move || vec![Part { resource: Resource::ReadWrite, node: node(), token, believed_held }]
    };
    let refused = || [Verdict::RefusedWhileHeld { node: node() }];
    let fences = Fences::default();
    let [first, second, third, fourth] = [(); 4].map(|()| fences.writer());
    assert_eq!(fences.access(first, Mode::Exclusive, part(10, true)), [Verdict::Accepted]);
    assert_eq!(fences.access(first, Mode::Exclusive, part(10, true)), [Verdict::Accepted], "its writer again");
    assert_eq!(fences.access(second, Mode::Exclusive, part(10, true)), refused(), "another writer");
    assert_eq!(fences.access(second, Mode::Shared, part(12, true)), [Verdict::Accepted], "a later reader may read");
    assert_eq!(fences.access(second, Mode::Exclusive, part(9, true)), refused());
    assert_eq!(fences.access(second, Mode::Shared, part(9, true)), refused(), "writer 10 wrote past it");
    assert_eq!(fences.access(third, Mode::Exclusive, part(8, false)), [Verdict::RefusedAfterLoss]);
    assert_eq!(fences.access(third, Mode::Exclusive, part(20, false)), [Verdict::KnownLost]);
    assert_eq!(
        fences.access(fourth, Mode::Exclusive, part(11, true)),
        [Verdict::Accepted],
        "a holder that knew wrote nothing"
    );
    assert_eq!(fences.access(fourth, Mode::Lease, part(1, true)), [Verdict::Accepted], "leases are not fenced");
}
