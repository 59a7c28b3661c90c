//! `Leadership`: one term of leadership, as a latch or a selector hands it out.

use std::fmt;
use std::sync::Arc;

use crate::election::term_end::{EndSignal, TermEnd};
use crate::error::{Error, LossReason, Result};
use crate::hold::held_node::HeldNode;
use crate::hold::hold_trait::HoldFuture;
use crate::hold::Hold;

/// One term of leadership: held from the moment our node is first in the election's queue until
/// it is lost or given up.
///
/// Leadership is held through ZooKeeper, so it can be lost without the leader doing anything:
/// the session expires, the client stays disconnected longer than the
/// [`LossPolicy`](crate::LossPolicy) allows, or someone deletes the node. It is also given up:
/// the latch or selector is closed or dropped, the selector's term is interrupted, its work
/// finishes. [`ended`](Self::ended) resolves the moment this process knows the term is over,
/// whatever ended it, with a [`TermEnd`] that says what did; a loss is known, under the default
/// policy, before the server can have expired the session and let another participant lead, and
/// a term given up ends before our node is deleted, so before anyone else can lead.
/// What every hold tells, a term tells through the [`Hold`] trait: its
/// [`fencing_token`](Hold::fencing_token) lets the resources a leader writes refuse one that has
/// not noticed yet (it strictly increases from one term to the next, whoever leads them),
/// [`is_held`](Hold::is_held) is `false` once the term is lost or given up, for good, and
/// [`multi_writer`](Hold::multi_writer) fences writes to ZooKeeper.
///
/// Clones are the same term. A new term (after a loss, or a selector's next turn) is a new
/// `Leadership` with a greater fencing token.
///
/// # Examples
///
/// ```no_run
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # async fn compact_shards(_token: i64) {}
/// use zklock::hold::Hold;
///
/// let client = zklock::Client::connect("127.0.0.1:2181").await?;
/// let latch = zklock::LeaderLatch::new(&client, "/app/leader/compactor", "host-1")?;
/// latch.start().await?;
/// let leadership = latch.await_leadership().await?;
/// tokio::select! {
///     // The shards refuse tokens lower than the highest they have seen.
///     () = compact_shards(leadership.fencing_token()) => {}
///     end = leadership.ended() => eprintln!("no longer the leader ({end}); stopped"),
/// }
/// latch.close().await?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Leadership {
    node: Arc<HeldNode>,
    /// How the term ended, once it did: the first end known wins, and every clone sees it.
    end: Arc<EndSignal>,
}

impl Leadership {
    pub(crate) fn new(node: Arc<HeldNode>) -> Self {
        Leadership { node, end: Arc::new(EndSignal::new()) }
    }

    /// Resolves once the term is over, whatever ended it, with how it ended (the same as
    /// [`end_reason`](Self::end_reason) from then on); stays pending while it is held.
    ///
    /// Unless the term has already ended, the first call sets a watch on the leader's node (one
    /// request), so that a deletion by a third party is noticed within a round trip.
    ///
    /// # Cancel safety
    /// Cancel safe: dropping the future leaves the watch in place for the next call.
    pub async fn ended(&self) -> TermEnd {
        if let Some(end) = self.end_reason() {
            return end;
        }
        tokio::select! {
            reason = self.node.lost() => self.end(TermEnd::Lost(reason)),
            end = self.end.told() => end,
        }
    }

    /// [`ended`](Self::ended) without its node watch, for the election's own task: a term that
    /// nobody asks about costs no request (the watch is set once it has lasted a second).
    pub(crate) async fn ended_unwatched(&self) -> TermEnd {
        tokio::select! {
            reason = self.node.loss_known() => self.end(TermEnd::Lost(reason)),
            end = self.end.told() => end,
        }
    }

    /// Ends the term with `end`, unless it had ended already; returns how it ended.
    pub(crate) fn end(&self, end: TermEnd) -> TermEnd {
        self.end.set(end)
    }

    /// How the term ended, once this process knows it did; `None` while it is held. Never sends
    /// a request.
    pub fn end_reason(&self) -> Option<TermEnd> {
        self.end.get().or_else(|| self.node.loss().map(|reason| self.end(TermEnd::Lost(reason))))
    }

    /// Whether `other` is this very term (a clone of it).
    pub(crate) fn is(&self, other: &Leadership) -> bool {
        Arc::ptr_eq(&self.end, &other.end)
    }

    /// Publishes `data` with the term (etcd's `Proclaim`): it becomes our node's data, which a
    /// [`LeaderView`](crate::election::LeaderView) tells as
    /// [`QueueNode::data`](crate::queue::QueueNode::data), and which Curator's participants read as
    /// our id. Fenced by the term: written in one transaction with the check that our node exists,
    /// so only while nobody else can lead.
    ///
    /// # Errors
    /// [`Error::LockLost`](crate::Error::LockLost) when the term is lost (its node gone, or the
    /// session ended), as [`commit`](Hold::commit).
    ///
    /// # Cancel safety
    /// As [`commit`](Hold::commit).
    pub async fn proclaim(&self, data: &[u8]) -> Result<()> {
        let mut write = self.multi_writer();
        write.add_set_data(self.node_path(), data, None).map_err(Error::on("set data", self.node_path()))?;
        self.commit(write).await.map(drop)
    }
}

/// Equal when they are the very same term (clones of one `Leadership`): two terms of one
/// participant are different terms, with different nodes and tokens.
impl PartialEq for Leadership {
    fn eq(&self, other: &Leadership) -> bool {
        self.is(other)
    }
}

impl Eq for Leadership {}

impl fmt::Debug for Leadership {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Leadership")
            .field("node_path", &self.node_path())
            .field("fencing_token", &self.fencing_token())
            .field("is_held", &self.is_held())
            .field("end_reason", &self.end_reason())
            .finish()
    }
}

impl crate::hold::hold_trait::sealed::Sealed for Leadership {
    fn held_node(&self) -> &HeldNode {
        &self.node
    }

    fn given_up(&self) -> bool {
        self.end.get().is_some()
    }

    fn ends(&self) -> HoldFuture<'_, Option<LossReason>> {
        Box::pin(async move { self.ended().await.loss() })
    }

    /// Leadership cannot be revoked: nobody may ask a leader to step down through its node.
    fn revocable(&self) -> bool {
        false
    }
}
