//! The kinds of lock whose queues make the wait-for graph (`wait_for.rs`), and which nodes of
//! a queue hold, by each node's own rule from `decide.rs`.

use super::decide::{decide, Decision, Rule};
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

    /// Which nodes of `sorted` (queue order, as [`Schema::contenders`] gives it) hold, as each
    /// node's own rule decides: the first of a mutex; a writer when first, a reader when no
    /// writer is ahead (a downgrade's read node, level with its owner's write node, may show
    /// waiting behind it: a wait on its own task, left out of the graph).
    pub(crate) fn holders(self, sorted: &[String]) -> Vec<bool> {
        let rule = |node: &str| match self {
            LockKind::Mutex | LockKind::Kazoo => Rule::First,
            LockKind::ReadWrite if node.contains(WRITE_NAME) => Rule::Writer { writer_name: WRITE_NAME },
            LockKind::ReadWrite => Rule::Reader { writer_name: WRITE_NAME },
        };
        sorted.iter().map(|node| decide(sorted, node, rule(node)) == Decision::Hold).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holders_follow_each_nodes_rule() {
        let queue = |names: &[&str]| names.iter().map(|name| (*name).to_owned()).collect::<Vec<_>>();
        let mutex = queue(&["_c_a-lock-0000000001", "_c_b-lock-0000000002"]);
        assert_eq!(LockKind::Mutex.holders(&mutex), [true, false]);
        let read_write = queue(&[
            "_c_a-__READ__0000000001",
            "_c_b-__READ__0000000002",
            "_c_c-__WRIT__0000000003",
            "_c_d-__READ__0000000004",
        ]);
        assert_eq!(LockKind::ReadWrite.holders(&read_write), [true, true, false, false]);
        let writers = queue(&["_c_a-__WRIT__0000000001", "_c_b-__WRIT__0000000002", "_c_c-__READ__0000000003"]);
        assert_eq!(LockKind::ReadWrite.holders(&writers), [true, false, false]);
    }
}
