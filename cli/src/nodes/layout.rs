//! Which kind of lock a path already holds, read from its nodes, so that a mode that cannot share
//! the path with them is refused instead of silently running beside them.

use std::collections::BTreeSet;
use std::fmt;

use zookeeper_client::{Client, Error as ZkError};

use crate::nodes::node_data::NodeData;
use crate::output::exit::{Failure, Outcome};

/// A kind of lock, as its nodes show it. Two kinds never see each other's nodes, so two modes
/// of different kinds on one path would not exclude each other.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// Curator's read-write layout: `_c_{uuid}-__READ__{seq}` and `_c_{uuid}-__WRIT__{seq}`.
    ReadWrite,
    /// Curator's `InterProcessMutex`: `_c_{uuid}-lock-{seq}`.
    Mutex,
    /// kazoo's `Lock` (and a kazoo `Election`, which is one): `{hex}__lock__{seq}`.
    Kazoo,
    /// kazoo's `ReadLock`/`WriteLock`: `{hex}__rlock__{seq}` beside `{hex}__lock__{seq}`. A path
    /// with a `__rlock__` node is one; its `__lock__` nodes are then its writers.
    KazooReadWrite,
    /// `InterProcessSemaphoreV2`: lease nodes under `leases/`, its own mutex under `locks/`.
    Semaphore,
    /// An election of Curator's `LeaderLatch` (`zklock elect`): `_c_{uuid}-latch-{seq}`.
    Latch,
    /// kazoo's `Semaphore`: leases `{hex32}` directly under the path, takers queued on a kazoo
    /// lock at the sibling `{path}-__lock__`, the maximum stored as the path's data.
    KazooSemaphore,
}

/// What a mode puts on a path: its kind of lock and, for a semaphore, its number of leases
/// (participants that count differently do not exclude each other as either expects).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    pub kind: Kind,
    pub leases: Option<u32>,
}

/// The semaphore's two folders under the lock path.
pub const SEMAPHORE_FOLDERS: [&str; 2] = ["leases", "locks"];

impl Kind {
    /// The kind of a lock node directly under a lock path; `None` for another child (or a
    /// semaphore folder, which counts only when it has nodes in it).
    pub fn of_node(name: &str) -> Option<Kind> {
        if !name.ends_with(|c: char| c.is_ascii_digit()) {
            return None;
        }
        if name.contains("__READ__") || name.contains("__WRIT__") {
            Some(Kind::ReadWrite)
        } else if name.contains("__rlock__") {
            Some(Kind::KazooReadWrite)
        } else if name.contains("__lock__") {
            Some(Kind::Kazoo)
        } else if name.contains("-lock-") {
            Some(Kind::Mutex)
        } else if name.contains("-latch-") {
            Some(Kind::Latch)
        } else {
            None
        }
    }

    /// The name used in JSON and in the text listing.
    pub fn name(self) -> &'static str {
        match self {
            Kind::ReadWrite => "read-write",
            Kind::Mutex => "mutex",
            Kind::Kazoo => "kazoo",
            Kind::KazooReadWrite => "kazoo-read-write",
            Kind::Semaphore => "semaphore",
            Kind::Latch => "leader-latch",
            Kind::KazooSemaphore => "kazoo-semaphore",
        }
    }

    /// The options (or subcommand) that take this kind of lock.
    fn options(self) -> &'static str {
        match self {
            Kind::ReadWrite => "the default, --write or --read",
            Kind::Mutex => "--mutex",
            Kind::Kazoo => "--kazoo",
            Kind::KazooReadWrite => "--kazoo --write or --kazoo --read",
            Kind::Semaphore => "--semaphore",
            Kind::Latch => "zklock elect",
            Kind::KazooSemaphore => "--semaphore N --kazoo",
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let noun = if *self == Kind::Latch { "election" } else { "lock" };
        write!(f, "{} {noun} ({})", self.name(), self.options())
    }
}

/// Whether `name`, a child of a lock path, is a lease of kazoo's `Semaphore`: a uuid as 32 hex
/// digits (kazoo's `uuid4().hex`), nothing more.
pub fn is_kazoo_lease(name: &str) -> bool {
    name.len() == 32 && name.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// The gate of a kazoo `Semaphore` on `path`: the kazoo lock its takers queue on.
pub fn kazoo_gate(path: &str) -> String {
    format!("{path}-__lock__")
}

/// The maximum a kazoo `Semaphore` on `path` stores as the path's data (`None` when there is
/// none, or it is no number).
pub async fn kazoo_stored_leases(client: &Client, path: &str) -> Result<Option<u32>, Failure> {
    match client.get_data(path).await {
        Ok((data, _)) => Ok(String::from_utf8_lossy(&data).trim().parse().ok()),
        Err(ZkError::NoNode) => Ok(None),
        Err(err) => Err(Failure::zookeeper("get", path, err)),
    }
}

/// The kinds of lock that have nodes under `path` now (a kazoo semaphore's waiters are on its
/// sibling gate). Syncs first, so that a node another client created before this call is seen.
pub async fn kinds_present(client: &Client, path: &str) -> Result<BTreeSet<Kind>, Failure> {
    let mut kinds = BTreeSet::new();
    match client.sync(path).await {
        Ok(()) | Err(ZkError::NoNode) => {}
        Err(err) => return Err(Failure::zookeeper("sync", path, err)),
    }
    for child in list(client, path).await? {
        if SEMAPHORE_FOLDERS.contains(&child.as_str()) {
            if !list(client, &format!("{path}/{child}")).await?.is_empty() {
                kinds.insert(Kind::Semaphore);
            }
        } else if let Some(kind) = Kind::of_node(&child) {
            kinds.insert(kind);
        } else if is_kazoo_lease(&child) {
            kinds.insert(Kind::KazooSemaphore);
        }
    }
    if kinds.contains(&Kind::KazooReadWrite) {
        // Its writers' `__lock__` nodes are named as a kazoo `Lock`'s: one queue, not two.
        kinds.remove(&Kind::Kazoo);
    }
    let gate = list(client, &kazoo_gate(path)).await?;
    if gate.iter().any(|node| Kind::of_node(node) == Some(Kind::Kazoo)) {
        kinds.insert(Kind::KazooSemaphore);
    }
    Ok(kinds)
}

async fn list(client: &Client, path: &str) -> Result<Vec<String>, Failure> {
    match client.list_children(path).await {
        Ok(children) => Ok(children),
        Err(ZkError::NoNode) => Ok(Vec::new()),
        Err(err) => Err(Failure::zookeeper("list", path, err)),
    }
}

/// Whether a participant of kind `ours` shares a path with nodes of kind `theirs`: of one kind
/// only, but for kazoo's read-write lock, whose writers' nodes are named as a kazoo `Lock`'s
/// (a path with writers only reads as `Kazoo`; a kazoo `Lock` there is not told from a writer).
pub fn shares(ours: Kind, theirs: Kind) -> bool {
    ours == theirs || (ours == Kind::KazooReadWrite && theirs == Kind::Kazoo)
}

/// Refuses `ours` on a path where another kind of lock has nodes.
pub fn check(path: &str, ours: Kind, present: &BTreeSet<Kind>) -> Result<(), Failure> {
    match present.iter().find(|kind| !shares(ours, **kind)) {
        None => Ok(()),
        Some(theirs) => Err(Failure::new(
            Outcome::Usage,
            format!("{path} is in use as a {theirs}; a {ours} cannot share it (use one kind of lock per path)"),
        )),
    }
}

/// Refuses `ours` on a path where another kind of lock has nodes now, or, for a semaphore, a
/// zklock lease that counts another number of leases.
pub async fn ensure_alone(client: &Client, path: &str, ours: Layout) -> Result<(), Failure> {
    check(path, ours.kind, &kinds_present(client, path).await?)?;
    let Some(leases) = ours.leases else { return Ok(()) };
    let folder = format!("{path}/leases");
    for lease in list(client, &folder).await? {
        let data = match client.get_data(&format!("{folder}/{lease}")).await {
            Ok((data, _)) => data,
            Err(ZkError::NoNode) => continue,
            Err(err) => return Err(Failure::zookeeper("get", &folder, err)),
        };
        let theirs = NodeData::parse(&String::from_utf8_lossy(&data)).and_then(|data| data.leases);
        if let Some(theirs) = theirs.filter(|theirs| *theirs != leases) {
            return Err(Failure::new(
                Outcome::Usage,
                format!("{path} is in use as a semaphore of {theirs} leases; one of {leases} cannot share it"),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_are_told_apart_by_their_names() {
        let uuid = "_c_6ba7b810-9dad-11d1-80b4-00c04fd430c8-";
        assert_eq!(Kind::of_node(&format!("{uuid}__WRIT__0000000003")), Some(Kind::ReadWrite));
        assert_eq!(Kind::of_node(&format!("{uuid}__READ__0000000004")), Some(Kind::ReadWrite));
        assert_eq!(Kind::of_node(&format!("{uuid}lock-0000000001")), Some(Kind::Mutex));
        assert_eq!(Kind::of_node("6ba7b8109dad11d180b400c04fd430c8__lock__0000000002"), Some(Kind::Kazoo));
        assert_eq!(Kind::of_node("6ba7b8109dad11d180b400c04fd430c8__rlock__0000000002"), Some(Kind::KazooReadWrite));
        assert_eq!(Kind::of_node(&format!("{uuid}latch-0000000005")), Some(Kind::Latch));
        assert_eq!(Kind::of_node("config"), None);
        assert_eq!(Kind::of_node("leases"), None);
        assert!(is_kazoo_lease("6ba7b8109dad11d180b400c04fd430c8"));
        assert!(!is_kazoo_lease("6ba7b8109dad11d180b400c04fd430c8__lock__0000000002"));
        assert!(!is_kazoo_lease("6BA7B8109DAD11D180B400C04FD430C8"), "kazoo's hex is lowercase");
        assert!(!is_kazoo_lease("config"));
        assert_eq!(kazoo_gate("/app/sem"), "/app/sem-__lock__");
    }

    #[test]
    fn only_another_kind_is_refused() {
        let present = BTreeSet::from([Kind::ReadWrite]);
        assert!(check("/p", Kind::ReadWrite, &present).is_ok());
        assert!(check("/p", Kind::ReadWrite, &BTreeSet::new()).is_ok());
        let refused = check("/p", Kind::Semaphore, &present).unwrap_err();
        assert_eq!(refused.outcome, Outcome::Usage);
        assert!(refused.message.contains("read-write lock"), "{}", refused.message);
    }
}
