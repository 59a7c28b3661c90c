//! `zklock LOCK_PATH -- COMMAND`: acquire, run the command under the lock (`supervision.rs`),
//! release.

use std::ffi::OsString;
use std::process::ExitCode;

use zookeeper_client::Client;

use crate::cli::{Connection, LockArgs};
use crate::nodes::acl;
use crate::output::exit::Failure;
use crate::supervise::supervision::run_command;
use crate::take::acquire::{acquire, layout, own_data};
use crate::take::chain::Chain;
use crate::take::revocation::Revocation;

/// Runs `command` while holding the lock, as a link of `chain` (which the command inherits in
/// ZKLOCK_CHAIN, set when the chain was joined).
pub async fn run(
    client: &Client,
    connection: &Connection,
    lock_path: &str,
    args: &LockArgs,
    chain: Option<Chain>,
    command: &[OsString],
) -> Result<ExitCode, Failure> {
    let layout = layout(args);
    let acls = acl::for_path(client, lock_path, &args.hold.acl, connection.authenticates()).await?;
    let acquire = acquire(client.into(), client, lock_path, layout.kind, args, &acls, chain);
    let revocation = Revocation { policy: args.on_revoke, own_data: own_data(args) };
    run_command(client, lock_path, layout, acquire, command, &revocation, &args.hold).await
}
