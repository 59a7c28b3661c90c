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

/// Hashes owners in a lock's hold table: an owner is one or two small integers, and the
/// table is looked up on every acquire and release, so the hash is a multiply per integer
/// (as rustc's `FxHasher`) instead of the standard library's SipHash, which cost the plain
/// acquire and its release about 400 instructions (`scripts/check-instructions`). Nobody
/// outside the process chooses the keys, so there is no flooding to resist.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct OwnerHasher(u64);

impl Hasher for OwnerHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_ne_bytes(word));
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    fn write_u8(&mut self, n: u8) {
        self.write_u64(n.into());
    }

    fn write_u32(&mut self, n: u32) {
        self.write_u64(n.into());
    }

    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }

    fn write_isize(&mut self, n: isize) {
        self.write_u64(n as u64);
    }
}

/// What a hold table hashes its owners with.
pub(crate) type OwnerHash = std::hash::BuildHasherDefault<OwnerHasher>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owners_hash_apart_in_every_bit_a_table_uses() {
        use std::hash::BuildHasher;
        let hashes: Vec<u64> = (0..64).map(|n| OwnerHash::default().hash_one(Owner::Acquire(n))).collect();
        // DashMap picks a shard from the top bits, hashbrown a bucket from the bottom ones.
        let top: std::collections::HashSet<u64> = hashes.iter().map(|hash| hash >> 60).collect();
        let bottom: std::collections::HashSet<u64> = hashes.iter().map(|hash| hash & 0xf).collect();
        assert_eq!((top.len(), bottom.len()), (16, 16), "{hashes:x?}");
    }

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
