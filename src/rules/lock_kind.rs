//! The kinds of lock whose queues make the wait-for graph (`wait_for.rs`), and what each node of
//! a queue waits behind (nothing for a holder), by its own rule from `decide.rs`.

use super::decide::Rule;
#[cfg(test)]
use super::decide::{decide, Decision};
use super::naming::{Schema, KAZOO_MUTEX, MUTEX, READ, WRITE_NAME};

/// The kinds of lock whose waits make the graph, each told by its nodes' names. A semaphore's
/// waiter goes on when any one lease is let go, so a ring through it is no deadlock unless
/// every lease holder is stuck (its `locks/` folder, a plain mutex, is read as one); an
/// election's participants wait for leadership, not for a lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum LockKind {
    /// Curator's `InterProcessMutex` (zklock's default schema).
    Mutex,
    /// kazoo's `Lock` (zklock's kazoo schema).
    Kazoo,
    /// Curator's read-write layout.
    ReadWrite,
}

impl LockKind {
    /// Every kind, in the order a folder's kinds are read.
    pub(crate) const ALL: [LockKind; 3] = [LockKind::Mutex, LockKind::Kazoo, LockKind::ReadWrite];

    /// How its nodes are named and ordered (a read-write lock's two sides share one order).
    pub(crate) fn schema(self) -> Schema {
        match self {
            LockKind::Mutex => MUTEX,
            LockKind::Kazoo => KAZOO_MUTEX,
            LockKind::ReadWrite => READ,
        }
    }

    /// What each node of `sorted` (queue order, as [`Schema::contenders`] gives it) waits
    /// behind, by its own rule: the indices of the nodes ahead of it that must go before it may
    /// hold, none for a node that holds. A mutex's node and a writer wait behind every node
    /// ahead ([`Rule::blocked_by_any_node_ahead`]), held or waiting; a reader behind every
    /// writer ahead, held or waiting (readers ahead never keep it out). A node waiting behind
    /// another that waits too really waits on that one's owner: it goes only after that one
    /// has held and let go, or given up. (A downgrade's read node, level with its owner's write
    /// node, may show waiting behind it: a wait on its own task, left out of the graph.)
    pub(crate) fn waits_behind(self, sorted: &[String]) -> Vec<Vec<usize>> {
        let blocks = |rule: Rule, ahead: &str| match rule {
            Rule::Reader { writer_name } => ahead.contains(writer_name),
            rule => rule.blocked_by_any_node_ahead(),
        };
        let behind = sorted.iter().enumerate().map(|(i, node)| {
            let rule = self.rule(node);
            let ahead = sorted[..i].iter().enumerate();
            ahead.filter(|(_, ahead)| blocks(rule, ahead)).map(|(j, _)| j).collect::<Vec<usize>>()
        });
        behind.collect()
    }

    /// Whether `node` of `sorted` holds, as its rule decides (`decide.rs`).
    #[cfg(test)]
    fn holds(self, sorted: &[String], node: &str) -> bool {
        decide(sorted, node, self.rule(node)) == Decision::Hold
    }

    /// The rule a node of this kind waits by.
    fn rule(self, node: &str) -> Rule {
        match self {
            LockKind::Mutex | LockKind::Kazoo => Rule::First,
            LockKind::ReadWrite if node.contains(WRITE_NAME) => Rule::Writer { writer_name: WRITE_NAME },
            LockKind::ReadWrite => Rule::Reader { writer_name: WRITE_NAME },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_node_waits_behind_what_its_rule_says() {
        let queue = |names: &[&str]| names.iter().map(|name| (*name).to_owned()).collect::<Vec<_>>();
        let mutex = queue(&["_c_a-lock-0000000001", "_c_b-lock-0000000002", "_c_c-lock-0000000003"]);
        let none: Vec<usize> = Vec::new();
        assert_eq!(LockKind::Mutex.waits_behind(&mutex), [none.clone(), vec![0], vec![0, 1]]);
        let read_write = queue(&[
            "_c_a-__READ__0000000001",
            "_c_b-__READ__0000000002",
            "_c_c-__WRIT__0000000003",
            "_c_d-__READ__0000000004",
            "_c_e-__WRIT__0000000005",
            "_c_f-__READ__0000000006",
        ]);
        // Two readers hold; the writer waits behind both; a reader behind the writer (waiting);
        // the second writer behind everyone ahead; the last reader behind both writers.
        let expected = [none.clone(), none.clone(), vec![0, 1], vec![2], vec![0, 1, 2, 3], vec![2, 4]];
        assert_eq!(LockKind::ReadWrite.waits_behind(&read_write), expected);
        let writers = queue(&["_c_a-__WRIT__0000000001", "_c_b-__WRIT__0000000002", "_c_c-__READ__0000000003"]);
        assert_eq!(LockKind::ReadWrite.waits_behind(&writers), [none, vec![0], vec![0, 1]]);
        // A node waits behind nothing exactly when its rule lets it hold.
        for (kind, sorted) in
            [(LockKind::Mutex, &mutex), (LockKind::ReadWrite, &read_write), (LockKind::ReadWrite, &writers)]
        {
            for (node, behind) in sorted.iter().zip(kind.waits_behind(sorted)) {
                assert_eq!(behind.is_empty(), kind.holds(sorted, node), "{node}");
            }
        }
    }
}
