//! Where an election's participant stands, each move a pure function.
//!
//! The task and the handle in `engine.rs` apply the moves under one lock and publish the result.
//! Every move out of `Leading` ends the term first, so that whoever reads the stage sees no term
//! held that has ended, and no end of a term untold.

use crate::election::leadership::Leadership;
use crate::election::state::ElectionState;
use crate::election::term_end::TermEnd;
use crate::error::{Error, Result};

/// Where a participant stands.
#[derive(Clone, Debug)]
pub(crate) enum Stage {
    NotStarted,
    Queued,
    Leading(Leadership),
    /// A term ended and the participant waits for `requeue`.
    Idle,
    /// Closed or dropped: the task ends the term, deletes what may exist of our node and stops.
    Leaving,
    /// The session ended, or ZooKeeper refused us, before the participant was closed: the
    /// error says which.
    Ended(Error),
    /// Left after `close` or a drop: `Err` says why our node could not be deleted.
    Closed(Result<()>),
}

/// What a move did: whether the stage changed (and so is published), and what the caller of
/// the move is told.
#[derive(Debug)]
pub(crate) struct Moved<T> {
    pub(crate) changed: bool,
    pub(crate) outcome: T,
}

impl<T> Moved<T> {
    pub(crate) fn to(changed: bool, outcome: T) -> Self {
        Moved { changed, outcome }
    }
}

impl Stage {
    /// The stage as subscribers see it.
    pub(crate) fn seen(&self) -> ElectionState {
        match self {
            Stage::NotStarted | Stage::Idle => ElectionState::Idle,
            Stage::Queued => ElectionState::Queued,
            Stage::Leading(leadership) => ElectionState::Leading(leadership.clone()),
            Stage::Leaving | Stage::Ended(_) | Stage::Closed(_) => ElectionState::Left,
        }
    }

    /// Whether the participant has left or been ended: what `start` stops waiting at.
    pub(crate) fn is_over(&self) -> bool {
        matches!(self, Stage::Ended(_) | Stage::Leaving | Stage::Closed(_))
    }

    /// `start`: from `NotStarted` to `Queued`; refused with the error that says why otherwise.
    pub(crate) fn start(&mut self) -> Moved<Result<()>> {
        match self {
            Stage::NotStarted => {
                *self = Stage::Queued;
                Moved::to(true, Ok(()))
            }
            Stage::Leaving | Stage::Closed(_) => Moved::to(false, Err(Error::ElectionClosed)),
            _ => Moved::to(false, Err(Error::ElectionAlreadyStarted)),
        }
    }

    /// A term taken while queued: `Leading`. (Left in the meantime: the term is not ours to
    /// publish; the task ends it.)
    pub(crate) fn lead(&mut self, term: &Leadership) -> Moved<()> {
        if !matches!(self, Stage::Queued) {
            return Moved::to(false, ());
        }
        *self = Stage::Leading(term.clone());
        Moved::to(true, ())
    }

    /// `term` ended with `end`: if it is the current one, the participant moves on (queued
    /// again, idle, or leaving).
    pub(crate) fn term_ended(&mut self, term: &Leadership, end: TermEnd, auto_requeue: bool) -> Moved<()> {
        match self {
            Stage::Leading(current) if current.is(term) => {
                *self = Stage::after_term(end, auto_requeue);
                Moved::to(true, ())
            }
            _ => Moved::to(false, ()),
        }
    }

    /// Where a participant stands once a term ended with `end`.
    fn after_term(end: TermEnd, auto_requeue: bool) -> Stage {
        match end {
            TermEnd::Closed | TermEnd::Dropped => Stage::Leaving,
            // A latch always (Curator's `reset` after a loss), a selector when asked to.
            _ if auto_requeue => Stage::Queued,
            _ => Stage::Idle,
        }
    }

    /// `requeue`: `Ok(true)` if we were idle (or our term had ended and we were about to be),
    /// `Ok(false)` if we are already queued or leading.
    pub(crate) fn requeue(&mut self, auto_requeue: bool) -> Moved<Result<bool>> {
        // A term that has ended is behind us, even if the task has not moved on from it yet.
        let mut moved_on = false;
        if let Stage::Leading(term) = self {
            if let Some(end) = term.end_reason() {
                *self = Stage::after_term(end, auto_requeue);
                moved_on = true;
            }
        }
        match self {
            Stage::Idle => {
                *self = Stage::Queued;
                Moved::to(true, Ok(true))
            }
            Stage::NotStarted => Moved::to(false, Err(Error::ElectionNotStarted)),
            Stage::Leaving | Stage::Closed(_) => Moved::to(moved_on, Err(Error::ElectionClosed)),
            Stage::Ended(err) => Moved::to(false, Err(err.clone())),
            Stage::Queued | Stage::Leading(_) => Moved::to(moved_on, Ok(false)),
        }
    }

    /// `close`, before it stops the participant: an election the session had ended is closed at
    /// once, and its error is what `close` returns.
    pub(crate) fn close(&mut self) -> Moved<Result<()>> {
        match self {
            Stage::NotStarted => Moved::to(false, Err(Error::ElectionNotStarted)),
            Stage::Ended(err) => {
                let err = err.clone();
                *self = Stage::Closed(Ok(()));
                Moved::to(true, Err(err))
            }
            _ => Moved::to(false, Ok(())),
        }
    }

    /// Leaving (`close`, or a drop, as `how`): the current term ends at once.
    pub(crate) fn leave(&mut self, how: TermEnd) -> Moved<()> {
        match self {
            Stage::Queued | Stage::Idle => {
                *self = Stage::Leaving;
                Moved::to(true, ())
            }
            Stage::Leading(term) => {
                term.end(how);
                *self = Stage::Leaving;
                Moved::to(true, ())
            }
            Stage::NotStarted | Stage::Leaving | Stage::Ended(_) | Stage::Closed(_) => Moved::to(false, ()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_participant_starts_once() {
        let mut stage = Stage::NotStarted;
        assert!(matches!(stage.start(), Moved { changed: true, outcome: Ok(()) }));
        assert!(matches!(stage, Stage::Queued));
        assert!(matches!(stage.start().outcome, Err(Error::ElectionAlreadyStarted)));
        assert!(matches!(Stage::Closed(Ok(())).start().outcome, Err(Error::ElectionClosed)));
    }

    #[test]
    fn requeue_moves_only_an_idle_participant() {
        let mut idle = Stage::Idle;
        assert!(matches!(idle.requeue(false), Moved { changed: true, outcome: Ok(true) }));
        assert!(matches!(idle, Stage::Queued));
        assert!(matches!(idle.requeue(false), Moved { changed: false, outcome: Ok(false) }));
        assert!(matches!(Stage::NotStarted.requeue(false).outcome, Err(Error::ElectionNotStarted)));
        assert!(matches!(Stage::Leaving.requeue(true).outcome, Err(Error::ElectionClosed)));
        let ended = Stage::Ended(Error::SessionExpired).requeue(true);
        assert!(matches!(ended, Moved { changed: false, outcome: Err(Error::SessionExpired) }));
    }

    #[test]
    fn close_takes_the_error_that_ended_the_election() {
        let mut ended = Stage::Ended(Error::SessionExpired);
        assert!(matches!(ended.close(), Moved { changed: true, outcome: Err(Error::SessionExpired) }));
        assert!(matches!(ended, Stage::Closed(Ok(()))));
        assert!(matches!(Stage::NotStarted.close().outcome, Err(Error::ElectionNotStarted)));
        assert!(matches!(Stage::Queued.close(), Moved { changed: false, outcome: Ok(()) }));
    }

    #[test]
    fn leaving_is_a_move_from_a_live_stage_only() {
        for mut live in [Stage::Queued, Stage::Idle] {
            assert!(live.leave(TermEnd::Closed).changed);
            assert!(matches!(live, Stage::Leaving) && live.is_over());
        }
        for mut other in [Stage::NotStarted, Stage::Leaving, Stage::Ended(Error::SessionClosed), Stage::Closed(Ok(()))]
        {
            assert!(!other.leave(TermEnd::Dropped).changed);
        }
    }

    #[test]
    fn after_a_term_a_latch_queues_a_selector_waits_and_a_close_leaves() {
        assert!(matches!(Stage::after_term(TermEnd::Finished, true), Stage::Queued));
        assert!(matches!(Stage::after_term(TermEnd::Finished, false), Stage::Idle));
        assert!(matches!(Stage::after_term(TermEnd::Closed, true), Stage::Leaving));
        assert!(matches!(Stage::after_term(TermEnd::Dropped, false), Stage::Leaving));
    }
}
