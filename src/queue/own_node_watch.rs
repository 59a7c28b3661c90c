//! The getData watch a waiter sets on its own node once its predecessor is gone (the handoff's
//! proof that our node still exists), which the hold then keeps as its node watch.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use zookeeper_client::{OneshotWatcher, WatchedEvent};

/// A getData watch set on our own node at the end of its wait, with the data read when it was set.
/// A hold that begins on a handoff keeps it (in its `HoldSignal`) as its node watch, set already:
/// the loss watch starts from it when wanted, and otherwise it fires on our own delete, which
/// costs nothing (dropping it unfired would cost a RemoveWatches request).
pub(crate) struct OwnNodeWatch {
    data: Vec<u8>,
    event: Fired,
}

/// A watch's firing, awaited in more than one place.
pub(crate) type Fired = Pin<Box<dyn Future<Output = WatchedEvent> + Send + Sync>>;

impl std::fmt::Debug for OwnNodeWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OwnNodeWatch").field("data_len", &self.data.len()).finish_non_exhaustive()
    }
}

impl OwnNodeWatch {
    pub(crate) fn new(data: Vec<u8>, watcher: OneshotWatcher) -> Self {
        OwnNodeWatch { data, event: Box::pin(watcher.changed()) }
    }

    /// The data read when the watch was set, and the watch's firing.
    pub(crate) fn into_parts(self) -> (Vec<u8>, Fired) {
        (self.data, self.event)
    }
}

/// What `future` resolves to if it is ready at its first poll.
pub(crate) fn ready_now<F: Future>(future: F) -> Option<F::Output> {
    match std::pin::pin!(future).poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(output) => Some(output),
        Poll::Pending => None,
    }
}
