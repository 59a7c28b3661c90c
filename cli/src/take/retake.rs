//! `zklock hold --retake` and `zklock elect --retake` without a command hold on for as long as
//! they run: a hold lost to the session (it expired, or the client was cut off past the loss
//! policy's grace) is taken again, on a new session if the old one expired, and its new node and
//! token printed. A node deleted by someone else still ends them (an operator's way to make a
//! holder let go), and so does every loss without `--retake` or in the command mode.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tracing::info;
use zklock::{LossReason, Session};
use zookeeper_client::{Client, SessionState};

use crate::cli::Connection;
use crate::connect::connect;
use crate::output::exit::Failure;
use crate::output::stderr;

/// A session that starts from the command's client and connects every later one as the command
/// line says (auth, TLS, chroot, timeouts).
///
/// A new session is needed once the old one is over, which the client also decides by itself
/// when no server answered within the session timeout: whether the server expired it is then
/// unknown. So a new session that cannot be had is said as what is known, once per outage, with
/// the reason (`main.rs` leaves out the library's line, which calls every end an expiry).
pub fn session(client: &Client, connection: &Connection) -> Result<Session, Failure> {
    let connection = connection.clone();
    let outage_said = Arc::new(AtomicBool::new(false));
    let reconnect = move || {
        let (connection, outage_said) = (connection.clone(), outage_said.clone());
        async move {
            let connected = connect(&connection).await;
            match &connected {
                Ok(_) => outage_said.store(false, Ordering::Relaxed),
                Err(failure) if outage_said.swap(true, Ordering::Relaxed) => {
                    info!("connecting a new session: {}", failure.message)
                }
                Err(failure) => stderr::warn(&format!(
                    "the session is over and no new one can be had yet ({}); still trying",
                    failure.message
                )),
            }
            connected.map_err(|_| zookeeper_client::Error::ConnectionLoss)
        }
    };
    Session::from_client(client.clone(), reconnect).map_err(Failure::from_lock_error)
}

/// Whether a hold lost for `reason` is taken again: a loss to the session, not an operator's
/// deletion.
pub fn takes_again(reason: LossReason) -> bool {
    matches!(reason, LossReason::SessionExpired | LossReason::Disconnected { .. })
}

/// Says that what was lost (`lost`, "lock lost (why)") is being taken again.
pub fn say_again(lost: &str) {
    stderr::warn(&format!("{lost}; taking it again"));
}

/// Waits until `client` is connected again or its session is over: a hold given up while cut off
/// may still have its node, which only a connected client can delete before we queue again.
pub async fn settled(client: &Client) {
    let mut states = client.state_watcher();
    loop {
        match states.state() {
            SessionState::SyncConnected | SessionState::ConnectedReadOnly => return,
            state if state.is_terminated() => return,
            _ => {}
        }
        // The watcher wakes on every change; the bound only guards against a missed one.
        let _ = tokio::time::timeout(Duration::from_secs(1), states.changed()).await;
    }
}
