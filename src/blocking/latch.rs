//! The leader latch, blocking.

use std::time::Duration;

use crate::client::session::Connection;
use crate::election::latch::LeaderLatch as AsyncLatch;
use crate::election::leadership::Leadership as AsyncLeadership;
use crate::error::Result;

use super::held::Held;
use super::run::run;

/// A term of leadership, taken through [`LeaderLatch`].
pub type Leadership = Held<AsyncLeadership>;

/// [`crate::LeaderLatch`], blocking: the first participant leads until it leaves.
///
/// Dropping it leaves the election in the background, as the async latch's drop does.
///
/// # Examples
///
/// ```no_run
/// use zklock::hold::Hold;
/// let client = zklock::blocking::connect("127.0.0.1:2181")?;
/// let latch = zklock::blocking::LeaderLatch::new(&client, "/app/elections/report-writer", "host-1")?;
/// latch.start()?;
/// let term = latch.await_leadership()?;
/// println!("leading with fencing token {}", term.fencing_token());
/// latch.close()?; // the next participant leads
/// # Ok::<(), zklock::Error>(())
/// ```
#[derive(Debug)]
pub struct LeaderLatch {
    inner: AsyncLatch,
}

impl LeaderLatch {
    /// A latch for participant `id` on `path`, with default options.
    ///
    /// # Errors
    /// As [`crate::LeaderLatch::new`].
    pub fn new(on: impl Into<Connection>, path: &str, id: &str) -> Result<Self> {
        AsyncLatch::new(on, path, id).map(Self::from_async)
    }

    /// The blocking face of an async latch (built with every option its builder has).
    pub fn from_async(inner: AsyncLatch) -> Self {
        LeaderLatch { inner }
    }

    /// Joins the election: the blocking [`crate::LeaderLatch::start`].
    ///
    /// # Errors
    /// As the async `start`; [`Error::CannotBlock`](crate::Error::CannotBlock) on a thread of
    /// a tokio runtime.
    pub fn start(&self) -> Result<()> {
        run(self.inner.start())?
    }

    /// Blocks until this participant leads, and hands out the term.
    ///
    /// # Errors
    /// As [`crate::LeaderLatch::await_leadership`]; [`Error::CannotBlock`](crate::Error::CannotBlock).
    pub fn await_leadership(&self) -> Result<Leadership> {
        run(self.inner.await_leadership())?.map(Held::new)
    }

    /// [`await_leadership`](Self::await_leadership) for at most `timeout`: `Ok(None)` when we
    /// do not lead by then (the latch stays in the election).
    ///
    /// # Errors
    /// As [`await_leadership`](Self::await_leadership).
    pub fn await_leadership_timeout(&self, timeout: Duration) -> Result<Option<Leadership>> {
        Ok(run(self.inner.await_leadership_timeout(timeout))??.map(Held::new))
    }

    /// Whether this participant leads now, as far as this process knows. Never sends a request.
    pub fn has_leadership(&self) -> bool {
        self.inner.has_leadership()
    }

    /// Leaves the election (the term ends, our node is deleted): the blocking
    /// [`crate::LeaderLatch::close`].
    ///
    /// # Errors
    /// As the async `close`; [`Error::CannotBlock`](crate::Error::CannotBlock).
    pub fn close(&self) -> Result<()> {
        run(self.inner.close())?
    }
}
