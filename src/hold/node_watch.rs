//! The watch on our own node: its deletion a loss, a revocation request a flag.
//!
//! One getData watch, set lazily (a short hold pays nothing) and left to fire on our own delete
//! (dropping it unfired would cost a RemoveWatches request).

use std::sync::Arc;

use zookeeper_client::{Client, Error as ZkError, EventType};

use super::hold_signal::HoldSignal;
use crate::client::retry::{retry_transient, RetryPolicy};
use crate::client::session_end::SessionEnd;
use crate::error::LossReason;
use crate::rules::naming::REVOKE_MARKER;

/// Sets a getData watch on our node (once per hold) in a spawned task, and turns its firing into
/// a loss unless our own release deleted the node. The watch is never removed: it fires on our
/// delete, where dropping it unfired would cost a RemoveWatches request. Its reads are paced as
/// `retry` says and never give up while the session lives: a watch that gave up would leave the
/// holder blind to the loss of its node.
pub(crate) fn watch_node(client: &Client, retry: RetryPolicy, node_path: &Arc<str>, signal: &Arc<HoldSignal>) {
    let retry = retry.without_bound();
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return;
    };
    if !signal.starts_node_watch() {
        return;
    }
    let (client, node_path, signal) = (client.clone(), Arc::clone(node_path), Arc::clone(signal));
    runtime.spawn(async move {
        loop {
            // Made before the request: a disconnection after it, even one healed before the
            // answer, shows as a change (see `HoldSignal::armed_unbroken`).
            let since = client.state_watcher();
            let (data, watcher) = match retry_transient(retry, || client.get_and_watch_data(&node_path)).await {
                Ok((data, _stat, watcher)) => (data, watcher),
                Err(ZkError::NoNode) => return signal.mark_lost(LossReason::NodeDeleted),
                Err(err) => match SessionEnd::of_error(&err) {
                    Some(end) => return signal.mark_lost(end.loss()),
                    None => {
                        signal.mark_unwatchable();
                        return tracing::warn!(node = %node_path, error = %err, "cannot watch the lock node");
                    }
                },
            };
            if data == REVOKE_MARKER {
                signal.mark_revocation_requested();
            }
            // After the revocation flag: whoever waits for the watch then sees both.
            signal.mark_armed(since);
            let event = watcher.changed().await;
            if event.event_type == EventType::NodeDeleted {
                return signal.mark_lost(LossReason::NodeDeleted);
            }
            if let Some(end) = SessionEnd::of_state(event.session_state) {
                return signal.mark_lost(end.loss());
            }
            // Data written to our node (a revocation request, say): read it and watch again.
            if signal.is_released() {
                return;
            }
            // Spent: until the read below answers, a deletion would go unheard.
            signal.mark_spent();
        }
    });
}
