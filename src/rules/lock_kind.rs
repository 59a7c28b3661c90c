//! The kinds of lock the wait-for graph reads, and what each node waits behind.
//!
//! The graph is `wait_for.rs`'s; a holder waits behind nothing, a waiter behind what its own rule
//! from `decide.rs` says.

use super::decide::Rule;
#[cfg(test)]
use super::decide::{decide, Decision};
use super::naming::{Schema, KAZOO_MUTEX, KAZOO_READ, KAZOO_READ_NAME, MUTEX, READ};

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
    /// kazoo's read-write layout (`ReadLock`'s `__rlock__` beside `WriteLock`'s `__lock__`).
    KazooReadWrite,
}

impl LockKind {
    /// Every kind, in the order a folder's kinds are read.
    pub(crate) const ALL: [LockKind; 4] =
        [LockKind::Mutex, LockKind::Kazoo, LockKind::ReadWrite, LockKind::KazooReadWrite];

    /// The kinds of lock whose nodes are among `children`, each read once. kazoo's `Lock` and
    /// `WriteLock` name their nodes alike: a queue with a `__rlock__` node is a read-write lock
    /// (read as a mutex, it would drop the readers), one of `__lock__` nodes only a kazoo mutex
    /// (a writer alone waits as a mutex's node does).
    pub(crate) fn present(children: &[String]) -> Vec<LockKind> {
        let kazoo_readers = KAZOO_READ.contenders(children.to_vec()).iter().any(|node| node.contains(KAZOO_READ_NAME));
        let present = LockKind::ALL.into_iter().filter(|kind| match kind {
            LockKind::Kazoo if kazoo_readers => false,
            LockKind::KazooReadWrite if !kazoo_readers => false,
            kind => !kind.schema().contenders(children.to_vec()).is_empty(),
        });
        present.collect()
    }

    /// How its nodes are named and ordered (a read-write lock's two sides share one order).
    pub(crate) fn schema(self) -> Schema {
        match self {
            LockKind::Mutex => MUTEX,
            LockKind::Kazoo => KAZOO_MUTEX,
            LockKind::ReadWrite => READ,
            LockKind::KazooReadWrite => KAZOO_READ,
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
            LockKind::ReadWrite | LockKind::KazooReadWrite => {
                let writer_name = self.schema().writer_name();
                match node.contains(writer_name) {
                    true => Rule::Writer { writer_name },
                    false => Rule::Reader { writer_name },
                }
            }
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
        assert_eq!(LockKind::ReadWrite.waits_behind(&writers), [none.clone(), vec![0], vec![0, 1]]);
        // kazoo's layout, by the recipe's rule (kazoo 2.9's): a reader behind the writers ahead
        // of it only; a writer behind every node ahead.
        let kazoo = queue(&[
            "a__rlock__0000000001",
            "b__lock__0000000002",
            "c__rlock__0000000003",
            "d__lock__0000000004",
            "e__rlock__0000000005",
        ]);
        let expected = [none.clone(), vec![0], vec![1], vec![0, 1, 2], vec![1, 3]];
        assert_eq!(LockKind::KazooReadWrite.waits_behind(&kazoo), expected);
        // A node waits behind nothing exactly when its rule lets it hold.
        for (kind, sorted) in [
            (LockKind::Mutex, &mutex),
            (LockKind::ReadWrite, &read_write),
            (LockKind::ReadWrite, &writers),
            (LockKind::KazooReadWrite, &kazoo),
        ] {
            for (node, behind) in sorted.iter().zip(kind.waits_behind(sorted)) {
                assert_eq!(behind.is_empty(), kind.holds(sorted, node), "{node}");
            }
        }
    }
}

#[cfg(test)]
mod present_tests {
    use super::*;

    #[test]
    fn a_kazoo_queue_with_readers_is_a_read_write_lock_and_without_a_mutex() {
        let queue = |names: &[&str]| names.iter().map(|name| (*name).to_owned()).collect::<Vec<_>>();
        let writers = queue(&["a__lock__0000000001", "b__lock__0000000002"]);
        assert_eq!(LockKind::present(&writers), [LockKind::Kazoo]);
        let mixed = queue(&["a__lock__0000000001", "b__rlock__0000000002", "config"]);
        assert_eq!(LockKind::present(&mixed), [LockKind::KazooReadWrite]);
        let both = queue(&["_c_x-lock-0000000001", "a__rlock__0000000002", "_c_y-__READ__0000000003"]);
        assert_eq!(LockKind::present(&both), [LockKind::Mutex, LockKind::ReadWrite, LockKind::KazooReadWrite]);
        assert!(LockKind::present(&queue(&["config"])).is_empty());
    }
}
