//! A lock object's state: its connection, path, options and hold table.
//!
//! The hold table counts owner -> holds; the state is shared by the clones of a recipe object and
//! by its guards.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::Instant;

use dashmap::mapref::entry::Entry;
use dashmap::DashMap;
use tokio::sync::futures::OwnedNotified;
use tokio::sync::Notify;
use zookeeper_client::Client;

use crate::client::session::Connection;
use crate::error::LossReason;
use crate::hold::held_node::{Acquired, HeldNode};
use crate::hold::session_watch::LatestSessionWatch;
use crate::lock::cohort::{Cohort, Handoff};
use crate::lock::owner::{Owner, OwnerHash};
use crate::observe::label::LockLabel;
use crate::options::{AclProvider, DeadlockCheck, Settings};
use crate::queue::node::LockNode;
use crate::rules::entry::Role;
use crate::rules::naming::Schema;
use crate::rules::opening::Opening;
use crate::rules::owner_tag::{ChainTag, NodeMark, Tag};

/// Shards of a hold table (DashMap wants a power of two above one).
const HOLD_TABLE_SHARDS: usize = 2;

/// A lock object's state; see the module docs. Never hold a map reference across an `.await`.
#[derive(Debug)]
pub(crate) struct LockState {
    pub(crate) role: Role,
    /// How its nodes are named and ordered.
    pub(crate) schema: Schema,
    /// The other side of a read-write lock.
    sibling: OnceLock<Weak<LockState>>,
    /// What it runs on: a client, or a session that outlives its expiries.
    pub(crate) connection: Connection,
    pub(crate) path: String,
    pub(crate) data: Vec<u8>,
    pub(crate) acls: AclProvider,
    /// Whether, where and how often a waiting acquire looks for a deadlock it is part of.
    pub(crate) deadlock: Option<DeadlockCheck>,
    /// Names it in events and metrics.
    pub(crate) label: LockLabel,
    /// Whether its nodes are an election's (a leader selector's), marked as such.
    election: bool,
    /// The chain of processes its nodes say they are part of (`MutexBuilder::owner_chain`).
    chain: Option<ChainTag>,
    /// Whether an owner (task or thread) re-enters its hold; else every acquire queues anew.
    reentrant: bool,
    /// How long a hold of its may last (`max_hold`), counted from the node's first holder.
    max_hold: Option<std::time::Duration>,
    pub(crate) session_watch: LatestSessionWatch,
    /// This process's line of tasks behind one queue node, with local handoff.
    pub(crate) cohort: Option<Arc<Cohort>>,
    holds: DashMap<Owner, Slot, OwnerHash>,
    next_hold_id: AtomicU64,
    /// What our last released hold lets the next acquire send with its create instead of a
    /// listing (DESIGN.md, "Round trips"). Taken by the next acquire, whatever happens to it.
    next_opening: std::sync::Mutex<Opening>,
}

#[derive(Debug)]
enum Slot {
    /// The owner's first acquire is under way; its other acquires wait on this, then re-enter.
    /// Made by the first of them (`join!` of two acquires of one task): a lone acquire, the
    /// usual one, allocates nothing for it.
    Acquiring(Option<Arc<Notify>>),
    /// Held; with what the next acquire may open with once this hold's delete is confirmed
    /// (kept here, not in the `Hold` every guard clones: a reentry costs no allocation).
    Held(OwnerHold, Opening),
}

/// One owner's hold on the lock.
#[derive(Clone, Debug)]
pub(crate) struct OwnerHold {
    /// Tells this hold from a later one of the same owner, so a stale guard changes nothing.
    pub(crate) id: u64,
    count: usize,
    pub(crate) node: Arc<HeldNode>,
    /// The node's czxid, or with local handoff this holder's token on it.
    pub(crate) fencing_token: i64,
}

/// The last release of a hold: its node to delete, and what the next acquire may open with
/// once that delete is confirmed (see [`LockState::record_opening`]).
#[derive(Debug)]
pub(crate) struct LastRelease {
    pub(crate) node: Arc<HeldNode>,
    pub(crate) next_opening: Opening,
}

/// What an acquiring owner does next.
#[derive(Debug)]
pub(crate) enum Admission {
    /// The owner already held the lock: its count went up.
    Reentered(OwnerHold),
    /// The owner holds the lock, but it is lost: no new guard.
    Lost(LossReason),
    /// The owner's own acquire is under way: wait for it, then ask again.
    WaitForOwnAcquire(OwnedNotified),
    /// The owner must take a place in the queue.
    Queue(Claim),
}

/// The owner's hold entered once more (its count up), or why it cannot be: it is lost.
fn enter_again(hold: &mut OwnerHold) -> std::result::Result<OwnerHold, LossReason> {
    match hold.node.loss() {
        Some(reason) => Err(reason),
        None => {
            hold.count += 1;
            Ok(hold.clone())
        }
    }
}

impl LockState {
    pub(crate) fn new(
        role: Role,
        schema: Schema,
        label: LockLabel,
        connection: Connection,
        path: String,
        settings: Settings,
    ) -> Self {
        let session_watch = LatestSessionWatch::new(&connection.client(), settings.common.loss_policy);
        // A read lock's holders share it anyway; only exclusive sides hand off.
        let cohort = settings.local_handoff.filter(|_| role != Role::Read).map(Cohort::new);
        LockState {
            cohort,
            label,
            role,
            schema,
            sibling: OnceLock::new(),
            connection,
            path,
            deadlock: settings.deadlock_check(),
            data: settings.common.data,
            acls: settings.common.acls,
            reentrant: settings.reentrant,
            max_hold: settings.common.max_hold,
            election: settings.election,
            // `validate` refused an id over 48 bits.
            chain: settings.owner_chain.and_then(ChainTag::new),
            session_watch,
            // A hold table has an entry per owner holding or acquiring: a few at most. DashMap's
            // default of four shards per core (each padded to a cache line) would cost a
            // kilobyte per lock here and 32 KB on a 64-core host, for 10,000 locks 320 MB.
            holds: DashMap::with_hasher_and_shard_amount(OwnerHash::default(), HOLD_TABLE_SHARDS),
            next_hold_id: AtomicU64::new(1),
            next_opening: std::sync::Mutex::new(Opening::Unknown),
        }
    }

    /// What the uuid of the current acquire's node carries. The chain's id when the lock is a
    /// link of one: every task of the process is then the chain's, one owner with the other
    /// processes of it, so a hold passed between tasks (local handoff) stays the chain's.
    /// Else the owner tag of the current task (or thread), when this lock looks for deadlocks,
    /// so that the graph tells the tasks of our session apart. The task, even when the lock is
    /// not reentrant: what waits and holds is the task, and a task holding one lock while it
    /// waits on another is one vertex, whatever counts its holds. None with local handoff: a
    /// hold passes from task to task behind one node, which would then name a task that no
    /// longer holds it (a ring no task is on); the session is read whole instead.
    ///
    /// A leader selector's node carries the election's mark instead, whatever else is set:
    /// its queue is an election named like a mutex, and the deadlock scan must not read it as
    /// a lock (`queue/deadlock.rs`).
    pub(crate) fn node_mark(&self) -> Option<NodeMark> {
        if self.election {
            return Some(NodeMark::Election);
        }
        if let Some(chain) = self.chain {
            return Some(NodeMark::Owner(Tag::Chain(chain)));
        }
        let task = (self.deadlock.is_some() && self.cohort.is_none()).then(|| Owner::current().tag());
        task.map(|task| NodeMark::Owner(Tag::Task(task)))
    }

    /// Who the current acquire counts for: the current task (or thread), or, when this
    /// participant is not reentrant, the acquire alone.
    pub(crate) fn owner_now(&self) -> Owner {
        if self.reentrant {
            Owner::current()
        } else {
            Owner::unique()
        }
    }

    /// Re-enters `owner`'s hold as [`admit`](Self::admit) does, when it has one and `may`
    /// says so (asked only then); `None`, with nothing changed, otherwise (no hold, its first
    /// acquire under way, or `may` refused): the acquire then takes the whole path.
    pub(crate) fn reenter(
        &self,
        owner: Owner,
        may: impl FnOnce() -> bool,
    ) -> Option<std::result::Result<OwnerHold, LossReason>> {
        let mut slot = self.holds.get_mut(&owner)?;
        let Slot::Held(hold, _) = slot.value_mut() else { return None };
        may().then(|| enter_again(hold))
    }

    /// Admits `owner`: re-enters a hold, waits behind its own acquire, or claims the right to
    /// queue.
    pub(crate) fn admit(self: &Arc<Self>, owner: Owner) -> Admission {
        match self.holds.entry(owner) {
            Entry::Occupied(mut slot) => match slot.get_mut() {
                Slot::Held(hold, _) => match enter_again(hold) {
                    Ok(hold) => Admission::Reentered(hold),
                    Err(reason) => Admission::Lost(reason),
                },
                Slot::Acquiring(done) => {
                    let done = done.get_or_insert_with(|| Arc::new(Notify::new()));
                    Admission::WaitForOwnAcquire(Arc::clone(done).notified_owned())
                }
            },
            Entry::Vacant(slot) => {
                slot.insert(Slot::Acquiring(None));
                Admission::Queue(Claim { state: Arc::clone(self), owner, open: true })
            }
        }
    }

    /// Counts one release of `owner`'s hold `hold_id` (nothing for a stale guard). On the last,
    /// forgets the hold and returns it: [`let_go`](Self::let_go) says what becomes of its node.
    pub(crate) fn release_one(&self, owner: Owner, hold_id: u64) -> Option<LastRelease> {
        let Entry::Occupied(mut slot) = self.holds.entry(owner) else {
            return None;
        };
        let Slot::Held(hold, _) = slot.get_mut() else {
            return None;
        };
        if hold.id != hold_id {
            return None;
        }
        hold.count -= 1;
        if hold.count > 0 {
            return None;
        }
        match slot.remove() {
            Slot::Held(hold, next_opening) => Some(LastRelease { node: hold.node, next_opening }),
            Slot::Acquiring(_) => None,
        }
    }

    /// The node of a hold that ended: passed to a task of ours waiting in the line (local
    /// handoff, within its bound), or returned to be deleted, marked released (its deletion is
    /// no loss).
    pub(crate) fn let_go(&self, last: LastRelease) -> Option<LastRelease> {
        let last = match &self.cohort {
            Some(cohort) => {
                let (node, next_opening) = cohort.pass_on(last.node, last.next_opening)?;
                LastRelease { node, next_opening }
            }
            None => last,
        };
        last.node.mark_released();
        Some(last)
    }

    /// Takes what the next acquire may send with its create (see `next_opening`).
    pub(crate) fn take_opening(&self) -> Opening {
        std::mem::take(&mut *self.next_opening.lock().unwrap_or_else(|poisoned| poisoned.into_inner()))
    }

    /// A hold whose delete by us is confirmed left `opening` for the next acquire.
    pub(crate) fn record_opening(&self, opening: Opening) {
        *self.next_opening.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = opening;
    }

    /// Links the two sides of a read-write lock.
    pub(crate) fn pair(read: &Arc<LockState>, write: &Arc<LockState>) {
        let _ = read.sibling.set(Arc::downgrade(write));
        let _ = write.sibling.set(Arc::downgrade(read));
    }

    /// The node `owner` holds on the other side of this read-write lock, if any. Asked by the
    /// read side, it is a downgrade: the write node is marked so before the owner's release can
    /// pass it on (both under the hold table's lock), and a writer of ours never holds it
    /// beside the reader (see `Cohort`).
    pub(crate) fn sibling_node_held_by(&self, owner: Owner) -> Option<Arc<HeldNode>> {
        let sibling = self.sibling.get().and_then(Weak::upgrade)?;
        let slot = sibling.holds.get(&owner);
        let Some(Slot::Held(hold, _)) = slot.as_deref() else {
            return None;
        };
        if self.role == Role::Read {
            hold.node.mark_downgraded();
        }
        Some(Arc::clone(&hold.node))
    }

    pub(crate) fn is_held_by(&self, owner: Owner) -> bool {
        self.holds.get(&owner).is_some_and(|slot| matches!(*slot, Slot::Held(..)))
    }

    pub(crate) fn is_held_by_anyone(&self) -> bool {
        self.holds.iter().any(|slot| matches!(*slot, Slot::Held(..)))
    }
}

/// The right of one owner to queue for the lock. Dropped unused, it lets the owner's other
/// acquires go on.
#[derive(Debug)]
pub(crate) struct Claim {
    state: Arc<LockState>,
    owner: Owner,
    open: bool,
}

impl Claim {
    /// The owner this claim is for.
    pub(crate) fn owner(&self) -> Owner {
        self.owner
    }

    /// Records the owner's new hold on `node`, taken through `client` by an acquire begun at
    /// `started`, tells the operator (events and metrics), and starts watching for its loss.
    pub(crate) fn grant(
        self,
        client: &Arc<Client>,
        node: LockNode,
        next_opening: Opening,
        fencing_token: i64,
        started: Instant,
    ) -> OwnerHold {
        let session_watch = self.state.session_watch.of(client);
        let acquired = Acquired { label: &self.state.label, fencing_token, started };
        let node = Arc::new(HeldNode::new(client, node, &session_watch, acquired, self.state.max_hold));
        self.hold(node, next_opening, fencing_token)
    }

    /// Records the owner's new hold on a node passed on by a task of ours (local handoff).
    pub(crate) fn take_handoff(self, handoff: Handoff) -> OwnerHold {
        self.hold(handoff.node, handoff.next_opening, handoff.fencing_token)
    }

    fn hold(mut self, node: Arc<HeldNode>, next_opening: Opening, fencing_token: i64) -> OwnerHold {
        let id = self.state.next_hold_id.fetch_add(1, Ordering::Relaxed);
        let hold = OwnerHold { id, count: 1, node, fencing_token };
        self.close(Some(Slot::Held(hold.clone(), next_opening)));
        hold
    }

    fn close(&mut self, replacement: Option<Slot>) {
        if !std::mem::take(&mut self.open) {
            return;
        }
        let done = match replacement {
            Some(slot) => self.state.holds.insert(self.owner, slot),
            None => self.state.holds.remove(&self.owner).map(|(_, slot)| slot),
        };
        if let Some(Slot::Acquiring(Some(done))) = done {
            done.notify_waiters();
        }
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        self.close(None);
    }
}
