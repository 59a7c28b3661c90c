//! `FencedWrite`: writes that commit only while our lock node exists.
//!
//! A transaction whose first operation checks that our lock node still exists (CURATOR-689,
//! CURATOR-607).
//!
//! Why the check is enough: our lock node is ephemeral and, once we hold, stays the holder until
//! it is deleted (by our release, our session's end, or someone else). ZooKeeper runs a
//! transaction atomically, in the one order every server agrees on, so a transaction that finds
//! the node runs while no other participant can hold: a waiter holds only after our node is
//! gone. A fencing token handed to an outside resource needs that resource's cooperation; a
//! write to ZooKeeper itself needs none.
//!
//! Why a type of its own: `commit` reads a failure of the first operation as the loss of the
//! hold and leaves the first result out. Given a transaction without the check, it would call
//! the caller's own failed write a loss, mark a live hold lost, and drop the caller's first
//! result. So the check is added when the transaction is made, nothing can remove it (no access
//! to the client's `MultiWriter`, whose `abort` would), and `commit` takes only this type.

use std::fmt;

use zookeeper_client::{Client, CreateOptions, MultiWriteError, MultiWriteResult, MultiWriter};

use crate::client::session_end::SessionEnd;
use crate::error::{Error, LossReason, Result};
use crate::hold::hold_signal::HoldSignal;

/// A ZooKeeper transaction that commits only while a hold lasts: made by `multi_writer()` of a
/// [`LockGuard`](crate::LockGuard), [`Lease`](crate::Lease),
/// [`Leadership`](crate::election::Leadership) or any [`Hold`](crate::hold::Hold), and sent by
/// `commit()`.
///
/// Its first operation, added when it is made and out of the caller's reach, checks that the
/// hold's node still exists; the caller adds the writes with the `add_*` methods of the client's
/// `MultiWriter`. `commit` takes nothing else, so a transaction without the check (a plain
/// `client.new_multi_writer()`) does not compile:
///
/// ```compile_fail,E0308
/// # async fn write(client: &zklock::zookeeper_client::Client, guard: &zklock::LockGuard) -> zklock::Result<()> {
/// let mut write = client.new_multi_writer();
/// write.add_set_data("/app/state/leader", b"host-1", None).unwrap();
/// guard.commit(write).await?; // expected `FencedWrite<'_>`, found `MultiWriter<'_>`
/// # Ok(())
/// # }
/// ```
///
/// The same with the guard's own transaction compiles:
///
/// ```no_run
/// use zklock::hold::Hold;
/// # async fn write(client: &zklock::zookeeper_client::Client, guard: &zklock::LockGuard) -> zklock::Result<()> {
/// let mut write = guard.multi_writer();
/// write.add_set_data("/app/state/leader", b"host-1", None).unwrap();
/// guard.commit(write).await?;
/// # let _ = client;
/// # Ok(())
/// # }
/// ```
///
/// A transaction is checked against the hold that made it, whichever hold's `commit` sends it.
#[must_use = "a fenced write does nothing until a hold's `commit` sends it"]
pub struct FencedWrite<'a> {
    writer: MultiWriter<'a>,
    node: &'a str,
    signal: &'a HoldSignal,
}

impl<'a> FencedWrite<'a> {
    /// A transaction whose first operation checks that `node` exists (version -1: any version).
    pub(crate) fn new(client: &'a Client, node: &'a str, signal: &'a HoldSignal) -> Self {
        let mut writer = client.new_multi_writer();
        // The path is our own node's, which the client accepted when it created it.
        writer.add_check_version(node, -1).expect("a lock node path is a valid path");
        FencedWrite { writer, node, signal }
    }

    /// Adds a check that the node at `path` has `version`, as `MultiWriter::add_check_version`.
    ///
    /// # Errors
    /// As `MultiWriter::add_check_version`: `path` is not a valid path.
    pub fn add_check_version(&mut self, path: &str, version: i32) -> std::result::Result<(), zookeeper_client::Error> {
        self.writer.add_check_version(path, version)
    }

    /// Adds the creation of a node, as `MultiWriter::add_create`.
    ///
    /// # Errors
    /// As `MultiWriter::add_create`: an invalid path or options.
    pub fn add_create(
        &mut self,
        path: &str,
        data: &[u8],
        options: &CreateOptions<'_>,
    ) -> std::result::Result<(), zookeeper_client::Error> {
        self.writer.add_create(path, data, options)
    }

    /// Adds setting a node's data, as `MultiWriter::add_set_data`.
    ///
    /// # Errors
    /// As `MultiWriter::add_set_data`: `path` is not a valid path.
    pub fn add_set_data(
        &mut self,
        path: &str,
        data: &[u8],
        expected_version: Option<i32>,
    ) -> std::result::Result<(), zookeeper_client::Error> {
        self.writer.add_set_data(path, data, expected_version)
    }

    /// Adds the deletion of a node, as `MultiWriter::add_delete`.
    ///
    /// # Errors
    /// As `MultiWriter::add_delete`: `path` is not a valid path, or is the root.
    pub fn add_delete(
        &mut self,
        path: &str,
        expected_version: Option<i32>,
    ) -> std::result::Result<(), zookeeper_client::Error> {
        self.writer.add_delete(path, expected_version)
    }

    /// Commits the transaction unless the hold is already known lost, and tells a failed check
    /// (the lock is lost) from a failed write of the caller's.
    pub(crate) async fn commit(mut self) -> Result<Vec<MultiWriteResult>> {
        let signal = self.signal;
        if let Some(reason) = signal.reason() {
            return Err(Error::LockLost(reason));
        }
        match self.writer.commit().await {
            Ok(mut results) => {
                results.remove(0);
                Ok(results)
            }
            Err(MultiWriteError::OperationFailed { index: 0, .. }) => Err(lost(signal, LossReason::NodeDeleted)),
            Err(MultiWriteError::OperationFailed { index, source }) => {
                Err(Error::WriteFailed { index: index - 1, source })
            }
            Err(MultiWriteError::RequestFailed { source }) => match SessionEnd::of_error(&source) {
                Some(end) => Err(lost(signal, end.loss())),
                None => Err(Error::zookeeper("commit a fenced write on", self.node, source)),
            },
        }
    }
}

impl fmt::Debug for FencedWrite<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FencedWrite").field("node", &self.node).finish_non_exhaustive()
    }
}

/// Records the loss the transaction proved, and returns it as the error.
fn lost(signal: &HoldSignal, reason: LossReason) -> Error {
    signal.mark_lost(reason);
    Error::LockLost(signal.reason().unwrap_or(reason))
}
