//! Who is asking for a lock: the identity that reentrancy is counted for.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread::ThreadId;

use tokio::task::Id as TaskId;

use crate::rules::owner_tag::OwnerTag;

/// The current tokio task, or the current thread outside of a task (as in `block_on`).
///
/// Curator counts holds per thread; a tokio task moves between threads, so the task is the
/// owner here. Neither kind of id is reused within a process today: tokio numbers tasks with a
/// 64-bit counter and `ThreadId` is never reused. tokio only promises uniqueness among live
/// tasks, which is why a guard also carries the id of its hold (see `mutex.rs`): a stale guard
/// can never change a later hold of the same owner.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Owner {
    Task(TaskId),
    Thread(ThreadId),
    /// One acquire of a non-reentrant lock: no other acquire is ever the same owner.
    Acquire(u64),
}

impl Owner {
    /// An owner no other acquire shares, for locks that are not reentrant.
    pub(crate) fn unique() -> Owner {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        Owner::Acquire(NEXT.fetch_add(1, Ordering::Relaxed))
    }

    pub(crate) fn current() -> Owner {
        match tokio::task::try_id() {
            Some(task) => Owner::Task(task),
            None => Owner::Thread(std::thread::current().id()),
        }
    }

    /// The owner tag that the nodes this owner creates carry when its lock looks for deadlocks
    /// (`rules/owner_tag.rs`): a hash of it, the same for every lock of the process (the
    /// hasher has fixed keys), compared only within its session.
    pub(crate) fn tag(self) -> OwnerTag {
        let mut hasher = DefaultHasher::new();
        self.hash(&mut hasher);
        OwnerTag::from_hash(hasher.finish())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn tasks_are_distinct_owners_and_stable_within_a_task() {
        let here = tokio::spawn(async { (Owner::current(), Owner::current()) }).await.unwrap();
        assert_eq!(here.0, here.1);
        let there = tokio::spawn(async { Owner::current() }).await.unwrap();
        assert_ne!(here.0, there);
        assert!(matches!(there, Owner::Task(_)));
    }

    #[tokio::test]
    async fn a_task_has_one_tag_and_tasks_have_their_own() {
        let here = tokio::spawn(async { (Owner::current().tag(), Owner::current().tag()) }).await.unwrap();
        assert_eq!(here.0, here.1);
        let there = tokio::spawn(async { Owner::current().tag() }).await.unwrap();
        assert_ne!(here.0, there);
    }

    #[test]
    fn unique_owners_are_never_equal() {
        assert_ne!(Owner::unique(), Owner::unique());
    }

    #[test]
    fn outside_a_task_the_thread_owns() {
        let main = Owner::current();
        assert_eq!(main, Owner::Thread(std::thread::current().id()));
        let other = std::thread::spawn(Owner::current).join().unwrap();
        assert_ne!(main, other);
    }
}
