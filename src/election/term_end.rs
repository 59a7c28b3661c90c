//! `TermEnd`: how a term of leadership ended.
//!
//! As [`Leadership::ended`](crate::election::Leadership::ended) tells it.

use std::fmt;

use tokio::sync::watch;

use crate::error::LossReason;

/// Why a term of leadership is over: lost through ZooKeeper, or given up by this process.
///
/// [`Leadership::ended`](crate::election::Leadership::ended) resolves with it and
/// [`Leadership::end_reason`](crate::election::Leadership::end_reason) returns it once the term
/// ended, whatever ended it, so leader work watching the term stops in every case.
///
/// # Examples
///
/// ```
/// use zklock::LossReason;
/// use zklock::election::TermEnd;
///
/// let end = TermEnd::Lost(LossReason::NodeDeleted);
/// assert_eq!(end.loss(), Some(LossReason::NodeDeleted));
/// assert_eq!(TermEnd::Closed.loss(), None);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TermEnd {
    /// Leadership was lost through ZooKeeper (the session ended, our node was deleted, or the
    /// client stayed disconnected past the [`LossPolicy`](crate::LossPolicy)): another
    /// participant may lead already.
    Lost(LossReason),
    /// The latch or selector was closed.
    Closed,
    /// The latch or selector was dropped.
    Dropped,
    /// The selector's term was interrupted
    /// ([`interrupt_leadership`](crate::LeaderSelector::interrupt_leadership)).
    Interrupted,
    /// The selector's work for the term finished.
    Finished,
    /// The selector's work for the term (or the closure making it) panicked.
    Panicked,
}

impl TermEnd {
    /// How leadership was lost, when it was lost rather than given up.
    pub fn loss(self) -> Option<LossReason> {
        match self {
            TermEnd::Lost(reason) => Some(reason),
            _ => None,
        }
    }
}

impl fmt::Display for TermEnd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TermEnd::Lost(reason) => write!(f, "leadership lost: {reason}"),
            TermEnd::Closed => f.write_str("the participant was closed"),
            TermEnd::Dropped => f.write_str("the participant was dropped"),
            TermEnd::Interrupted => f.write_str("the term was interrupted"),
            TermEnd::Finished => f.write_str("the leader's work finished"),
            TermEnd::Panicked => f.write_str("the leader's work panicked"),
        }
    }
}

/// An end told once: the first end set stands, and everyone waiting is told it. A term's end,
/// and why a participant leaves.
#[derive(Debug)]
pub(crate) struct EndSignal(watch::Sender<Option<TermEnd>>);

impl EndSignal {
    pub(crate) fn new() -> Self {
        EndSignal(watch::Sender::new(None))
    }

    /// Sets `end` unless an end was set before; returns the end that stands.
    pub(crate) fn set(&self, end: TermEnd) -> TermEnd {
        self.0.send_if_modified(|set| match set {
            Some(_) => false,
            None => {
                *set = Some(end);
                true
            }
        });
        self.get().unwrap_or(end)
    }

    pub(crate) fn get(&self) -> Option<TermEnd> {
        *self.0.borrow()
    }

    /// Resolves with the end once one is set.
    pub(crate) async fn told(&self) -> TermEnd {
        let mut end = self.0.subscribe();
        loop {
            if let Some(end) = *end.borrow_and_update() {
                return end;
            }
            // The sender lives in `self`, so this only returns on a change.
            let _ = end.changed().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ends_read_well_and_only_a_loss_has_a_loss_reason() {
        let lost = TermEnd::Lost(LossReason::SessionExpired);
        assert_eq!(lost.to_string(), "leadership lost: the zookeeper session expired");
        assert_eq!(lost.loss(), Some(LossReason::SessionExpired));
        for given_up in [TermEnd::Closed, TermEnd::Dropped, TermEnd::Interrupted, TermEnd::Finished, TermEnd::Panicked]
        {
            assert_eq!(given_up.loss(), None, "{given_up}");
        }
    }

    #[tokio::test]
    async fn the_first_end_set_stands_and_is_told() {
        let signal = EndSignal::new();
        assert_eq!(signal.get(), None);
        assert_eq!(signal.set(TermEnd::Interrupted), TermEnd::Interrupted);
        assert_eq!(signal.set(TermEnd::Closed), TermEnd::Interrupted);
        assert_eq!(signal.told().await, TermEnd::Interrupted);
    }
}
