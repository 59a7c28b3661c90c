//! `zklock elect PATH [COMMAND]`: join the election at PATH with a `LeaderLatch`, and run the
//! command only while leading (as the lock mode runs it under a lock), leaving the election when
//! it ends; without a command, lead until signalled (as `hold` holds).

use std::ffi::OsString;
use std::process::ExitCode;

use tracing::info;
use zklock::{AclProvider, LeaderLatch, LockOptions};
use zookeeper_client::Client;

use crate::cli::{Connection, LockArgs, OnRevoke};
use crate::nodes::acl;
use crate::nodes::layout::{Kind, Layout};
use crate::nodes::node_data::{host_pid, hostname};
use crate::output::exit::{Failure, Outcome};
use crate::signals::Signals;
use crate::supervise::supervision::run_command;
use crate::take::acquire::not_in_time;
use crate::take::held::Held;
use crate::take::intruders::Watch;
use crate::take::keep::{keep, Kept};
use crate::take::retake;
use crate::take::revocation::Revocation;
use crate::take::take_alone::take_alone;

/// What an election puts on its path.
const LATCH: Layout = Layout { kind: Kind::Latch, leases: None };

/// Who takes part, and how: the options `zklock elect` takes.
#[derive(Debug)]
pub struct Campaign<'a> {
    pub path: &'a str,
    /// The participant's id; HOSTNAME:PID when `None`.
    pub id: Option<&'a str>,
    pub args: &'a LockArgs,
    pub as_json: bool,
}

/// Runs `command` while this process leads the election, or leads until signalled when there
/// is no command.
pub async fn elect(
    client: &Client,
    connection: &Connection,
    campaign: &Campaign<'_>,
    command: &[OsString],
) -> Result<ExitCode, Failure> {
    // Leadership cannot be revoked: only its loss, or a signal, ends it.
    let revocation = Revocation { policy: OnRevoke::Ignore, own_data: String::new() };
    let acls = acl::for_path(client, campaign.path, &campaign.args.hold.acl, connection.authenticates()).await?;
    if !command.is_empty() {
        if campaign.args.retake {
            return Err(Failure::new(Outcome::Usage, "--retake goes with `zklock elect` without a command"));
        }
        let leadership = lead(client.into(), campaign, &acls);
        return run_command(client, campaign.path, LATCH, leadership, command, &revocation, &campaign.args.hold).await;
    }
    // Without a command, lead until signalled or the leadership is lost (76); with --retake, a
    // latch on a session joins again after its expiry, and after a loss while the session lives.
    let mut signals = Signals::install()?;
    let session = retake::session(client, connection)?;
    let leadership = lead((&session).into(), campaign, &acls);
    let mut held = match take_alone(client, campaign.path, LATCH, leadership, &mut signals).await? {
        Ok(held) => held,
        Err(signal) => return Ok(ExitCode::from(128 + signal as u8)),
    };
    let signal = loop {
        let client = session.client();
        let watch = Watch { path: campaign.path, layout: LATCH };
        let kept = keep(&client, watch, &held, &mut signals, &revocation, campaign.as_json).await;
        match (kept, &mut held) {
            (Kept::Lost(reason), Held::Leader { latch, leadership })
                if campaign.args.retake && retake::takes_again(reason) =>
            {
                retake::say_again(&crate::take::held::lost("leadership", reason, client.session_timeout()));
                *leadership = tokio::select! {
                    next = latch.await_leadership() => next.map_err(Failure::from_lock_error)?,
                    signal = signals.next() => break signal,
                };
                info!("leading {} again", campaign.path);
            }
            (kept, _) => {
                let outcome = kept.outcome(&held, client.session_timeout());
                held.release(&session.client()).await;
                return outcome;
            }
        }
    };
    held.release(&session.client()).await;
    Ok(ExitCode::from(128 + signal as u8))
}

/// Joins the election and waits to lead, until `--timeout`, creating nodes with `acls`. Leaves
/// the election when it gives up.
async fn lead(on: zklock::session::Connection, campaign: &Campaign<'_>, acls: &AclProvider) -> Result<Held, Failure> {
    let path = campaign.path;
    let id = campaign.id.map(str::to_owned).unwrap_or_else(|| format!("{}:{}", hostname(), host_pid()));
    let latch = LeaderLatch::builder(on, path, &id)
        .options(LockOptions::new().loss_policy(campaign.args.hold.loss_policy.into()).acl_provider(acls.clone()))
        .build()
        .map_err(Failure::from_lock_error)?;
    latch.start().await.map_err(Failure::from_lock_error)?;
    info!("joined the election at {path} as {id}");
    let leadership = match campaign.args.hold.timeout {
        None => latch.await_leadership().await.map(Some),
        Some(timeout) => latch.await_leadership_timeout(timeout).await,
    };
    let failure = match leadership {
        Ok(Some(leadership)) => return Ok(Held::Leader { latch, leadership }),
        Ok(None) => not_in_time(path, "led by another participant", campaign.args),
        Err(err) => Failure::from_lock_error(err),
    };
    if let Err(err) = latch.close().await {
        info!("leaving the election at {path}: {}", err.with_causes());
    }
    Err(failure)
}
