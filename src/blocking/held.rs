//! A blocking acquire's hold: the async hold, its waits blocking.
//!
//! The hold itself (a [`LockGuard`], a [`Lease`], a [`MultiLockGuard`], a [`Leadership`]), wrapped
//! so that its waiting methods block. Everything else of the hold is reached through `Deref`: its
//! fencing token, its node, its fenced writes.

use std::fmt;
use std::ops::Deref;
use std::time::Duration;

use crate::election::leadership::Leadership;
use crate::election::term_end::TermEnd;
use crate::error::{LossReason, Result};
use crate::hold::hold_trait::HoldFuture;
use crate::hold::lease::Lease;
use crate::hold::Hold;
use crate::lock::multi::MultiLockGuard;
use crate::lock::mutex::LockGuard;

use super::run::{run, run_for};

/// A hold taken through [`zklock::blocking`](crate::blocking): the async hold `H`, whose
/// waiting methods ([`lost`](Held::lost), [`release`](Held::release)) block here. Its other
/// methods are the hold's own, through `Deref`.
///
/// Dropping it releases the hold and blocks until ZooKeeper has confirmed the release (or the
/// hold's session timeout has passed, after which the server removes the node by itself), so a
/// guard dropped at the end of `main`, or just before `std::process::exit`, frees the lock
/// before the process ends. Dropped on a thread of a tokio runtime, it does not block: the
/// release goes on in the background there, as dropping `H` does.
#[must_use = "the hold is released as soon as it is dropped"]
pub struct Held<H> {
    /// `Some` until `Drop` or `into_inner` takes it.
    hold: Option<H>,
}

impl<H> Held<H> {
    pub(crate) fn new(hold: H) -> Self {
        Held { hold: Some(hold) }
    }

    /// The async hold, for code that runs on a runtime.
    pub fn into_inner(mut self) -> H {
        self.take()
    }

    /// The hold, taken out: only `Drop` and the methods that consume `self` call it, once.
    fn take(&mut self) -> H {
        self.hold.take().expect("a Held holds its hold until it is consumed")
    }
}

impl<H> Deref for Held<H> {
    type Target = H;

    fn deref(&self) -> &H {
        self.hold.as_ref().expect("a Held holds its hold until it is consumed")
    }
}

impl<H> Drop for Held<H> {
    fn drop(&mut self) {
        let Some(hold) = self.hold.take() else { return };
        drop(hold);
        // The release the drop handed to zklock's thread must be sent before this thread goes
        // on: a program that ends next would otherwise leave the node to its session timeout.
        if tokio::runtime::Handle::try_current().is_err() {
            crate::client::background::wait_for_pending(RELEASE_WAIT_CAP);
        }
    }
}

/// A cap on a blocking drop's wait that no session timeout reaches: the wait ends at the
/// pending release's session timeout.
const RELEASE_WAIT_CAP: Duration = Duration::from_secs(24 * 60 * 60);

impl<H: fmt::Debug> fmt::Debug for Held<H> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        (**self).fmt(f)
    }
}

impl<H: sealed::Releasable> Held<H> {
    /// Whether the hold still stands, as far as this process knows. Never sends a request.
    pub fn is_held(&self) -> bool {
        (**self).held()
    }

    /// Blocks until the hold is lost, and says why: the blocking `lost()` (the first call sets
    /// the watch on our node, one request). Blocks for ever while it is held, and after a
    /// release; see [`lost_timeout`](Self::lost_timeout).
    ///
    /// # Errors
    /// [`Error::CannotBlock`](crate::Error::CannotBlock) on a thread of a tokio runtime.
    pub fn lost(&self) -> Result<LossReason> {
        run((**self).lost_boxed())
    }

    /// [`lost`](Self::lost) for at most `timeout`: `Ok(None)` when the hold still stands then.
    ///
    /// # Errors
    /// As [`lost`](Self::lost).
    pub fn lost_timeout(&self, timeout: Duration) -> Result<Option<LossReason>> {
        run_for(timeout, (**self).lost_boxed())
    }

    /// Releases the hold and reports how it went, as the async `release` does (`LockLost`, with
    /// the reason, for a hold lost before or found lost by the release).
    ///
    /// # Errors
    /// As the hold's async `release`; [`Error::CannotBlock`](crate::Error::CannotBlock) on a
    /// thread of a tokio runtime (the hold is then released in the background).
    pub fn release(mut self) -> Result<()> {
        run(self.take().release_boxed())?
    }
}

impl Held<Leadership> {
    /// Whether the term still stands, as far as this process knows. Never sends a request.
    pub fn is_held(&self) -> bool {
        (**self).is_held()
    }

    /// Blocks until the term is over, whatever ended it: the blocking
    /// [`Leadership::ended`].
    ///
    /// # Errors
    /// [`Error::CannotBlock`](crate::Error::CannotBlock) on a thread of a tokio runtime.
    pub fn ended(&self) -> Result<TermEnd> {
        run((**self).ended())
    }

    /// [`ended`](Self::ended) for at most `timeout`: `Ok(None)` while the term still stands.
    ///
    /// # Errors
    /// As [`ended`](Self::ended).
    pub fn ended_timeout(&self, timeout: Duration) -> Result<Option<TermEnd>> {
        run_for(timeout, (**self).ended())
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
        ($($hold:ty: $lost:ident),*) => {$(
            impl Releasable for $hold {
                fn held(&self) -> bool {
                    self.is_held()
                }
                fn lost_boxed(&self) -> HoldFuture<'_, LossReason> {
                    $lost(self)
                }
                fn release_boxed(self) -> HoldFuture<'static, Result<()>> {
                    Box::pin(self.release())
                }
            }
        )*};
    }

    /// A [`Hold`]'s loss future, boxed already.
    fn hold_lost<H: Hold>(hold: &H) -> HoldFuture<'_, LossReason> {
        hold.lost()
    }

    /// A multi-lock guard's loss future, boxed here.
    fn multi_lost(guard: &MultiLockGuard) -> HoldFuture<'_, LossReason> {
        Box::pin(guard.lost())
    }

    releasable!(LockGuard: hold_lost, Lease: hold_lost, MultiLockGuard: multi_lost);
}
