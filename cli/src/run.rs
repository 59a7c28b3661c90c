//! `zklock LOCK_PATH -- COMMAND` and `zklock hold LOCK_PATH`: acquire, run the command (or just
//! hold) while watching the lock and the signals, release. `zklock elect` runs its command here
//! too, under leadership instead of a lock.

use std::ffi::OsString;
use std::future::Future;
use std::io::Write as _;
use std::process::ExitCode;
use std::time::Duration;

use tracing::info;
use zklock::{InterProcessMutex, InterProcessSemaphoreV2, LossReason, NodeSchema};
use zookeeper_client::Client;

use crate::cli::{HoldOptions, LockArgs, OnRevoke};
use crate::exit::{Failure, Outcome};
use crate::group::{become_subreaper, exit_code, Group};
use crate::held::Held;
use crate::layout::{ensure_alone, Kind};
use crate::list::queue;
use crate::signals::Signals;

/// The kind of lock the options ask for.
fn kind(args: &LockArgs) -> Kind {
    if args.semaphore.is_some() {
        Kind::Semaphore
    } else if args.mutex {
        Kind::Mutex
    } else if args.kazoo {
        Kind::Kazoo
    } else {
        Kind::ReadWrite
    }
}

/// Runs `command` while holding the lock.
pub async fn run(client: &Client, args: LockArgs, command: Vec<OsString>) -> Result<ExitCode, Failure> {
    let lock_path = lock_path(&args)?;
    let kind = kind(&args);
    let acquire = acquire(client, &lock_path, kind, &args);
    run_command(client, &lock_path, kind, acquire, &command, args.on_revoke, &args.hold).await
}

/// Runs `command` under what `take` returns (a lock, a lease, leadership) on `path`, then lets
/// go of it: the command's status, or why it could not run or was stopped.
pub async fn run_command(
    client: &Client,
    path: &str,
    kind: Kind,
    take: impl Future<Output = Result<Held, Failure>>,
    command: &[OsString],
    on_revoke: OnRevoke,
    options: &HoldOptions,
) -> Result<ExitCode, Failure> {
    let Some((program, program_args)) = command.split_first() else {
        return Err(Failure::new(Outcome::Usage, "no command given (after --)"));
    };
    become_subreaper();
    let mut signals = Signals::install()?;
    let held = match take_alone(client, path, kind, take, &mut signals).await? {
        Ok(held) => held,
        Err(signal) => return Ok(ExitCode::from(128 + signal as u8)),
    };
    let env = [
        ("ZKLOCK_PATH", path.to_owned()),
        ("ZKLOCK_NODE", held.node_path().to_owned()),
        ("ZKLOCK_FENCING_TOKEN", held.fencing_token().to_string()),
    ];
    let mut group = match Group::spawn(program, program_args, &env) {
        Ok(group) => group,
        Err(failure) => {
            held.release().await;
            return Err(failure);
        }
    };
    let outcome = supervise(&mut group, &held, &mut signals, on_revoke, options, client.session_timeout()).await;
    held.release().await;
    outcome
}

/// Holds the lock until a signal (or a revocation, unless ignored); prints the node and fencing
/// token first.
pub async fn hold(client: &Client, args: LockArgs) -> Result<ExitCode, Failure> {
    let mut signals = Signals::install()?;
    let lock_path = lock_path(&args)?;
    let kind = kind(&args);
    let held =
        match take_alone(client, &lock_path, kind, acquire(client, &lock_path, kind, &args), &mut signals).await? {
            Ok(held) => held,
            Err(signal) => return Ok(ExitCode::from(128 + signal as u8)),
        };
    println!("{} {}", held.node_path(), held.fencing_token());
    let _ = std::io::stdout().flush();
    let outcome = tokio::select! {
        reason = held.lost() => Err(Failure::new(Outcome::Lost, format!("{} lost ({reason})", held.what()))),
        _ = held.revocation_requested(), if args.on_revoke == OnRevoke::Term => {
            info!("revocation requested: letting go");
            Ok(ExitCode::SUCCESS)
        }
        _ = signals.next() => Ok(ExitCode::SUCCESS),
    };
    held.release().await;
    outcome
}

fn lock_path(args: &LockArgs) -> Result<String, Failure> {
    args.lock_path.clone().ok_or_else(|| Failure::new(Outcome::Usage, "no lock path given"))
}

/// Takes the lock (or leadership) with `take`, refusing a path used by another kind of lock.
/// `Ok(Err(signal))` when a signal came first (`take` is dropped, which leaves no node behind).
async fn take_alone(
    client: &Client,
    path: &str,
    kind: Kind,
    take: impl Future<Output = Result<Held, Failure>>,
    signals: &mut Signals,
) -> Result<Result<Held, libc::c_int>, Failure> {
    ensure_alone(client, path, kind).await?;
    if tracing::enabled!(tracing::Level::INFO) {
        say_who_holds(client, path, kind).await;
    }
    let held = tokio::select! {
        held = take => held?,
        signal = signals.next() => return Ok(Err(signal)),
    };
    // Two modes of different kinds that looked at an empty path at once both got here; each
    // looks again now that its own node is there, so at least one of them sees the other.
    if let Err(failure) = ensure_alone(client, path, kind).await {
        held.release().await;
        return Err(failure);
    }
    info!("acquired {}, fencing token {}", held.node_path(), held.fencing_token());
    Ok(Ok(held))
}

/// With -v: whom we are about to wait for.
async fn say_who_holds(client: &Client, lock_path: &str, kind: Kind) {
    let Ok(entries) = queue(client, lock_path, kind).await else { return };
    for entry in entries.iter().filter(|entry| entry.holds) {
        info!("{lock_path} is held by {} ({}); waiting", entry.node, entry.data);
    }
}

async fn acquire(client: &Client, lock_path: &str, kind: Kind, args: &LockArgs) -> Result<Held, Failure> {
    let timeout = if args.nonblock { Some(Duration::ZERO) } else { args.hold.timeout };
    let node_data = format!("zklock pid {} on {}", std::process::id(), hostname());
    let held = if let Some(leases) = args.semaphore {
        let semaphore = InterProcessSemaphoreV2::builder(client, lock_path, leases)
            .node_data(node_data)
            .loss_policy(args.hold.loss_policy.into())
            .build()
            .map_err(Failure::from_lock_error)?;
        match timeout {
            None => Some(semaphore.acquire().await.map(Held::Lease)),
            Some(timeout) => semaphore.acquire_timeout(timeout).await.transpose().map(|lease| lease.map(Held::Lease)),
        }
    } else {
        let builder = InterProcessMutex::builder(client, lock_path)
            .node_data(node_data)
            .loss_policy(args.hold.loss_policy.into());
        let rw;
        let mutex;
        let side = match kind {
            Kind::ReadWrite => {
                rw = builder.build_read_write().map_err(Failure::from_lock_error)?;
                if args.read {
                    rw.read_lock()
                } else {
                    rw.write_lock()
                }
            }
            Kind::Kazoo => {
                mutex = builder.node_schema(NodeSchema::Kazoo).build().map_err(Failure::from_lock_error)?;
                &mutex
            }
            Kind::Mutex | Kind::Semaphore | Kind::Latch => {
                mutex = builder.build().map_err(Failure::from_lock_error)?;
                &mutex
            }
        };
        match timeout {
            None => Some(side.acquire().await.map(Held::Lock)),
            Some(timeout) => side.acquire_timeout(timeout).await.transpose().map(|guard| guard.map(Held::Lock)),
        }
    };
    match held {
        Some(Ok(held)) => Ok(held),
        Some(Err(err)) => Err(Failure::from_lock_error(err)),
        None if args.nonblock => {
            Err(Failure::new(Outcome::Busy(args.hold.conflict_exit_code), format!("{lock_path} is busy")))
        }
        None => Err(Failure::new(
            Outcome::Busy(args.hold.conflict_exit_code),
            format!("timed out after {:?} waiting for {lock_path}", timeout.unwrap_or_default()),
        )),
    }
}

/// Waits for the command's whole process group while watching the lock and the signals.
async fn supervise(
    group: &mut Group,
    held: &Held,
    signals: &mut Signals,
    on_revoke: OnRevoke,
    options: &HoldOptions,
    session_timeout: Duration,
) -> Result<ExitCode, Failure> {
    let mut heed_revocation = on_revoke == OnRevoke::Term;
    let what = held.what();
    loop {
        tokio::select! {
            status = group.wait() => return Ok(ExitCode::from(exit_code(status?))),
            reason = held.lost() => {
                eprintln!("zklock: {what} lost ({reason}); stopping the command");
                group.signal(libc::SIGTERM);
                let kill_by = kill_deadline(reason, session_timeout, options.kill_after);
                if tokio::time::timeout(kill_by, group.wait()).await.is_err() {
                    group.signal(libc::SIGKILL);
                    group.wait().await?;
                }
                return Err(Failure::new(Outcome::Lost, format!("the command was stopped because the {what} was lost ({reason})")));
            }
            _ = held.revocation_requested(), if heed_revocation => {
                heed_revocation = false;
                info!("revocation requested: sending the command SIGTERM");
                group.signal(libc::SIGTERM);
            }
            signal = signals.next() => group.signal(signal),
        }
    }
}

/// How long after the loss the command may still run: never past the moment the server could
/// first expire the session, and no longer than `kill_after`.
///
/// zookeeper-client (with no connection timeout configured, as here) calls a connection lost
/// 2/5 of the negotiated session timeout T after the last reply, looking every T/20; the server
/// cannot expire the session before T after it received the request behind that reply. So it
/// expires at the earliest 11/20·T after the client noticed, and the loss was declared `after`
/// that; T/20 of it is kept for scheduling. A session already expired, or a node deleted, means
/// someone else may hold the lock now: no time at all.
fn kill_deadline(reason: LossReason, session_timeout: Duration, kill_after: Duration) -> Duration {
    let left = match reason {
        LossReason::Disconnected { after } => (session_timeout / 2).saturating_sub(after),
        _ => Duration::ZERO,
    };
    left.min(kill_after)
}

pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname").map(|name| name.trim().to_owned()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kill_comes_before_the_server_can_expire_the_session() {
        let session = Duration::from_secs(10);
        let lost_after_a_third = LossReason::Disconnected { after: session / 3 };
        let never = Duration::from_secs(3600);
        assert!(kill_deadline(lost_after_a_third, session, never) < session * 11 / 20 - session / 3);
        assert_eq!(kill_deadline(lost_after_a_third, session, Duration::from_secs(1)), Duration::from_secs(1));
        assert_eq!(kill_deadline(LossReason::SessionExpired, session, never), Duration::ZERO);
        assert_eq!(kill_deadline(LossReason::NodeDeleted, session, never), Duration::ZERO);
    }
}
