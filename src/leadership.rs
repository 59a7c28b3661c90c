//! One term of leadership, as a [`LeaderLatch`](crate::LeaderLatch) or a
//! [`LeaderSelector`](crate::LeaderSelector) hands it out.

use std::fmt;
use std::sync::Arc;

use crate::held_node::{fenced_writes, HeldNode};
use crate::LossReason;

/// One term of leadership: held from the moment our node is first in the election's queue until
/// it is lost or given up.
///
/// Leadership is held through ZooKeeper, so it can be lost without the leader doing anything:
/// the session expires, the client stays disconnected longer than the
/// [`LossPolicy`](crate::LossPolicy) allows, or someone deletes the node. [`lost`](Self::lost)
/// resolves the moment this process knows, which under the default policy is before the server
/// can have expired the session and let another participant lead. [`epoch`](Self::epoch) lets
/// the resources a leader writes refuse one that has not noticed yet.
///
/// Clones are the same term. A new term (after a loss, or a selector's next turn) is a new
/// `Leadership` with a greater epoch.
///
/// # Examples
///
/// ```no_run
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # async fn compact_shards(_epoch: i64) {}
/// let client = zklock::zookeeper_client::Client::connect("127.0.0.1:2181").await?;
/// let latch = zklock::LeaderLatch::new(&client, "/app/leader/compactor", "host-1")?;
/// latch.start().await?;
/// let leadership = latch.await_leadership().await?;
/// tokio::select! {
///     // The shards refuse epochs lower than the highest they have seen.
///     () = compact_shards(leadership.epoch()) => {}
///     reason = leadership.lost() => eprintln!("no longer the leader ({reason}); stopped"),
/// }
/// latch.close().await?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Leadership {
    node: Arc<HeldNode>,
}

impl Leadership {
    pub(crate) fn new(node: Arc<HeldNode>) -> Self {
        Leadership { node }
    }

    /// Resolves when leadership is lost, with the reason; stays pending while it is held, and
    /// after it is given up (the latch closed, the selector's closure finished or interrupted).
    ///
    /// The first call sets a watch on the leader's node (one request), so that a deletion by a
    /// third party is noticed within a round trip.
    ///
    /// # Cancel safety
    /// Cancel safe: dropping the future leaves the watch in place for the next call.
    pub async fn lost(&self) -> LossReason {
        self.node.lost().await
    }

    /// Whether this term still stands, as far as this process knows: `false` once it is lost or
    /// given up. Never sends a request (a deletion by a third party is seen once the node
    /// watch is set, by [`lost`](Self::lost) or after a second of leadership).
    pub fn is_held(&self) -> bool {
        self.node.is_held()
    }

    /// The czxid of the leader's node: strictly increasing from one term to the next, whoever
    /// leads them, so a resource can remember the highest epoch it has seen and refuse a leader
    /// whose epoch is lower (a fencing token).
    pub fn epoch(&self) -> i64 {
        self.node.fencing_token()
    }

    /// The full path of the leader's node.
    pub fn node_path(&self) -> &str {
        self.node.path()
    }

    fenced_writes!(node);
}

impl fmt::Debug for Leadership {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Leadership")
            .field("node_path", &self.node_path())
            .field("epoch", &self.epoch())
            .field("is_held", &self.is_held())
            .finish()
    }
}
