//! The decision every recipe makes after listing the queue: hold, watch whom, or wait for room.

use super::naming::Schema;

/// What a participant does, given the sorted queue and its own node.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Decision<'a> {
    /// It holds the lock.
    Hold,
    /// It waits for `predecessor` to go.
    Watch {
        /// The node to wait for: `max_leases` places ahead of ours, or a reader's first writer.
        predecessor: &'a str,
        /// Ours is the next in line once `predecessor` goes, without listing again: a node
        /// created after ours gets a higher sequence and sorts after ours, so when exactly
        /// `max_leases` nodes were ahead of ours and one of them goes, fewer than `max_leases`
        /// remain ahead whatever else happens. The one node created later that sorts level
        /// with an older one is a downgrade's read node, level with its owner's write node:
        /// hence [`Rule::Writer`]. This speaks of the nodes ahead only: holding also needs our
        /// own node to exist, which the queue proves with a watch on it (anyone may delete it).
        holds_when_gone: bool,
    },
    /// A lease waits for the directory to change: it holds more than `max_leases` children.
    WaitForRoom,
    /// Our node is not in the queue: it was deleted (by its session's end or by someone else).
    Missing,
}

/// Who may hold, given the queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Rule {
    /// A mutex: the first node holds.
    First,
    /// A read-write lock's writer: holds when first. When the node ahead of it is a writer, its
    /// deletion is no handoff without a listing: that writer, while it held, may have taken the
    /// read lock, whose node sorts level with the write node and so ahead of ours (a downgrade,
    /// CURATOR-621).
    Writer { writer_name: &'static str },
    /// A reader holds when no node whose name contains `writer_name` is ahead of it (Curator's
    /// `readLockPredicate`); otherwise it watches the first writer.
    Reader { writer_name: &'static str },
    /// Holds at once: a read lock taken by the holder of the write lock (a downgrade).
    Always,
    /// A lease of Curator's `InterProcessSemaphoreV2`: holds while the leases directory has at
    /// most `max_leases` children, ours among them, and otherwise waits for it to change. Every
    /// child counts, in any order, as in Curator: a foreign child can only make us wait, never
    /// let a lease too many in. (Leases are taken one at a time, under the semaphore's mutex.)
    Leases { max_leases: usize },
}

impl Rule {
    /// Whether any node ahead of ours keeps ours from holding.
    pub(crate) fn blocked_by_any_node_ahead(self) -> bool {
        matches!(self, Rule::First | Rule::Writer { .. })
    }

    /// The children that take part in the decision, in the order it reads them: the schema's
    /// contenders in queue order, or for leases every child (see [`Rule::Leases`]).
    pub(crate) fn queue(self, schema: Schema, children: Vec<String>) -> Vec<String> {
        match self {
            Rule::Leases { .. } => children,
            _ => schema.contenders(children),
        }
    }

    /// Whether a wait that finds our node deleted queues again with a new node (within the
    /// acquire's patience, as Curator does), or ends with `LockLost(NodeDeleted)`: a lease taker starts
    /// over from the semaphore's mutex, as Curator's does, since a lease queued again under a
    /// hold of the mutex that may itself be gone could wait beside another taker's for ever.
    pub(crate) fn queues_again(self) -> bool {
        !matches!(self, Rule::Leases { .. })
    }
}

/// Decides for the node named `ours` in `sorted` (queue order, holder first) under `rule`.
pub(crate) fn decide<'a>(sorted: &'a [String], ours: &str, rule: Rule) -> Decision<'a> {
    let Some(index) = sorted.iter().position(|child| child == ours) else {
        return Decision::Missing;
    };
    match rule {
        Rule::Always => Decision::Hold,
        Rule::First => match index {
            0 => Decision::Hold,
            _ => Decision::Watch { predecessor: &sorted[index - 1], holds_when_gone: index == 1 },
        },
        Rule::Leases { max_leases } => match sorted.len() <= max_leases {
            true => Decision::Hold,
            false => Decision::WaitForRoom,
        },
        Rule::Writer { writer_name } => {
            if index == 0 {
                return Decision::Hold;
            }
            let predecessor = &sorted[index - 1];
            Decision::Watch { predecessor, holds_when_gone: index == 1 && !predecessor.contains(writer_name) }
        }
        Rule::Reader { writer_name } => {
            let mut writers_ahead = sorted[..index].iter().filter(|child| child.contains(writer_name));
            match writers_ahead.next() {
                None => Decision::Hold,
                // When the only writer ahead goes, none is left: a writer created later sorts
                // after us (and a downgrade's read node does not keep a reader out).
                Some(first) => Decision::Watch { predecessor: first, holds_when_gone: writers_ahead.next().is_none() },
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::naming::MUTEX;

    fn queue(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| n.to_string()).collect()
    }

    #[test]
    fn first_holds() {
        assert_eq!(decide(&queue(&["a", "b"]), "a", Rule::First), Decision::Hold);
        assert_eq!(decide(&queue(&["a"]), "a", Rule::First), Decision::Hold);
    }

    #[test]
    fn second_watches_the_first_and_holds_when_it_goes() {
        assert_eq!(
            decide(&queue(&["a", "b", "c"]), "b", Rule::First),
            Decision::Watch { predecessor: "a", holds_when_gone: true }
        );
    }

    #[test]
    fn later_waiters_watch_only_their_predecessor() {
        assert_eq!(
            decide(&queue(&["a", "b", "c", "d"]), "d", Rule::First),
            Decision::Watch { predecessor: "c", holds_when_gone: false }
        );
    }

    #[test]
    fn missing_node_is_reported() {
        assert_eq!(decide(&queue(&["a", "b"]), "z", Rule::First), Decision::Missing);
        assert_eq!(decide(&[], "z", Rule::First), Decision::Missing);
    }

    #[test]
    fn a_lease_holds_while_the_directory_has_room_counting_every_child() {
        let leases = Rule::Leases { max_leases: 3 };
        assert_eq!(decide(&queue(&["c", "a", "b"]), "c", leases), Decision::Hold);
        assert_eq!(decide(&queue(&["a", "b", "c", "d"]), "a", leases), Decision::WaitForRoom);
        assert_eq!(decide(&queue(&["a", "b", "foreign", "d"]), "d", leases), Decision::WaitForRoom);
        assert_eq!(decide(&queue(&["a", "b"]), "d", leases), Decision::Missing);
        assert_eq!(Rule::Leases { max_leases: 3 }.queue(MUTEX, queue(&["foreign", "b"])), queue(&["foreign", "b"]));
    }

    #[test]
    fn readers_share_until_a_writer_is_ahead_and_then_watch_the_first_writer() {
        let reader = Rule::Reader { writer_name: "W" };
        let q = queue(&["r1", "r2", "W3", "r4", "W5", "r6"]);
        assert_eq!(decide(&q, "r2", reader), Decision::Hold);
        assert_eq!(decide(&q, "r4", reader), Decision::Watch { predecessor: "W3", holds_when_gone: true });
        assert_eq!(decide(&q, "r6", reader), Decision::Watch { predecessor: "W3", holds_when_gone: false });
        // A writer waits for everything ahead of it, readers included.
        let writer = Rule::Writer { writer_name: "W" };
        assert_eq!(decide(&q, "W3", writer), Decision::Watch { predecessor: "r2", holds_when_gone: false });
        assert_eq!(decide(&q, "r6", Rule::Always), Decision::Hold);
        assert_eq!(decide(&q, "zz", Rule::Always), Decision::Missing);
    }

    #[test]
    fn a_writer_behind_a_writer_lists_again_when_it_goes() {
        // The writer ahead may have downgraded: its read node sorts level with it, ahead of us.
        let writer = Rule::Writer { writer_name: "W" };
        let q = queue(&["W1", "W2", "W3"]);
        assert_eq!(decide(&q, "W1", writer), Decision::Hold);
        assert_eq!(decide(&q, "W2", writer), Decision::Watch { predecessor: "W1", holds_when_gone: false });
        assert_eq!(decide(&q, "W3", writer), Decision::Watch { predecessor: "W2", holds_when_gone: false });
        // Behind a lone reader (a downgraded one, say) nothing new can come ahead.
        let q = queue(&["r1", "W2"]);
        assert_eq!(decide(&q, "W2", writer), Decision::Watch { predecessor: "r1", holds_when_gone: true });
    }

    #[test]
    fn only_a_lease_taker_starts_over_instead_of_queueing_again() {
        assert!(Rule::First.queues_again());
        assert!(Rule::Reader { writer_name: "W" }.queues_again());
        assert!(!Rule::Leases { max_leases: 2 }.queues_again());
    }
}
