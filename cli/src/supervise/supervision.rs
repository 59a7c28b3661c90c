//! A command run under a hold (a lock, a lease, leadership): started in its own process group
//! once the hold is ours, stopped when the hold is lost, when a participant that cannot share the
//! path arrives or, as `--on-revoke` says, when someone asks us to let go; signals passed on, its
//! stops followed; the hold let go of when it ends.

use std::ffi::OsString;
use std::future::Future;
use std::process::ExitCode;
use std::time::Duration;

use tracing::info;
use zklock::LossReason;
use zookeeper_client::Client;

use crate::cli::{HoldOptions, OnRevoke};
use crate::nodes::layout::Layout;
use crate::output::exit::{Failure, Outcome};
use crate::output::stderr;
use crate::signals::Signals;
use crate::supervise::group::{become_subreaper, exit_code, Group};
use crate::supervise::job::Suspend;
use crate::supervise::stop::{Step, Stop};
use crate::supervise::watchdog::{check_namespace, Isolation, Report};
use crate::supervise::watchdog_process::stop_limit;
use crate::take::held::Held;
use crate::take::intruders::{self, Watch};
use crate::take::revocation::Revocation;
use crate::take::take_alone::take_alone;

/// Runs `command` under what `take` returns (a lock, a lease, leadership) on `path`, then lets
/// go of it: the command's status, or why it could not run or was stopped.
pub async fn run_command(
    client: &Client,
    path: &str,
    layout: Layout,
    take: impl Future<Output = Result<Held, Failure>>,
    command: &[OsString],
    revocation: &Revocation,
    options: &HoldOptions,
) -> Result<ExitCode, Failure> {
    let Some((program, program_args)) = command.split_first() else {
        return Err(Failure::new(Outcome::Usage, "no command given"));
    };
    let isolation = match options.pid_namespace {
        true => {
            check_namespace()?;
            Isolation::PidNamespace
        }
        false => Isolation::None,
    };
    become_subreaper();
    let mut signals = Signals::install()?;
    let held = match take_alone(client, path, layout, take, &mut signals).await? {
        Ok(held) => held,
        Err(signal) => return Ok(ExitCode::from(128 + signal as u8)),
    };
    let env = [
        ("ZKLOCK_PATH", path.to_owned()),
        ("ZKLOCK_NODE", held.hold().node_path().to_owned()),
        ("ZKLOCK_FENCING_TOKEN", held.hold().fencing_token().to_string()),
    ];
    let stop_limit = stop_limit(client.session_timeout());
    let started = Suspend::watch()
        .and_then(|suspend| Ok((suspend, Group::spawn(program, program_args, &env, isolation, stop_limit)?)));
    let (mut suspend, mut group) = match started {
        Ok(started) => started,
        Err(failure) => {
            held.release(client).await;
            return Err(failure);
        }
    };
    let watch = Watch { path, layout };
    let watched = Watched { signals: &mut signals, suspend: &mut suspend };
    let outcome = supervise(client, &mut group, &held, watched, revocation, options, watch).await;
    // Nothing of the command outlives the hold: dropping the group kills what is left.
    drop(group);
    held.release(client).await;
    outcome
}

/// What zklock hears of while the command runs, besides the lock and the command's reports:
/// the signals it passes on.
struct Watched<'a> {
    signals: &'a mut Signals,
    suspend: &'a mut Suspend,
}

/// Waits for the command's whole tree while watching the lock, the path, the signals and the
/// command's stops.
async fn supervise(
    client: &Client,
    group: &mut Group,
    held: &Held,
    watched: Watched<'_>,
    revocation: &Revocation,
    options: &HoldOptions,
    watch: Watch<'_>,
) -> Result<ExitCode, Failure> {
    let Watched { signals, suspend } = watched;
    let mut revocation_seen = false;
    let mut stop = Stop::new(options.kill_after);
    let intruder = intruders::arrived(client, watch);
    tokio::pin!(intruder);
    loop {
        tokio::select! {
            report = group.next() => {
                if let Report::KilledForStoppedZklock = report {
                    return Err(killed_for_stopped_zklock(client, group, held).await);
                }
                let Report::Ended(status) = report else {
                    group.stop_with_it();
                    // Continued: the command stays stopped until the lock is known to be ours.
                    if let Err(why) = still_held(client, held).await {
                        stderr::warn(&format!("{why}; stopping the command"));
                        group.signal(libc::SIGKILL);
                        group.wait().await;
                        return Err(Failure::quiet(Outcome::Lost));
                    }
                    group.resume();
                    continue;
                };
                return Ok(ExitCode::from(exit_code(status)));
            }
            reason = held.hold().lost() => {
                // Continued after a stop that cost the session: the watchdog's kill is the news.
                if group.killed_for_stopped_zklock() {
                    return Err(killed_for_stopped_zklock(client, group, held).await);
                }
                // Said now, as the command may take until --kill-after to stop; the exit code
                // says the rest.
                stderr::warn(&format!("{}; stopping the command", held.lost(reason, client.session_timeout())));
                group.signal(libc::SIGTERM);
                let grace = stop.grace_left(tokio::time::Instant::now());
                let kill_by = kill_deadline(reason, client.session_timeout(), grace);
                if tokio::time::timeout(kill_by, group.wait()).await.is_err() {
                    group.signal(libc::SIGKILL);
                    group.wait().await;
                }
                return Err(Failure::quiet(Outcome::Lost));
            }
            _ = held.hold().revocation_requested(), if !revocation_seen => {
                revocation_seen = true;
                held.restore_data(client, &revocation.own_data).await;
                if revocation.policy == OnRevoke::Term {
                    info!("revocation requested: sending the command SIGTERM");
                    group.signal(libc::SIGTERM);
                } else {
                    info!("revocation requested: carrying on (--on-revoke ignore)");
                }
            }
            failure = &mut intruder => {
                // Not a loss to the session: nobody else is about to be granted our lock, so
                // the command gets --kill-after's grace (what a stop asked for left of it).
                stderr::warn(&format!("{}; stopping the command", failure.message));
                group.signal(libc::SIGTERM);
                if tokio::time::timeout(stop.grace_left(tokio::time::Instant::now()), group.wait()).await.is_err() {
                    group.signal(libc::SIGKILL);
                    group.wait().await;
                }
                return Err(Failure::quiet(Outcome::Lost));
            }
            signal = signals.next() => match stop.heard(signal, tokio::time::Instant::now()) {
                Step::PassOn => group.signal(signal),
                Step::KillNow => {
                    stderr::warn(&format!("{} again: killing the command", signal_name(signal)));
                    return Ok(kill(group).await);
                }
            },
            () = stop.overdue() => {
                let grace = crate::output::duration::human(stop.grace());
                stderr::warn(&format!("the command did not end within --kill-after ({grace}) of the signal to stop: killing it"));
                return Ok(kill(group).await);
            }
            () = suspend.next() => group.signal(libc::SIGTSTP),
        }
    }
}

/// Says that the watchdog killed the command because zklock stayed stopped, and waits for the
/// rest of the tree: a loss (76).
async fn killed_for_stopped_zklock(client: &Client, group: &mut Group, held: &Held) -> Failure {
    let limit = crate::output::duration::human(stop_limit(client.session_timeout()));
    stderr::warn(&format!(
        "zklock was stopped for over {limit} (a quarter of the session timeout) while the command ran: \
         the command was killed, as the {} could pass to another before zklock ran again",
        held.what()
    ));
    group.wait().await;
    Failure::quiet(Outcome::Lost)
}

/// Kills the command's whole tree and waits until it is gone: its status (SIGKILL's, 137).
async fn kill(group: &mut Group) -> ExitCode {
    group.signal(libc::SIGKILL);
    ExitCode::from(exit_code(group.wait().await))
}

/// `SIGTERM` for 15, for messages.
fn signal_name(signal: libc::c_int) -> &'static str {
    nix::sys::signal::Signal::try_from(signal).map_or("the signal", |signal| signal.as_str())
}

/// Whether the hold outlived a stop of zklock, in which no heartbeat went out: ZooKeeper
/// answers our session (it never does again once it expired it) and our node is there. Waits
/// at most the session timeout, after which the server may have expired the session.
async fn still_held(client: &Client, held: &Held) -> Result<(), String> {
    let node = held.hold().node_path();
    let answered = tokio::time::timeout(client.session_timeout(), client.check_stat(node));
    let what = held.what();
    tokio::select! {
        biased;
        reason = held.hold().lost() => Err(held.lost(reason, client.session_timeout())),
        answered = answered => match answered {
            Ok(Ok(Some(_))) => Ok(()),
            Ok(Ok(None)) => Err(format!("{what} lost while stopped ({node} deleted)")),
            Ok(Err(err)) => Err(format!("{what} lost while stopped ({err})")),
            Err(_) => Err(format!("{what} lost while stopped (ZooKeeper did not answer in time)")),
        },
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
