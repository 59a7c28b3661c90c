//! `zklock hold LOCK_PATH` (and `zklock elect PATH` without a command): take the lock or
//! leadership, print its node and fencing token, and keep it until a signal, its loss, a
//! revocation request (unless ignored), or the reader of that line going away.

use std::process::ExitCode;

use serde_json::json;
use tracing::info;
use zookeeper_client::Client;

use crate::acquire::{acquire, kind, own_data};
use crate::cli::{LockArgs, OnRevoke};
use crate::exit::{Failure, Outcome};
use crate::held::Held;
use crate::output;
use crate::run::{take_alone, Revocation};
use crate::signals::Signals;

/// Holds the lock until told to stop; prints the node and fencing token first.
pub async fn hold(client: &Client, lock_path: &str, args: &LockArgs, as_json: bool) -> Result<ExitCode, Failure> {
    let mut signals = Signals::install()?;
    let kind = kind(args);
    let take = acquire(client, lock_path, kind, args);
    let held = match take_alone(client, lock_path, kind, take, &mut signals).await? {
        Ok(held) => held,
        Err(signal) => return Ok(ExitCode::from(128 + signal as u8)),
    };
    let revocation = Revocation { policy: args.on_revoke, own_data: own_data(args) };
    keep(client, lock_path, held, &mut signals, &revocation, as_json).await
}

/// Prints what is held, keeps it until told to stop, and lets go of it.
pub async fn keep(
    client: &Client,
    path: &str,
    held: Held,
    signals: &mut Signals,
    revocation: &Revocation,
    as_json: bool,
) -> Result<ExitCode, Failure> {
    let (node, token) = (held.hold().node_path(), held.hold().fencing_token());
    let line = match as_json {
        true => json!({ "path": path, "node": node, "token": token }).to_string(),
        false => format!("{node} {token}"),
    };
    if let Err(failure) = output::line(&line) {
        held.release(client).await;
        return Err(failure);
    }
    // A script that reads the line and goes away is done with the lock: holding on would keep
    // everyone else out until someone kills us.
    let reader_gone = output::reader_gone();
    tokio::pin!(reader_gone);
    let mut revocation_seen = false;
    let outcome = loop {
        tokio::select! {
            reason = held.hold().lost() => break Err(Failure::new(Outcome::Lost, format!("{} lost ({reason})", held.what()))),
            _ = held.hold().revocation_requested(), if !revocation_seen => {
                revocation_seen = true;
                held.restore_data(client, &revocation.own_data).await;
                if revocation.policy == OnRevoke::Term {
                    info!("revocation requested: letting go");
                    break Ok(ExitCode::SUCCESS);
                }
                info!("revocation requested: holding on (--on-revoke ignore)");
            }
            () = &mut reader_gone => break Err(Failure::quiet(Outcome::ReaderGone)),
            _ = signals.next() => break Ok(ExitCode::SUCCESS),
        }
    };
    held.release(client).await;
    outcome
}
