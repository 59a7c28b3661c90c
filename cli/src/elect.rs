//! `zklock elect PATH -- COMMAND`: join the election at PATH with a `LeaderLatch`, run the
//! command only while leading (as the lock mode runs it under a lock), leave the election when
//! it ends.

use std::ffi::OsString;
use std::process::ExitCode;

use tracing::info;
use zklock::LeaderLatch;
use zookeeper_client::Client;

use crate::cli::{ElectArgs, OnRevoke};
use crate::exit::{Failure, Outcome};
use crate::held::Held;
use crate::layout::Kind;
use crate::node_data::hostname;
use crate::run::{run_command, Revocation};

/// Runs `command` while this process leads the election.
pub async fn elect(client: &Client, args: ElectArgs, command: Vec<OsString>) -> Result<ExitCode, Failure> {
    let path = &args.election_path;
    let leadership = lead(client, &args);
    // Leadership cannot be revoked: only its loss stops the command.
    let revocation = Revocation { policy: OnRevoke::Ignore, own_data: String::new() };
    run_command(client, path, Kind::Latch, leadership, &command, &revocation, &args.hold).await
}

/// Joins the election and waits to lead, until `--timeout`. Leaves the election when it gives up.
async fn lead(client: &Client, args: &ElectArgs) -> Result<Held, Failure> {
    let path = &args.election_path;
    let id = args.id.clone().unwrap_or_else(|| format!("{}:{}", hostname(), std::process::id()));
    let latch = LeaderLatch::builder(client, path, &id)
        .loss_policy(args.hold.loss_policy.into())
        .build()
        .map_err(Failure::from_lock_error)?;
    latch.start().await.map_err(Failure::from_lock_error)?;
    info!("joined the election at {path} as {id}");
    let leadership = match args.hold.timeout {
        None => latch.await_leadership().await.map(Some),
        Some(timeout) => latch.await_leadership_timeout(timeout).await,
    };
    let failure = match leadership {
        Ok(Some(leadership)) => return Ok(Held::Leader { latch, leadership }),
        Ok(None) => Failure::new(
            Outcome::Busy(args.hold.conflict_exit_code),
            format!("not the leader of {path} after {:?}", args.hold.timeout.unwrap_or_default()),
        ),
        Err(err) => Failure::from_lock_error(err),
    };
    if let Err(err) = latch.close().await {
        info!("leaving the election at {path}: {err}");
    }
    Err(failure)
}
