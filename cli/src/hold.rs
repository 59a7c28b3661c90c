//! `zklock hold LOCK_PATH`: take the lock, print its node and fencing token, and hold it until
//! a signal, a revocation request (unless ignored), or the reader of that line going away.

use std::process::ExitCode;

use tracing::info;
use zookeeper_client::Client;

use crate::acquire::{acquire, kind, own_data};
use crate::cli::{LockArgs, OnRevoke};
use crate::exit::{Failure, Outcome};
use crate::output;
use crate::run::{lock_path, take_alone};
use crate::signals::Signals;

/// Holds the lock until told to stop; prints the node and fencing token first.
pub async fn hold(client: &Client, args: LockArgs) -> Result<ExitCode, Failure> {
    let mut signals = Signals::install()?;
    let lock_path = lock_path(&args)?;
    let kind = kind(&args);
    let take = acquire(client, &lock_path, kind, &args);
    let held = match take_alone(client, &lock_path, kind, take, &mut signals).await? {
        Ok(held) => held,
        Err(signal) => return Ok(ExitCode::from(128 + signal as u8)),
    };
    if let Err(failure) = output::line(&format!("{} {}", held.node_path(), held.fencing_token())) {
        held.release().await;
        return Err(failure);
    }
    // A script that reads the line and goes away is done with the lock: holding on would keep
    // everyone else out until someone kills us.
    let reader_gone = output::reader_gone();
    tokio::pin!(reader_gone);
    let mut revocation_seen = false;
    let outcome = loop {
        tokio::select! {
            reason = held.lost() => break Err(Failure::new(Outcome::Lost, format!("{} lost ({reason})", held.what()))),
            _ = held.revocation_requested(), if !revocation_seen => {
                revocation_seen = true;
                held.restore_data(client, &own_data(&args)).await;
                if args.on_revoke == OnRevoke::Term {
                    info!("revocation requested: letting go");
                    break Ok(ExitCode::SUCCESS);
                }
                info!("revocation requested: holding on (--on-revoke ignore)");
            }
            () = &mut reader_gone => break Err(Failure::quiet(Outcome::ReaderGone)),
            _ = signals.next() => break Ok(ExitCode::SUCCESS),
        }
    };
    held.release().await;
    outcome
}
