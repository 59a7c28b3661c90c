//! `zklock hold LOCK_PATH` (and `zklock elect PATH` without a command): take the lock or
//! leadership, print its node and fencing token, and keep it until a signal (128+N, also while
//! waiting), a revocation request (0, unless ignored), the reader of that line going away (141),
//! or its loss (76): "held" means
//! held without a gap. With `--retake`, a loss to the session is taken again (`campaign.rs`), and
//! a new line printed. A participant that cannot share the path arriving is a loss too.

use std::process::ExitCode;

use serde_json::json;
use tracing::info;
use zklock::LossReason;
use zookeeper_client::Client;

use crate::acl;
use crate::acquire::{acquire, layout, own_data};
use crate::campaign;
use crate::cli::{Connection, LockArgs, OnRevoke};
use crate::exit::{Failure, Outcome};
use crate::held::Held;
use crate::intruders;
use crate::run::{take_alone, Revocation, Watch};
use crate::signals::Signals;
use crate::stdout;

/// Holds the lock until told to stop or it is lost (76); with `--retake`, takes it again after a
/// loss to the session. Prints the node and fencing token of each hold.
pub async fn hold(
    client: &Client,
    connection: &Connection,
    lock_path: &str,
    args: &LockArgs,
    as_json: bool,
) -> Result<ExitCode, Failure> {
    let mut signals = Signals::install()?;
    let layout = layout(args);
    let session = campaign::session(client, connection)?;
    let revocation = Revocation { policy: args.on_revoke, own_data: own_data(args) };
    let signalled = |signal: libc::c_int| Ok(ExitCode::from(128 + signal as u8));
    let acls = match signals.until(acl::for_path(client, lock_path, &args.hold.acl, connection.authenticates())).await {
        Ok(acls) => acls?,
        Err(signal) => return signalled(signal),
    };
    let watch = Watch { path: lock_path, layout };
    loop {
        let client = match signals.until(session.usable_client()).await {
            Ok(client) => client,
            Err(signal) => return signalled(signal),
        };
        let take = acquire((&session).into(), lock_path, layout.kind, args, &acls);
        let held = match take_alone(&client, lock_path, layout, take, &mut signals).await {
            Ok(Ok(held)) => held,
            Ok(Err(signal)) => return signalled(signal),
            // The session expired while we queued (nothing was held yet): queue again on the
            // next one.
            Err(failure) if client.state() == zookeeper_client::SessionState::Expired => {
                campaign::say_again(&format!("lock lost ({})", failure.message));
                continue;
            }
            Err(failure) => return Err(failure),
        };
        let kept = keep(&client, watch, &held, &mut signals, &revocation, as_json).await;
        if let Kept::Lost(reason) = kept {
            if args.retake && campaign::takes_again(reason) {
                campaign::say_again(&held.lost(reason));
                let settled = signals.until(campaign::settled(&client)).await;
                held.release(&client).await;
                match settled {
                    Ok(()) => continue,
                    Err(signal) => return signalled(signal),
                }
            }
        }
        let outcome = kept.outcome(&held);
        held.release(&client).await;
        return outcome;
    }
}

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
    pub fn outcome(self, held: &Held) -> Result<ExitCode, Failure> {
        match self {
            Kept::Ended(outcome) => outcome,
            Kept::Lost(reason) => Err(Failure::new(Outcome::Lost, held.lost(reason))),
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
    let intruder = intruders::arrived(client, watch.path, watch.layout);
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
