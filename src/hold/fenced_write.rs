//! Writes to ZooKeeper that commit only while a lock is held: a transaction whose first
//! operation checks that our lock node still exists (CURATOR-689, CURATOR-607).
//!
//! Why the check is enough: our lock node is ephemeral and, once we hold, stays the holder until
//! it is deleted (by our release, our session's end, or someone else). ZooKeeper runs a
//! transaction atomically, in the one order every server agrees on, so a transaction that finds
//! the node runs while no other participant can hold: a waiter holds only after our node is
//! gone. A fencing token handed to an outside resource needs that resource's cooperation; a
//! write to ZooKeeper itself needs none.

use zookeeper_client::{Client, MultiWriteError, MultiWriteResult, MultiWriter};

use crate::hold::hold_signal::HoldSignal;
use crate::queue::session_end::SessionEnd;
use crate::{Error, LossReason, Result};

/// A transaction whose first operation checks that `node` exists (version -1: any version).
pub(crate) fn fenced_writer<'a>(client: &'a Client, node: &str) -> MultiWriter<'a> {
    let mut writer = client.new_multi_writer();
    // The path is our own node's, which the client accepted when it created it.
    writer.add_check_version(node, -1).expect("a lock node path is a valid path");
    writer
}

/// Commits `writer` (made by [`fenced_writer`]) unless the hold is already known lost, and tells
/// a failed check (the lock is lost) from a failed write of the caller's.
pub(crate) async fn commit(
    mut writer: MultiWriter<'_>,
    node: &str,
    signal: &HoldSignal,
) -> Result<Vec<MultiWriteResult>> {
    if let Some(reason) = signal.reason() {
        return Err(Error::LockLost(reason));
    }
    match writer.commit().await {
        Ok(mut results) => {
            results.remove(0);
            Ok(results)
        }
        Err(MultiWriteError::OperationFailed { index: 0, .. }) => Err(lost(signal, LossReason::NodeDeleted)),
        Err(MultiWriteError::OperationFailed { index, source }) => Err(Error::WriteFailed { index: index - 1, source }),
        Err(MultiWriteError::RequestFailed { source }) => match SessionEnd::of_error(&source) {
            Some(end) => Err(lost(signal, end.loss())),
            None => Err(Error::zookeeper("commit a fenced write on", node, source)),
        },
    }
}

/// Records the loss the transaction proved, and returns it as the error.
fn lost(signal: &HoldSignal, reason: LossReason) -> Error {
    signal.mark_lost(reason);
    Error::LockLost(signal.reason().unwrap_or(reason))
}
