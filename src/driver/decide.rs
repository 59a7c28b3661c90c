//! The decision every recipe makes after listing the queue: hold, or watch whom.

/// What a participant does, given the sorted queue and its own node.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Decision<'a> {
    /// It holds the lock (it is among the first `max_leases`).
    Hold,
    /// It waits for `predecessor` to go.
    Watch {
        /// The node `max_leases` places ahead of ours.
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

/// Decides for the node named `ours` in `sorted` (queue order, holder first); `max_leases` is
/// how many may hold at once (1 for a mutex).
pub(crate) fn decide<'a>(sorted: &'a [String], ours: &str, max_leases: usize) -> Decision<'a> {
    let max_leases = max_leases.max(1);
    let Some(index) = sorted.iter().position(|child| child == ours) else {
        return Decision::Missing;
    };
    if index < max_leases {
        return Decision::Hold;
    }
    Decision::Watch { predecessor: &sorted[index - max_leases], holds_when_gone: index == max_leases }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queue(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| n.to_string()).collect()
    }

    #[test]
    fn first_holds() {
        assert_eq!(decide(&queue(&["a", "b"]), "a", 1), Decision::Hold);
        assert_eq!(decide(&queue(&["a"]), "a", 1), Decision::Hold);
    }

    #[test]
    fn second_watches_the_first_and_holds_when_it_goes() {
        assert_eq!(
            decide(&queue(&["a", "b", "c"]), "b", 1),
            Decision::Watch { predecessor: "a", holds_when_gone: true }
        );
    }

    #[test]
    fn later_waiters_watch_only_their_predecessor() {
        assert_eq!(
            decide(&queue(&["a", "b", "c", "d"]), "d", 1),
            Decision::Watch { predecessor: "c", holds_when_gone: false }
        );
    }

    #[test]
    fn missing_node_is_reported() {
        assert_eq!(decide(&queue(&["a", "b"]), "z", 1), Decision::Missing);
        assert_eq!(decide(&[], "z", 1), Decision::Missing);
    }

    #[test]
    fn several_leases_hold_together_and_watch_max_leases_back() {
        let q = queue(&["a", "b", "c", "d", "e"]);
        assert_eq!(decide(&q, "c", 3), Decision::Hold);
        assert_eq!(decide(&q, "d", 3), Decision::Watch { predecessor: "a", holds_when_gone: true });
        assert_eq!(decide(&q, "e", 3), Decision::Watch { predecessor: "b", holds_when_gone: false });
    }

    #[test]
    fn zero_leases_behaves_as_one() {
        assert_eq!(decide(&queue(&["a", "b"]), "a", 0), Decision::Hold);
    }
}
