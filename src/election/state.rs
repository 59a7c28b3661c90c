//! Where a participant of a leader election stands, as its `subscribe()` tells it.

use crate::election::leadership::Leadership;
use crate::hold::Hold;

/// Where a [`LeaderLatch`](crate::LeaderLatch) or a [`LeaderSelector`](crate::LeaderSelector)
/// stands, as its `subscribe()` tells it: Curator's `LeaderLatchListener` (`isLeader`,
/// `notLeader`) as a value to watch, so that a service can react to leadership without polling
/// `has_leadership()`.
///
/// A state is published when it changes; a receiver sees the latest one, so a term that began
/// and ended between two looks can be missed (ask its [`Leadership`] how it ended, if you kept
/// it). The state moves on from a term once the term has ended: at once when it is given up
/// (its [`Leadership::ended`] has resolved by then), as soon as the participant has seen it when
/// it is lost.
///
/// # Examples
///
/// ```no_run
/// use zklock::LeaderLatch;
/// use zklock::election::ElectionState;
/// use zklock::hold::Hold;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let client = zklock::Client::connect("127.0.0.1:2181").await?;
/// let latch = LeaderLatch::new(&client, "/app/leader/scheduler", "host-1")?;
/// let mut states = latch.subscribe();
/// latch.start().await?;
/// loop {
///     match states.borrow_and_update().clone() {
///         ElectionState::Leading(leadership) => println!("leading, fencing token {}", leadership.fencing_token()),
///         ElectionState::Left => break,
///         _ => println!("not leading"),
///     }
///     states.changed().await?;
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ElectionState {
    /// Not in the queue: not started yet, or a selector without auto-requeue whose term ended
    /// and that waits for [`requeue`](crate::LeaderSelector::requeue).
    Idle,
    /// In the queue, or joining it (again), waiting to lead.
    Queued,
    /// Leading: the term, with its [`fencing_token`](crate::hold::Hold::fencing_token) and its
    /// [`ended`](Leadership::ended) signal.
    Leading(Leadership),
    /// Left the election for good: closed, dropped, or ended by its session (`close` says
    /// which). The last state; told from the moment the participant starts leaving, while our
    /// node may still be on its way out (`close` returns once it is gone).
    Left,
}

impl ElectionState {
    /// The term, while leading.
    pub fn leadership(&self) -> Option<&Leadership> {
        match self {
            ElectionState::Leading(leadership) => Some(leadership),
            _ => None,
        }
    }

    /// The fencing token of the term, while leading.
    pub fn fencing_token(&self) -> Option<i64> {
        self.leadership().map(Leadership::fencing_token)
    }
}
