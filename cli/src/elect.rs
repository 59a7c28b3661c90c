//! `zklock elect PATH [COMMAND]`: join the election at PATH with a `LeaderLatch`, and run the
//! command only while leading (as the lock mode runs it under a lock), leaving the election when
//! it ends; without a command, lead until signalled (as `hold` holds).

use std::ffi::OsString;
use std::process::ExitCode;

use tracing::info;
use zklock::LeaderLatch;
use zookeeper_client::Client;

use crate::acquire::not_in_time;
use crate::cli::{LockArgs, OnRevoke};
use crate::exit::Failure;
use crate::held::Held;
use crate::hold::keep;
use crate::layout::Kind;
use crate::node_data::hostname;
use crate::run::{run_command, take_alone, Revocation};
use crate::signals::Signals;

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
pub async fn elect(client: &Client, campaign: &Campaign<'_>, command: &[OsString]) -> Result<ExitCode, Failure> {
    let leadership = lead(client, campaign);
    // Leadership cannot be revoked: only its loss, or a signal, ends it.
    let revocation = Revocation { policy: OnRevoke::Ignore, own_data: String::new() };
    if command.is_empty() {
        let mut signals = Signals::install()?;
        let held = match take_alone(client, campaign.path, Kind::Latch, leadership, &mut signals).await? {
            Ok(held) => held,
            Err(signal) => return Ok(ExitCode::from(128 + signal as u8)),
        };
        return keep(client, campaign.path, held, &mut signals, &revocation, campaign.as_json).await;
    }
    run_command(client, campaign.path, Kind::Latch, leadership, command, &revocation, &campaign.args.hold).await
}

/// Joins the election and waits to lead, until `--timeout`. Leaves the election when it gives up.
async fn lead(client: &Client, campaign: &Campaign<'_>) -> Result<Held, Failure> {
    let path = campaign.path;
    let id = campaign.id.map(str::to_owned).unwrap_or_else(|| format!("{}:{}", hostname(), std::process::id()));
    let latch = LeaderLatch::builder(client, path, &id)
        .loss_policy(campaign.args.hold.loss_policy.into())
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
        info!("leaving the election at {path}: {}", crate::exit::with_causes(&err));
    }
    Err(failure)
}
