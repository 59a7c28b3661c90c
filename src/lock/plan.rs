//! How one acquire of an owner enters the queue, decided once before it queues.
//!
//! The plan holds the rule (of `rules/entry.rs`, from what the owner holds of the other side of a
//! read-write lock), and the queue it then takes its place in (`queue/turn.rs`'s `QueueSpec`), with
//! what the lock object has for it: the opening its last hold left, the mark its node carries.

use std::sync::Arc;

use zookeeper_client::Client;

use crate::error::{Error, Result};
use crate::hold::held_node::HeldNode;
use crate::lock::owner::Owner;
use crate::lock::state::LockState;
use crate::queue::node::{PlaceReport, QueueSpec};
use crate::rules::decide::Rule;
use crate::rules::entry::{self, Level};
use crate::rules::opening;

/// How one acquire of an owner enters the queue.
#[derive(Debug)]
pub(crate) struct Plan {
    /// Who may hold.
    rule: Rule,
    /// A downgrade's write node: the owner's hold on the other side, which the read node
    /// stands level with (and which is lost if it is found gone).
    write_node: Option<Arc<HeldNode>>,
}

impl Plan {
    /// How `owner`'s acquire of `state`'s lock enters the queue.
    ///
    /// # Errors
    /// [`Error::WouldDeadlock`] when it would wait for ever on its own owner (a reader asking
    /// for the write lock).
    pub(crate) fn new(state: &LockState, owner: Owner) -> Result<Plan> {
        let other_side = state.sibling_node_held_by(owner);
        let entry = entry::entry(state.role, state.schema, other_side.as_deref().map(HeldNode::path))
            .map_err(Error::WouldDeadlock)?;
        let (rule, levels) = (entry.rule, entry.level_with.is_some());
        Ok(Plan { rule, write_node: other_side.filter(|_| levels) })
    }

    /// The queue `state`'s acquire takes its place in through `client` (`queue::turn::take_place`),
    /// taking the opening the lock's last hold left (so: once the acquire queues, not before
    /// a turn of local handoff that may pass it a hold instead).
    pub(crate) fn spec<'a>(
        &'a self,
        state: &'a LockState,
        client: &'a Client,
        place: Option<&'a PlaceReport>,
    ) -> QueueSpec<'a> {
        QueueSpec {
            opening: opening::usable(state.take_opening(), self.rule),
            level_with: self.write_node.as_deref().map(|write| Level::beside(state.schema, write.path())),
            place,
            deadlock: state.deadlock.as_ref(),
            mark: state.node_mark(),
            ..QueueSpec::new(
                client,
                state.connection.retry_policy(),
                &state.path,
                state.schema,
                self.rule,
                &state.data,
                &state.acls,
            )
        }
    }

    /// What the place taken came to: a downgrade whose write node was found gone marks that
    /// hold lost too.
    pub(crate) fn placed<T>(&self, placed: Result<T>) -> Result<T> {
        if let (Err(Error::LockLost(reason)), Some(write)) = (&placed, &self.write_node) {
            write.mark_lost(*reason);
        }
        placed
    }
}
