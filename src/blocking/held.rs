//! What a blocking acquire hands out: the async hold itself (a [`LockGuard`], a [`Lease`], a
//! [`MultiLockGuard`], a [`Leadership`]), wrapped so that its waiting methods block. Everything
//! else of the hold is reached through `Deref`: its fencing token, its node, its fenced writes.

use std::fmt;
use std::ops::Deref;
use std::time::Duration;

use crate::election::leadership::Leadership;
use crate::election::term_end::TermEnd;
use crate::error::{LossReason, Result};
use crate::hold::hold_trait::HoldFuture;
use crate::hold::lease::Lease;
use crate::lock::guard::LockGuard;
use crate::lock::multi::MultiLockGuard;

use super::run::{run, run_for};

/// A hold taken through [`zklock::blocking`](crate::blocking): the async hold `H`, whose
/// waiting methods ([`lost`](Held::lost), [`release`](Held::release)) block here. Its other
/// methods are the hold's own, through `Deref`.
///
/// Dropping it releases the hold in the background, as dropping `H` does, on any thread.
#[must_use = "the hold is released as soon as it is dropped"]
pub struct Held<H> {
    hold: H,
}

impl<H> Held<H> {
    pub(crate) fn new(hold: H) -> Self {
        Held { hold }
    }

    /// The async hold, for code that runs on a runtime.
    pub fn into_inner(self) -> H {
        self.hold
    }
}

impl<H> Deref for Held<H> {
    type Target = H;

    fn deref(&self) -> &H {
        &self.hold
    }
}

impl<H: fmt::Debug> fmt::Debug for Held<H> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.hold.fmt(f)
    }
}

impl<H: sealed::Releasable> Held<H> {
    /// Whether the hold still stands, as far as this process knows. Never sends a request.
    pub fn is_held(&self) -> bool {
        self.hold.held()
    }

    /// Blocks until the hold is lost, and says why: the blocking `lost()` (the first call sets
    /// the watch on our node, one request). Blocks for ever while it is held, and after a
    /// release; see [`lost_timeout`](Self::lost_timeout).
    ///
    /// # Errors
    /// [`Error::CannotBlock`](crate::Error::CannotBlock) on a thread of a tokio runtime.
    pub fn lost(&self) -> Result<LossReason> {
        run(self.hold.lost_boxed())
    }

    /// [`lost`](Self::lost) for at most `timeout`: `Ok(None)` when the hold still stands then.
    ///
    /// # Errors
    /// As [`lost`](Self::lost).
    pub fn lost_timeout(&self, timeout: Duration) -> Result<Option<LossReason>> {
        run_for(timeout, self.hold.lost_boxed())
    }

    /// Releases the hold and reports how it went, as the async `release` does (`LockLost` for
    /// a hold lost before, `LockNodeDeleted` when someone else had deleted the node).
    ///
    /// # Errors
    /// As the hold's async `release`; [`Error::CannotBlock`](crate::Error::CannotBlock) on a
    /// thread of a tokio runtime (the hold is then released in the background).
    pub fn release(self) -> Result<()> {
        run(self.hold.release_boxed())?
    }
}

impl Held<Leadership> {
    /// Whether the term still stands, as far as this process knows. Never sends a request.
    pub fn is_held(&self) -> bool {
        self.hold.is_held()
    }

    /// Blocks until the term is over, whatever ended it: the blocking
    /// [`Leadership::ended`].
    ///
    /// # Errors
    /// [`Error::CannotBlock`](crate::Error::CannotBlock) on a thread of a tokio runtime.
    pub fn ended(&self) -> Result<TermEnd> {
        run(self.hold.ended())
    }

    /// [`ended`](Self::ended) for at most `timeout`: `Ok(None)` while the term still stands.
    ///
    /// # Errors
    /// As [`ended`](Self::ended).
    pub fn ended_timeout(&self, timeout: Duration) -> Result<Option<TermEnd>> {
        run_for(timeout, self.hold.ended())
    }
}

pub(crate) mod sealed {
    use super::*;

    /// A hold that is released by its holder: a lock's guard, a lease, a multi-lock's guard.
    pub trait Releasable: Send + Sync + 'static {
        fn held(&self) -> bool;
        fn lost_boxed(&self) -> HoldFuture<'_, LossReason>;
        fn release_boxed(self) -> HoldFuture<'static, Result<()>>;
    }

    macro_rules! releasable {
        ($($hold:ty),*) => {$(
            impl Releasable for $hold {
                fn held(&self) -> bool {
                    self.is_held()
                }
                fn lost_boxed(&self) -> HoldFuture<'_, LossReason> {
                    Box::pin(self.lost())
                }
                fn release_boxed(self) -> HoldFuture<'static, Result<()>> {
                    Box::pin(self.release())
                }
            }
        )*};
    }

    releasable!(LockGuard, Lease, MultiLockGuard);
}
