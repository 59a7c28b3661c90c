//! The maximum hold time: a timer that gives a hold up once it has lasted its bound.
//!
//! The timer (`max_hold`) runs in the holder's own process, and tells the holder before its node is
//! deleted.

use std::sync::Arc;
use std::time::Duration;

use tokio::task::AbortHandle;
use tokio::time::Instant;
use zookeeper_client::Client;

use crate::client::background::spawn_abortable;
use crate::client::retry::RetryPolicy;
use crate::error::LossReason;
use crate::hold::hold_signal::HoldSignal;
use crate::queue::delete::delete_in_background;

/// The timer of one held node; dropped with the node (the last guard of its hold, or of its
/// last holder with local handoff), it stops.
#[derive(Debug)]
pub(crate) struct MaxHold {
    timer: Option<AbortHandle>,
}

impl MaxHold {
    /// Gives the hold of `path`, told through `signal`, up once `bound` has passed from now.
    pub(crate) fn start(
        bound: Duration,
        client: &Arc<Client>,
        retry: RetryPolicy,
        path: &Arc<str>,
        signal: &Arc<HoldSignal>,
    ) -> Self {
        // Counted from now, not from the task's first poll.
        let deadline = Instant::now() + bound;
        let (client, node, signal) = (Arc::clone(client), Arc::clone(path), Arc::clone(signal));
        let timer = spawn_abortable(async move {
            tokio::time::sleep_until(deadline).await;
            give_up(bound, &client, retry, node, &signal).await;
        });
        if timer.is_none() {
            tracing::error!(node = %path, "no runtime for the maximum hold time's timer: the hold lasts until it is released or lost");
        }
        MaxHold { timer }
    }
}

/// The bound passed: the holder is told, and then, unless its own release has taken the node
/// over meanwhile (it deletes it), the node is deleted.
async fn give_up(bound: Duration, client: &Arc<Client>, retry: RetryPolicy, path: Arc<str>, signal: &HoldSignal) {
    if signal.is_released() {
        return;
    }
    signal.mark_lost(LossReason::MaxHoldTime { bound });
    // Lets a holder woken by the loss run before the delete goes out, where it can: on a
    // current-thread runtime it is ahead of us in the queue.
    tokio::task::yield_now().await;
    if !signal.is_released() {
        delete_in_background(client, retry, path);
    }
}

impl Drop for MaxHold {
    fn drop(&mut self) {
        if let Some(timer) = &self.timer {
            timer.abort();
        }
    }
}
