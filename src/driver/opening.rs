//! The opening: what a participant's next acquire sends with its create, learnt from what its
//! last hold showed of the queue, and when a create proves that the new node holds alone.
//!
//! Three decisions, one place (DESIGN.md, "Round trips", has the proofs):
//! - [`after_hold`]: what a hold leaves for the next acquire, from the listing that let it hold;
//! - [`usable`]: what of that an acquire may use, given its rule and whether it may wait;
//! - [`holds_alone`]: whether the create alone proves the queue holds only our node.
//!
//! The internals send what the opening says and report what came back; nothing here does I/O.

use super::decide::Rule;

/// What a participant knows of the queue it is about to join, from its previous hold.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) enum Opening {
    /// Nothing worth using: the create goes with a listing (the general case).
    #[default]
    Unknown,
    /// Our previous node held at once and alone, and our delete of it is confirmed; this is its
    /// czxid. The create goes alone, and holds without listing when [`holds_alone`] says so (the
    /// uncontended shortcut).
    AloneAfter(i64),
    /// This node (a name under the lock path) was queued behind our previous hold, so it sorts
    /// ahead of our next node: the create goes with a watch on it instead of a listing, and we
    /// list only once it changes.
    QueuedBehind(String),
}

/// Whether an acquire had to wait for another holder before it held.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Waited {
    No,
    Yes,
}

/// The shortest queue behind our hold worth an [`Opening::QueuedBehind`]: with two or more
/// nodes behind us, our next node will most likely find a node ahead whose deletion it could not
/// read as a handoff without listing anyway. With one, that one holds next and our new node
/// lands right behind it: a listing shows it as the head, whose deletion is a handoff without a
/// second list.
pub(crate) const BEHIND_WORTH_WATCHING: usize = 2;

/// What a hold of `ours` (created at `czxid`) leaves for the next acquire, from the sorted
/// listing that let it hold: [`Opening::AloneAfter`] if it held at once alone, a watch on the
/// last node behind it if at least [`BEHIND_WORTH_WATCHING`] were, else nothing.
///
/// A hold that waited proves nothing by its czxid: someone else's delete came between.
pub(crate) fn after_hold(sorted: &[String], ours: &str, czxid: i64, waited: Waited) -> Opening {
    let Some(index) = sorted.iter().position(|child| child == ours) else {
        return Opening::Unknown;
    };
    match (sorted.len() - index - 1, waited) {
        (0, Waited::No) => Opening::AloneAfter(czxid),
        (behind, _) if behind >= BEHIND_WORTH_WATCHING => Opening::QueuedBehind(sorted[sorted.len() - 1].clone()),
        _ => Opening::Unknown,
    }
}

/// Keeps from a remembered opening only what is safe and useful for an acquire under `rule`:
/// - the uncontended shortcut needs a mutex (`Rule::FirstN(1)`): a reader's or a writer's hold
///   alone does not prove the other side's queue empty, and a downgrade node is not sequential;
/// - a watch on a node behind our last hold needs a rule that any node ahead blocks, and an
///   acquire that may wait: a try must not leave a watch behind.
pub(crate) fn usable(remembered: Opening, rule: Rule, may_wait: bool) -> Opening {
    match remembered {
        Opening::AloneAfter(_) if rule == Rule::FirstN(1) => remembered,
        Opening::QueuedBehind(_) if rule.blocked_by_any_node_ahead() && may_wait => remembered,
        _ => Opening::Unknown,
    }
}

/// Whether our new node, created at `czxid` after `opening`, holds alone without a listing.
///
/// True only when the only transaction between our previous node's creation and our new one
/// was our own delete of the previous node (`czxid == previous + 2`): zxids number every
/// transaction of the ensemble, so nothing else can have been created or deleted anywhere.
pub(crate) fn holds_alone(opening: &Opening, czxid: i64) -> bool {
    matches!(opening, Opening::AloneAfter(previous) if czxid == previous + 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queue(names: &[&str]) -> Vec<String> {
        names.iter().map(|name| name.to_string()).collect()
    }

    #[test]
    fn alone_at_once_arms_the_uncontended_shortcut() {
        assert_eq!(after_hold(&queue(&["a"]), "a", 7, Waited::No), Opening::AloneAfter(7));
        // After a wait, the czxid proves nothing: someone else's delete came between.
        assert_eq!(after_hold(&queue(&["a"]), "a", 7, Waited::Yes), Opening::Unknown);
    }

    #[test]
    fn one_behind_lists_with_the_create() {
        assert_eq!(after_hold(&queue(&["a", "b"]), "a", 7, Waited::No), Opening::Unknown);
        assert_eq!(after_hold(&queue(&["a", "b"]), "a", 7, Waited::Yes), Opening::Unknown);
    }

    #[test]
    fn two_or_more_behind_watch_the_last() {
        assert_eq!(after_hold(&queue(&["a", "b", "c"]), "a", 7, Waited::Yes), Opening::QueuedBehind("c".into()));
        assert_eq!(after_hold(&queue(&["a", "b", "c", "d"]), "a", 7, Waited::No), Opening::QueuedBehind("d".into()));
    }

    #[test]
    fn a_listing_without_our_node_arms_nothing_it_cannot_prove() {
        assert_eq!(after_hold(&queue(&["b", "c"]), "a", 7, Waited::Yes), Opening::Unknown);
        assert_eq!(after_hold(&[], "a", 7, Waited::No), Opening::Unknown);
    }

    #[test]
    fn only_a_mutex_uses_the_uncontended_shortcut() {
        let alone = Opening::AloneAfter(7);
        assert_eq!(usable(alone.clone(), Rule::FirstN(1), true), alone);
        assert_eq!(usable(alone.clone(), Rule::FirstN(1), false), alone);
        let writer = Rule::Writer { writer_name: "W" };
        assert_eq!(usable(alone.clone(), writer, true), Opening::Unknown);
        assert_eq!(usable(alone.clone(), Rule::Reader { writer_name: "W" }, true), Opening::Unknown);
        assert_eq!(usable(alone, Rule::FirstN(2), true), Opening::Unknown);
    }

    #[test]
    fn watching_behind_needs_a_rule_any_node_ahead_blocks_and_an_acquire_that_waits() {
        let behind = Opening::QueuedBehind("n".into());
        assert_eq!(usable(behind.clone(), Rule::FirstN(1), true), behind);
        assert_eq!(usable(behind.clone(), Rule::Writer { writer_name: "W" }, true), behind);
        assert_eq!(usable(behind.clone(), Rule::FirstN(1), false), Opening::Unknown);
        assert_eq!(usable(behind.clone(), Rule::Reader { writer_name: "W" }, true), Opening::Unknown);
        assert_eq!(usable(behind.clone(), Rule::Always, true), Opening::Unknown);
        assert_eq!(usable(behind, Rule::FirstN(3), true), Opening::Unknown);
    }

    #[test]
    fn only_our_own_delete_between_two_creates_proves_the_queue_empty() {
        assert!(holds_alone(&Opening::AloneAfter(7), 9));
        assert!(!holds_alone(&Opening::AloneAfter(7), 10), "another transaction came between");
        assert!(!holds_alone(&Opening::AloneAfter(7), 8));
        assert!(!holds_alone(&Opening::Unknown, 9));
        assert!(!holds_alone(&Opening::QueuedBehind("a".into()), 9));
    }
}
