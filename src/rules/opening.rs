//! The opening: what the next acquire sends with its create, and the shortcut's proof.
//!
//! Learnt from a participant's last hold (the uncontended shortcut); a create proves that the new
//! node holds alone.
//!
//! Four decisions, one place (DESIGN.md, "Round trips", has the proofs):
//! - [`after_hold`]: what a hold leaves for the next acquire, from the listing that let it hold;
//! - [`usable`]: what of that an acquire may use, given its rule and whether it may wait;
//! - [`Opening::sends_listing`]: whether the create goes with a listing;
//! - [`alone_proof`]: whether the create proves that the queue holds only our node.
//!
//! The internals send what the opening says and report what came back; nothing here does I/O.

use super::decide::Rule;

/// What a participant knows of the queue it is about to join, from its previous hold.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) enum Opening {
    /// Nothing worth using: the create goes with a listing (the general case).
    #[default]
    Unknown,
    /// Our previous node held at once and alone, and our delete of it is confirmed. The next
    /// node holds without listing when [`alone_proof`] says so (the uncontended shortcut).
    AloneAfter(PreviousAlone),
}

/// Our previous node, which held at once and alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PreviousAlone {
    /// Its sequence number: how many children the lock path had had created before it.
    pub(crate) sequence: i64,
    /// The zxid that created it.
    pub(crate) czxid: i64,
    /// Send a listing with the next create anyway: the proof failed on the last try, so a
    /// miss would cost a second round trip (create, then list). Cleared when a listed acquire
    /// finds that the proof would have held.
    pub(crate) with_listing: bool,
}

/// Whether an acquire's create proved it alone (see [`alone_proof`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Proof {
    /// There was nothing to prove it with.
    NotTried,
    /// Our node is alone in the queue: it holds.
    Held,
    /// The proof failed: someone else may be ahead.
    Missed,
}

/// Whether an acquire had to wait for another holder before it held.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Waited {
    No,
    Yes,
}

/// What a hold of `ours` leaves for the next acquire, from the sorted listing that let it hold:
/// [`Opening::AloneAfter`] if it held at once alone (with a listing next time if its own proof
/// had `missed`), else nothing: a queue behind our hold tells little of the next one, whose
/// participants queue again as they release (DESIGN.md, "Round trips").
///
/// A hold that waited arms no shortcut: a waiter's node gets a sequence number like any other,
/// but the node it waited for may not be gone (a waiter that gave up leaves it there).
pub(crate) fn after_hold<S: AsRef<str>>(sorted: &[S], ours: &Ours, waited: Waited, proof: Proof) -> Opening {
    let Some(index) = sorted.iter().position(|child| child.as_ref() == ours.name) else {
        return Opening::Unknown;
    };
    match (sorted.len() - index - 1, waited, ours.sequence) {
        (0, Waited::No, Some(sequence)) => {
            Opening::AloneAfter(PreviousAlone { sequence, czxid: ours.czxid, with_listing: proof == Proof::Missed })
        }
        _ => Opening::Unknown,
    }
}

/// What is known of our node when it holds.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Ours<'a> {
    pub(crate) name: &'a str,
    /// Its sequence number, when the create's reply gave it.
    pub(crate) sequence: Option<i64>,
    pub(crate) czxid: i64,
}

/// Keeps from a remembered opening only what is safe for an acquire under `rule`: the
/// uncontended shortcut needs a mutex (`Rule::First`): a reader's or a writer's hold alone does
/// not prove the other side's queue empty, and a downgrade node is not sequential.
pub(crate) fn usable(remembered: Opening, rule: Rule) -> Opening {
    match remembered {
        Opening::AloneAfter(_) if rule == Rule::First => remembered,
        _ => Opening::Unknown,
    }
}

impl Opening {
    /// Whether the create goes with a listing of the queue.
    pub(crate) fn sends_listing(&self) -> bool {
        match self {
            Opening::Unknown => true,
            Opening::AloneAfter(previous) => previous.with_listing,
        }
    }
}

/// Transactions other than a lock node's creation that a recreated lock path needs at the
/// least: our delete of the previous node, the parent's deletion, the parent's creation.
const RECREATION_TRANSACTIONS: i64 = 3;

/// Whether our new node (its sequence number and czxid) proves, after `opening`, that it is
/// alone in the queue, so it holds without a listing.
///
/// ZooKeeper names a sequential child after the number of children its parent had had created
/// before it (deletions do not count; the parent's served `cversion` counts both). So a node
/// numbered exactly one more than our previous node proves that no child was created under the
/// lock path between our two creates, whatever else the ensemble did. Our previous node held at
/// once and alone: the listing that showed it first showed nothing else, every node created
/// before it that could still exist was in that listing, and we deleted ours (confirmed) before
/// creating this one. So at our create the queue held our node alone.
///
/// One thing can fake the number: the lock path deleted (a container reaped once empty, an
/// operator) and created again, and as many children created under the new one as the old had
/// had. That takes our delete, the parent's deletion and creation, one transaction per child
/// created (every lock library creates lock nodes one per transaction), and our create:
/// `sequence + 1 + RECREATION_TRANSACTIONS + 1` transactions from the previous node's czxid to
/// ours. A new czxid closer than that rules it out. (A lock path whose children are created
/// several per `multi` must not use zklock's shortcut-arming mutex; no lock recipe does that.)
///
/// A sequence number that wrapped past 2^31 (negative after the previous) never proves anything.
pub(crate) fn alone_proof(opening: &Opening, sequence: Option<i64>, czxid: i64) -> Proof {
    let (Opening::AloneAfter(previous), Some(sequence)) = (opening, sequence) else {
        return Proof::NotTried;
    };
    let nothing_created_between = sequence == previous.sequence + 1;
    let no_recreation = czxid - previous.czxid < previous.sequence + 1 + RECREATION_TRANSACTIONS + 1;
    if nothing_created_between && no_recreation {
        Proof::Held
    } else {
        Proof::Missed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queue(names: &[&str]) -> Vec<String> {
        names.iter().map(|name| name.to_string()).collect()
    }

    fn ours(name: &str) -> Ours<'_> {
        Ours { name, sequence: Some(3), czxid: 7 }
    }

    fn alone_after(sequence: i64, czxid: i64, with_listing: bool) -> Opening {
        Opening::AloneAfter(PreviousAlone { sequence, czxid, with_listing })
    }

    #[test]
    fn alone_at_once_arms_the_uncontended_shortcut() {
        assert_eq!(after_hold(&queue(&["a"]), &ours("a"), Waited::No, Proof::NotTried), alone_after(3, 7, false));
        assert_eq!(after_hold(&queue(&["a"]), &ours("a"), Waited::No, Proof::Held), alone_after(3, 7, false));
        // After a wait nothing is proven: the node we waited for may still be there.
        assert_eq!(after_hold(&queue(&["a"]), &ours("a"), Waited::Yes, Proof::NotTried), Opening::Unknown);
        // Without a sequence number (a node found again after a lost reply) nothing to prove with.
        let unnumbered = Ours { name: "a", sequence: None, czxid: 7 };
        assert_eq!(after_hold(&queue(&["a"]), &unnumbered, Waited::No, Proof::NotTried), Opening::Unknown);
    }

    #[test]
    fn a_missed_proof_sends_a_listing_next_time_and_a_proof_that_holds_stops_it() {
        assert_eq!(after_hold(&queue(&["a"]), &ours("a"), Waited::No, Proof::Missed), alone_after(3, 7, true));
        assert!(alone_after(3, 7, true).sends_listing());
        assert!(!alone_after(3, 7, false).sends_listing());
        assert!(Opening::Unknown.sends_listing());
    }

    #[test]
    fn one_behind_lists_with_the_create() {
        assert_eq!(after_hold(&queue(&["a", "b"]), &ours("a"), Waited::No, Proof::NotTried), Opening::Unknown);
        assert_eq!(after_hold(&queue(&["a", "b"]), &ours("a"), Waited::Yes, Proof::NotTried), Opening::Unknown);
    }

    #[test]
    fn a_queue_behind_the_hold_arms_nothing() {
        assert_eq!(after_hold(&queue(&["a", "b", "c"]), &ours("a"), Waited::Yes, Proof::NotTried), Opening::Unknown);
        assert_eq!(
            after_hold(&queue(&["a", "b", "c", "d"]), &ours("a"), Waited::No, Proof::NotTried),
            Opening::Unknown
        );
    }

    #[test]
    fn a_listing_without_our_node_arms_nothing_it_cannot_prove() {
        assert_eq!(after_hold(&queue(&["b", "c"]), &ours("a"), Waited::Yes, Proof::NotTried), Opening::Unknown);
        assert_eq!(after_hold::<String>(&[], &ours("a"), Waited::No, Proof::NotTried), Opening::Unknown);
    }

    #[test]
    fn only_a_mutex_uses_the_uncontended_shortcut() {
        let alone = alone_after(3, 7, false);
        assert_eq!(usable(alone.clone(), Rule::First), alone);
        let writer = Rule::Writer { writer_name: "W" };
        assert_eq!(usable(alone.clone(), writer), Opening::Unknown);
        assert_eq!(usable(alone.clone(), Rule::Reader { writer_name: "W" }), Opening::Unknown);
        assert_eq!(usable(alone, Rule::Leases { max_leases: 2 }), Opening::Unknown);
    }

    #[test]
    fn the_next_sequence_number_proves_the_queue_empty_whatever_else_the_ensemble_did() {
        // Previous node: sequence 40, czxid 1000. Unrelated transactions between are fine.
        let previous = alone_after(40, 1_000, false);
        assert_eq!(alone_proof(&previous, Some(41), 1_002), Proof::Held, "only our delete between");
        assert_eq!(alone_proof(&previous, Some(41), 1_030), Proof::Held, "busy elsewhere");
        // A child created under the lock path between our two creates: someone may be ahead.
        assert_eq!(alone_proof(&previous, Some(42), 1_004), Proof::Missed);
        // Nothing to prove with.
        assert_eq!(alone_proof(&Opening::Unknown, Some(41), 1_002), Proof::NotTried);
        assert_eq!(alone_proof(&previous, None, 1_002), Proof::NotTried);
    }

    #[test]
    fn a_lock_path_recreated_with_as_many_children_is_not_taken_for_an_empty_queue() {
        // Sequence 0 at czxid 100: our delete (101), the parent reaped (102) and created again
        // (103), one child created there (104, sequence 0), ours (105, sequence 1).
        let previous = alone_after(0, 100, false);
        assert_eq!(alone_proof(&previous, Some(1), 105), Proof::Missed);
        // Fewer transactions than a recreation needs: nothing else can have happened.
        assert_eq!(alone_proof(&previous, Some(1), 104), Proof::Held);
        assert_eq!(alone_proof(&previous, Some(1), 102), Proof::Held);
        // With 40 children before ours, a recreation needs 40 + 1 + 3 + 1 transactions.
        let previous = alone_after(40, 1_000, false);
        assert_eq!(alone_proof(&previous, Some(41), 1_000 + 45), Proof::Missed);
        assert_eq!(alone_proof(&previous, Some(41), 1_000 + 44), Proof::Held);
    }

    #[test]
    fn a_wrapped_sequence_number_proves_nothing() {
        let previous = alone_after(i64::from(i32::MAX), 1_000, false);
        assert_eq!(alone_proof(&previous, Some(i64::from(i32::MIN)), 1_002), Proof::Missed);
    }
}
