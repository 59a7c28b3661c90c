//! Asking a holder to give a lock up.

use zookeeper_client::Error as ZkError;

use crate::client::retry::retry_transient;
use crate::client::session::Connection;
use crate::error::{Error, Result};
use crate::rules::naming::REVOKE_MARKER;

/// Asks the holder of the lock node `node_path` (one of
/// [`participants`](crate::InterProcessMutex::participants)) to give the lock up, by writing
/// `__REVOKE__` into the node, as Curator's `Revoker.attemptRevoke` does. A zklock holder sees it
/// through [`Hold::revocation_requested`](crate::hold::Hold::revocation_requested), a Curator
/// holder through the listener of `makeRevocable`. Revocation is cooperative: the holder decides
/// whether and when to release.
///
/// Returns `Ok(())` also when the node is already gone (the lock was released meanwhile).
///
/// `on` is what every builder takes: a `&Client`, or a `&Session` (its current client, and its
/// [`RetryPolicy`](crate::session::RetryPolicy)).
///
/// # Examples
///
/// ```no_run
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let client = zklock::Client::connect("127.0.0.1:2181").await?;
/// let mutex = zklock::InterProcessMutex::new(&client, "/app/locks/nightly-report")?;
/// if let Some(holder) = mutex.participants().await?.first() {
///     zklock::revoke(&client, holder).await?; // the holder hears it through revocation_requested()
/// }
/// # Ok(())
/// # }
/// ```
///
/// # Errors
/// [`Error::SessionExpired`], [`Error::SessionClosed`], or [`Error::ZooKeeper`] (for example
/// `NoAuth` when the node's ACL does not let us write).
///
/// # Cancel safety
/// The request is sent on the first poll; dropping the future after that may or may not have
/// delivered it.
pub async fn revoke(on: impl Into<Connection>, node_path: &str) -> Result<()> {
    let connection = on.into();
    let client = connection.client();
    match retry_transient(connection.retry_policy(), || client.set_data(node_path, REVOKE_MARKER, None)).await {
        Ok(_) | Err(ZkError::NoNode) => Ok(()),
        Err(err) => Err(Error::zookeeper("revoke", node_path, err)),
    }
}
