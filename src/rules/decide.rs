//! The decision every recipe makes after listing the queue: hold, or watch whom.

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
    /// Our node is not in the queue: it was deleted (by its session's end or by someone else).
    Missing,
}

/// Who may hold, given the queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Rule {
    /// The first `n` nodes hold (1 for a mutex, `max_leases` for a semaphore's leases).
    FirstN(usize),
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
}

impl Rule {
    /// Whether any node ahead of ours keeps ours from holding.
    pub(crate) fn blocked_by_any_node_ahead(self) -> bool {
        matches!(self, Rule::FirstN(1) | Rule::Writer { .. })
    }
}

/// Decides for the node named `ours` in `sorted` (queue order, holder first) under `rule`.
pub(crate) fn decide<'a>(sorted: &'a [String], ours: &str, rule: Rule) -> Decision<'a> {
    let Some(index) = sorted.iter().position(|child| child == ours) else {
        return Decision::Missing;
    };
    match rule {
        Rule::Always => Decision::Hold,
        Rule::FirstN(max_leases) => {
            let max_leases = max_leases.max(1);
            if index < max_leases {
                return Decision::Hold;
            }
            Decision::Watch { predecessor: &sorted[index - max_leases], holds_when_gone: index == max_leases }
        }
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

    fn queue(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| n.to_string()).collect()
    }

    #[test]
    fn first_holds() {
        assert_eq!(decide(&queue(&["a", "b"]), "a", Rule::FirstN(1)), Decision::Hold);
        assert_eq!(decide(&queue(&["a"]), "a", Rule::FirstN(1)), Decision::Hold);
    }

    #[test]
    fn second_watches_the_first_and_holds_when_it_goes() {
        assert_eq!(
            decide(&queue(&["a", "b", "c"]), "b", Rule::FirstN(1)),
            Decision::Watch { predecessor: "a", holds_when_gone: true }
        );
    }

    #[test]
    fn later_waiters_watch_only_their_predecessor() {
        assert_eq!(
            decide(&queue(&["a", "b", "c", "d"]), "d", Rule::FirstN(1)),
            Decision::Watch { predecessor: "c", holds_when_gone: false }
        );
    }

    #[test]
    fn missing_node_is_reported() {
        assert_eq!(decide(&queue(&["a", "b"]), "z", Rule::FirstN(1)), Decision::Missing);
        assert_eq!(decide(&[], "z", Rule::FirstN(1)), Decision::Missing);
    }

    #[test]
    fn several_leases_hold_together_and_watch_max_leases_back() {
        let q = queue(&["a", "b", "c", "d", "e"]);
        assert_eq!(decide(&q, "c", Rule::FirstN(3)), Decision::Hold);
        assert_eq!(decide(&q, "d", Rule::FirstN(3)), Decision::Watch { predecessor: "a", holds_when_gone: true });
        assert_eq!(decide(&q, "e", Rule::FirstN(3)), Decision::Watch { predecessor: "b", holds_when_gone: false });
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
    fn zero_leases_behaves_as_one() {
        assert_eq!(decide(&queue(&["a", "b"]), "a", Rule::FirstN(0)), Decision::Hold);
    }
}
