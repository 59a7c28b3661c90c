use std::time::Duration;

use zookeeper_client::{Client, SessionState};

use crate::{HarnessError, Proxy};

const WAIT_FOR_EXPIRY: Duration = Duration::from_secs(30);

/// Expires the session of `client`, which is connected through `proxy`, as a server would after
/// the session timeout, but at once.
///
/// Curator's `KillSession` trick, made deterministic: the proxy cuts `client` off so that it
/// cannot take the session back; a second client joins the same session directly at the server
/// and closes it, which deletes the session's ephemeral nodes; the proxy heals, `client`
/// reconnects, and the server tells it that its session has expired. Returns once `client` has
/// seen [`SessionState::Expired`].
///
/// # Errors
/// [`HarnessError::Client`] when the second client cannot join the session;
/// [`HarnessError::NotExpired`] when `client` does not see the expiry within 30 s.
///
/// # Cancel safety
/// Not cancel safe: dropped midway, it may leave the proxy cut off (call [`Proxy::heal`]).
pub async fn expire_session(client: &Client, proxy: &Proxy) -> Result<(), HarnessError> {
    let mut states = client.state_watcher();
    proxy.cut();
    let joined = Client::connector()
        .with_session(client.session().clone())
        .with_session_timeout(client.session_timeout())
        .connect(&proxy.targets_connect_string())
        .await;
    proxy.heal();
    let intruder =
        joined.map_err(|source| HarnessError::Client { context: "join the session to expire".into(), source })?;
    // Dropping the last handle of a client sends CloseSession.
    drop(intruder);
    let seen = tokio::time::timeout(WAIT_FOR_EXPIRY, async {
        while !matches!(states.state(), SessionState::Expired | SessionState::Closed) {
            states.changed().await;
        }
    })
    .await;
    seen.map_err(|_| HarnessError::NotExpired { waited: WAIT_FOR_EXPIRY })
}
