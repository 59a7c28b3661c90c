//! The rule each lock object's acquire queues under, downgrades and refused upgrades.
//!
//! Decided from what the asking owner already holds of the other side. No I/O.

use super::decide::Rule;
use super::naming::Schema;

/// What a lock object is: a mutex, or one side of a read-write lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    Mutex,
    Read,
    Write,
}

/// How an acquire that must queue enters the queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Entry<'a> {
    /// Who may hold.
    pub(crate) rule: Rule,
    /// The sort key our node takes instead of a sequence number: a downgrade's read node takes
    /// its owner's write node's key (Curator 5.5's layout, CURATOR-621), so that it sorts level
    /// with the write node, ahead of every writer queued behind it, and keeps them out once the
    /// write lock is released.
    pub(crate) level_with: Option<Level<'a>>,
}

/// Where a downgrade's read node stands: level with its owner's write node, which must still
/// exist once the read node is there (the read hold stands on the write hold's place in the
/// queue: an operator may have deleted the write node before its owner could know).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Level<'a> {
    /// The sort key the read node takes: the write node's.
    pub(crate) key: &'a str,
    /// The write node.
    pub(crate) node: &'a str,
}

impl<'a> Level<'a> {
    /// Level with `write_node` (a node name or path of `schema`).
    pub(crate) fn beside(schema: Schema, write_node: &'a str) -> Self {
        Level { key: schema.sort_key(write_node), node: write_node }
    }
}

/// How an owner's acquire of `role` enters the queue, given the node it holds on the other side
/// of the same read-write lock, if any (`other_side`, a node name or path of `schema`).
///
/// `Err` with the reason when the acquire would wait for ever on its own owner: a reader asking
/// for the write lock would queue behind its own read node (no upgrades; Curator's would wait
/// for ever).
pub(crate) fn entry<'a>(role: Role, schema: Schema, other_side: Option<&'a str>) -> Result<Entry<'a>, &'static str> {
    let queue = |rule| Ok(Entry { rule, level_with: None });
    match (role, other_side) {
        (Role::Mutex, _) => queue(Rule::First),
        (Role::Write, Some(_)) => Err("a read lock holder cannot take the write lock (no upgrades)"),
        (Role::Write, None) => queue(Rule::Writer { writer_name: schema.writer_name() }),
        // The write holder may read: a downgrade, never a wait.
        (Role::Read, Some(write_node)) => {
            Ok(Entry { rule: Rule::Always, level_with: Some(Level::beside(schema, write_node)) })
        }
        (Role::Read, None) => queue(Rule::Reader { writer_name: schema.writer_name() }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::naming::{KAZOO_READ, KAZOO_WRITE, MUTEX, READ, WRITE, WRITE_NAME};

    #[test]
    fn each_side_queues_under_its_own_rule() {
        assert_eq!(entry(Role::Mutex, MUTEX, None).unwrap().rule, Rule::First);
        assert_eq!(entry(Role::Write, WRITE, None).unwrap().rule, Rule::Writer { writer_name: WRITE_NAME });
        assert_eq!(
            entry(Role::Read, READ, None).unwrap(),
            Entry { rule: Rule::Reader { writer_name: WRITE_NAME }, level_with: None }
        );
    }

    #[test]
    fn kazoo_sides_wait_for_kazoos_write_nodes() {
        assert_eq!(entry(Role::Write, KAZOO_WRITE, None).unwrap().rule, Rule::Writer { writer_name: "__lock__" });
        assert_eq!(entry(Role::Read, KAZOO_READ, None).unwrap().rule, Rule::Reader { writer_name: "__lock__" });
        let write_node = "/app/rw/6ba7b8109dad11d180b400c04fd430c8__lock__0000000042";
        let downgrade = entry(Role::Read, KAZOO_READ, Some(write_node)).unwrap();
        assert_eq!(downgrade.level_with, Some(Level { key: "0000000042", node: write_node }));
    }

    #[test]
    fn the_write_holders_read_node_sorts_level_with_its_write_node() {
        let write_node = "/app/rw/_c_0b5e3c1e-58a4-4c4f-9b1a-8d1f00000000-__WRIT__0000000042";
        let downgrade = entry(Role::Read, READ, Some(write_node)).unwrap();
        let level = Level { key: "0000000042", node: write_node };
        assert_eq!(downgrade, Entry { rule: Rule::Always, level_with: Some(level) });
    }

    #[test]
    fn a_reader_may_not_upgrade() {
        let read_node = "_c_0b5e3c1e-58a4-4c4f-9b1a-8d1f00000000-__READ__0000000007";
        assert!(entry(Role::Write, WRITE, Some(read_node)).is_err());
    }
}
