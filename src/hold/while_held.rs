//! Work raced against the hold's end: `RunEnd` and `run_while_held`.
//!
//! The work is dropped the moment the hold ends, and the caller is told which came first. The
//! `select!` every holder would otherwise write by hand, said once for every kind of hold.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::error::LossReason;

/// Resolves when a hold ends by itself: with the loss, or `None` when it was given up.
pub(crate) type Ends<'a> = Pin<Box<dyn Future<Output = Option<LossReason>> + Send + 'a>>;

/// How work run under a hold ended: [`Hold::while_held`](crate::hold::Hold::while_held) and the
/// recipes' `run_while_held` say it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
#[must_use = "the work may not have finished: look at how it ended"]
pub enum RunEnd<T> {
    /// The work finished while the hold stood, as far as this process knew.
    Done(T),
    /// The hold was lost first, for this reason; the work was dropped at that moment.
    Lost(LossReason),
    /// The hold was given up first without being lost (a term of leadership whose latch or
    /// selector was closed or interrupted); the work was dropped at that moment.
    GivenUp,
    /// The lock was not acquired within the timeout; the work never started.
    TimedOut,
}

impl<T> RunEnd<T> {
    /// The work's output, if it finished.
    pub fn done(self) -> Option<T> {
        match self {
            RunEnd::Done(output) => Some(output),
            _ => None,
        }
    }
}

/// The future of [`Hold::while_held`](crate::hold::Hold::while_held): the work, raced against
/// the end of the hold.
#[must_use = "futures do nothing unless polled"]
pub struct WhileHeld<'a, W: Future> {
    /// Resolves when the hold ends: with the loss, or `None` when it was given up.
    ends: Ends<'a>,
    work: Pin<Box<W>>,
}

impl<'a, W: Future> WhileHeld<'a, W> {
    pub(crate) fn new(ends: Ends<'a>, work: W) -> Self {
        WhileHeld { ends, work: Box::pin(work) }
    }
}

impl<W: Future> Future for WhileHeld<'_, W> {
    type Output = RunEnd<W::Output>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // The end first: work that finishes in the poll that tells of a loss did not finish
        // while held, as far as anyone can know.
        if let Poll::Ready(end) = self.ends.as_mut().poll(cx) {
            return Poll::Ready(end.map_or(RunEnd::GivenUp, RunEnd::Lost));
        }
        self.work.as_mut().poll(cx).map(RunEnd::Done)
    }
}

impl<W: Future> std::fmt::Debug for WhileHeld<'_, W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WhileHeld").finish_non_exhaustive()
    }
}
