//! Keeping a hold without a command (`zklock hold`, `zklock elect` without one): print its node
//! and fencing token, then wait for what ends it. The caller lets go of it, or takes it again.

use std::process::ExitCode;

use serde_json::json;
use tracing::info;
use zklock::LossReason;
use zookeeper_client::Client;

use crate::cli::OnRevoke;
use crate::output::exit::{Failure, Outcome};
use crate::output::stdout;
use crate::signals::Signals;
use crate::take::held::Held;
use crate::take::intruders::{self, Watch};
use crate::take::revocation::Revocation;

/// How a hold that was kept ended.
pub enum Kept {
    /// Told to stop: exit with this (or fail so).
    Ended(Result<ExitCode, Failure>),
    /// The hold was lost.
    Lost(LossReason),
    /// A participant that cannot share the path arrived: we are no longer alone.
    Intruded(Failure),
}

impl Kept {
    /// What the command exits with when it does not take the hold again.
    pub fn outcome(self, held: &Held, session_timeout: std::time::Duration) -> Result<ExitCode, Failure> {
        match self {
            Kept::Ended(outcome) => outcome,
            Kept::Lost(reason) => Err(Failure::new(Outcome::Lost, held.lost(reason, session_timeout))),
            Kept::Intruded(failure) => Err(failure),
        }
    }
}

/// Prints what is held and keeps it until told to stop or it is lost; the caller lets go of it.
pub async fn keep(
    client: &Client,
    watch: Watch<'_>,
    held: &Held,
    signals: &mut Signals,
    revocation: &Revocation,
    as_json: bool,
) -> Kept {
    let (node, token) = (held.hold().node_path(), held.hold().fencing_token());
    let line = match as_json {
        true => json!({ "path": watch.path, "node": node, "token": token }).to_string(),
        false => format!("{node} {token}"),
    };
    if let Err(failure) = stdout::line(&line) {
        return Kept::Ended(Err(failure));
    }
    // A script that reads the line and goes away is done with the lock: holding on would keep
    // everyone else out until someone kills us.
    let reader_gone = stdout::reader_gone();
    tokio::pin!(reader_gone);
    let intruder = intruders::arrived(client, watch);
    tokio::pin!(intruder);
    let mut revocation_seen = false;
    loop {
        tokio::select! {
            reason = held.hold().lost() => return Kept::Lost(reason),
            failure = &mut intruder => return Kept::Intruded(failure),
            _ = held.hold().revocation_requested(), if !revocation_seen => {
                revocation_seen = true;
                held.restore_data(client, &revocation.own_data).await;
                if revocation.policy == OnRevoke::Term {
                    info!("revocation requested: letting go");
                    return Kept::Ended(Ok(ExitCode::SUCCESS));
                }
                info!("revocation requested: holding on (--on-revoke ignore)");
            }
            () = &mut reader_gone => return Kept::Ended(Err(Failure::quiet(Outcome::ReaderGone))),
            // 128+N, as when a signal comes while waiting: one code for "ended by the signal".
            signal = signals.next() => return Kept::Ended(Ok(ExitCode::from(128 + signal as u8))),
        }
    }
}
