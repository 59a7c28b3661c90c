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
        /// remain ahead whatever else happens.
        holds_when_gone: bool,
    },
    /// Our node is not in the queue: it was deleted (by its session's end or by someone else).
    Missing,
}

/// Who may hold, given the queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Rule {
    /// The first `n` nodes hold (1 for a mutex or a write lock).
    FirstN(usize),
    /// A reader holds when no node whose name contains `writer_name` is ahead of it (Curator's
    /// `readLockPredicate`); otherwise it watches the first writer.
    Reader { writer_name: &'static str },
    /// Holds at once: a read lock taken by the holder of the write lock (a downgrade).
    Always,
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
        Rule::Reader { writer_name } => {
            let mut writers_ahead = sorted[..index].iter().filter(|child| child.contains(writer_name));
            match writers_ahead.next() {
                None => Decision::Hold,
                // When the only writer ahead goes, none is left: a writer created later sorts
                // after us.
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
        assert_eq!(decide(&q, "W3", Rule::FirstN(1)), Decision::Watch { predecessor: "r2", holds_when_gone: false });
        assert_eq!(decide(&q, "r6", Rule::Always), Decision::Hold);
        assert_eq!(decide(&q, "zz", Rule::Always), Decision::Missing);
    }

    #[test]
    fn zero_leases_behaves_as_one() {
        assert_eq!(decide(&queue(&["a", "b"]), "a", Rule::FirstN(0)), Decision::Hold);
    }
}
