//! `zklock hold LOCK_PATH`: take the lock, print its node and fencing token, and keep it
//! (`keep.rs`) until a signal (128+N, also while waiting), a revocation request (0, unless
//! ignored), the reader of that line going away (141), or its loss (76): "held" means held
//! without a gap. With `--retake`, a loss to the session is taken again (`retake.rs`), and a new
//! line printed. A participant that cannot share the path arriving is a loss too.

use std::process::ExitCode;

use zookeeper_client::Client;

use crate::cli::{Connection, LockArgs};
use crate::nodes::acl;
use crate::output::exit::Failure;
use crate::signals::Signals;
use crate::take::acquire::{acquire, layout, own_data};
use crate::take::chain::Chain;
use crate::take::intruders::Watch;
use crate::take::keep::{keep, Kept};
use crate::take::retake;
use crate::take::revocation::Revocation;
use crate::take::take_alone::take_alone;

/// Holds the lock until told to stop or it is lost (76); with `--retake`, takes it again after a
/// loss to the session. Prints the node and fencing token of each hold. Its nodes say they are
/// `chain`'s (a `zklock` whose command runs this one).
pub async fn hold(
    client: &Client,
    connection: &Connection,
    lock_path: &str,
    args: &LockArgs,
    chain: Option<Chain>,
    as_json: bool,
) -> Result<ExitCode, Failure> {
    let mut signals = Signals::install()?;
    let layout = layout(args);
    let session = retake::session(client, connection)?;
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
        let take = acquire((&session).into(), &client, lock_path, layout.kind, args, &acls, chain);
        let held = match take_alone(&client, lock_path, layout, take, &mut signals).await {
            Ok(Ok(held)) => held,
            Ok(Err(signal)) => return signalled(signal),
            // The session expired while we queued (nothing was held yet): queue again on the
            // next one.
            Err(failure) if client.state() == zookeeper_client::SessionState::Expired => {
                retake::say_again(&format!("lock lost ({})", failure.message));
                continue;
            }
            Err(failure) => return Err(failure),
        };
        let kept = keep(&client, watch, &held, &mut signals, &revocation, as_json).await;
        if let Kept::Lost(reason) = kept {
            if args.retake && retake::takes_again(reason) {
                retake::say_again(&held.lost(reason, client.session_timeout()));
                let settled = signals.until(retake::settled(&client)).await;
                held.release(&client).await;
                match settled {
                    Ok(()) => continue,
                    Err(signal) => return signalled(signal),
                }
            }
        }
        let outcome = kept.outcome(&held, client.session_timeout());
        held.release(&client).await;
        return outcome;
    }
}
