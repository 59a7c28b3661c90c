//! `zklock LOCK_PATH -- COMMAND`: acquire, run the command while holding, release.

use std::ffi::OsString;
use std::io::ErrorKind;
use std::os::unix::process::ExitStatusExt;
use std::process::{ExitCode, ExitStatus};
use std::time::Duration;

use tokio::process::Child;
use tokio::signal::unix::{signal, Signal, SignalKind};
use zklock::{InterProcessMutex, InterProcessSemaphoreV2, Lease, LockGuard, LossReason};
use zookeeper_client::Client;

use crate::cli::RunArgs;
use crate::exit::{Failure, Outcome};

/// What the command runs under: a lock guard or a semaphore lease.
enum Held {
    Lock(LockGuard),
    Lease(Lease),
}

impl Held {
    fn node_path(&self) -> &str {
        match self {
            Held::Lock(guard) => guard.node_path(),
            Held::Lease(lease) => lease.node_path(),
        }
    }

    fn fencing_token(&self) -> i64 {
        match self {
            Held::Lock(guard) => guard.fencing_token(),
            Held::Lease(lease) => lease.fencing_token(),
        }
    }

    async fn lost(&self) -> LossReason {
        match self {
            Held::Lock(guard) => guard.lost().await,
            Held::Lease(lease) => lease.lost().await,
        }
    }

    async fn release(self) -> zklock::Result<()> {
        match self {
            Held::Lock(guard) => guard.release().await,
            Held::Lease(lease) => lease.release().await,
        }
    }
}

/// SIGINT and SIGTERM, caught from the start: a signal while waiting gives up the wait, one
/// while the command runs is passed on to it.
struct Signals {
    interrupt: Signal,
    terminate: Signal,
}

impl Signals {
    fn install() -> Result<Self, Failure> {
        let install =
            |kind| signal(kind).map_err(|err| Failure::new(Outcome::Failed, format!("cannot catch signals: {err}")));
        Ok(Signals { interrupt: install(SignalKind::interrupt())?, terminate: install(SignalKind::terminate())? })
    }

    /// The next SIGINT or SIGTERM.
    async fn next(&mut self) -> libc::c_int {
        tokio::select! {
            _ = self.interrupt.recv() => libc::SIGINT,
            _ = self.terminate.recv() => libc::SIGTERM,
        }
    }
}

pub async fn run(client: &Client, args: RunArgs) -> Result<ExitCode, Failure> {
    let lock_path = args.lock_path.clone().ok_or_else(|| Failure::new(Outcome::Usage, "no lock path given"))?;
    let Some((program, program_args)) = args.command.split_first() else {
        return Err(Failure::new(Outcome::Usage, "no command given (zklock LOCK_PATH -- COMMAND [ARGS...])"));
    };
    let mut signals = Signals::install()?;
    let held = tokio::select! {
        held = acquire(client, &lock_path, &args) => held?,
        signal = signals.next() => {
            // Dropping the acquire leaves no node; closing the session on the way out makes sure.
            return Ok(ExitCode::from(128 + signal as u8));
        }
    };
    let child = match spawn(program, program_args, &lock_path, &held) {
        Ok(child) => child,
        Err(failure) => {
            let _ = held.release().await;
            return Err(failure);
        }
    };
    supervise(child, held, &mut signals, args.kill_after).await
}

async fn acquire(client: &Client, lock_path: &str, args: &RunArgs) -> Result<Held, Failure> {
    let node_data = format!("zklock pid {} on {}", std::process::id(), hostname());
    let held = if let Some(leases) = args.semaphore {
        let semaphore = InterProcessSemaphoreV2::new(client, lock_path, leases).map_err(Failure::from_lock_error)?;
        match args.timeout {
            None => Some(semaphore.acquire().await.map(Held::Lease)),
            Some(timeout) => semaphore.acquire_timeout(timeout).await.transpose().map(|lease| lease.map(Held::Lease)),
        }
    } else {
        let builder = InterProcessMutex::builder(client, lock_path).node_data(node_data);
        let rw;
        let mutex;
        let side = if args.read || args.write {
            rw = builder.build_read_write().map_err(Failure::from_lock_error)?;
            if args.read {
                rw.read_lock()
            } else {
                rw.write_lock()
            }
        } else {
            mutex = builder.build().map_err(Failure::from_lock_error)?;
            &mutex
        };
        match args.timeout {
            None => Some(side.acquire().await.map(Held::Lock)),
            Some(timeout) => side.acquire_timeout(timeout).await.transpose().map(|guard| guard.map(Held::Lock)),
        }
    };
    match held {
        Some(Ok(held)) => Ok(held),
        Some(Err(err)) => Err(Failure::from_lock_error(err)),
        None => Err(Failure::new(
            Outcome::TimedOut,
            format!("timed out after {:?} waiting for {lock_path}", args.timeout.unwrap_or_default()),
        )),
    }
}

fn spawn(program: &OsString, args: &[OsString], lock_path: &str, held: &Held) -> Result<Child, Failure> {
    tokio::process::Command::new(program)
        .args(args)
        .env("ZKLOCK_PATH", lock_path)
        .env("ZKLOCK_NODE", held.node_path())
        .env("ZKLOCK_FENCING_TOKEN", held.fencing_token().to_string())
        .spawn()
        .map_err(|err| {
            let name = program.to_string_lossy();
            match err.kind() {
                ErrorKind::NotFound => Failure::new(Outcome::CannotRun(127), format!("{name}: command not found")),
                ErrorKind::PermissionDenied => {
                    Failure::new(Outcome::CannotRun(126), format!("{name}: permission denied"))
                }
                _ => Failure::new(Outcome::CannotRun(126), format!("{name}: cannot run: {err}")),
            }
        })
}

/// Waits for the command while watching the lock and the signals; releases before returning.
async fn supervise(
    mut child: Child,
    held: Held,
    signals: &mut Signals,
    kill_after: Duration,
) -> Result<ExitCode, Failure> {
    loop {
        tokio::select! {
            status = child.wait() => {
                let status = status.map_err(|err| Failure::new(Outcome::Failed, format!("lost track of the command: {err}")))?;
                if let Err(err) = held.release().await {
                    eprintln!("zklock: releasing the lock: {err}");
                }
                return Ok(ExitCode::from(exit_code(status)));
            }
            reason = held.lost() => {
                eprintln!("zklock: lock lost ({reason}); stopping the command");
                stop(&mut child, kill_after).await;
                let _ = held.release().await;
                return Err(Failure::new(Outcome::Lost, format!("the command was stopped because the lock was lost ({reason})")));
            }
            signal = signals.next() => send(&child, signal),
        }
    }
}

/// SIGTERM, then SIGKILL if the command is still there after `kill_after`.
async fn stop(child: &mut Child, kill_after: Duration) {
    send(child, libc::SIGTERM);
    if tokio::time::timeout(kill_after, child.wait()).await.is_err() {
        let _ = child.kill().await;
    }
}

fn send(child: &Child, signal: libc::c_int) {
    if let Some(pid) = child.id() {
        // SAFETY: kill(2) on our own child's pid, which we have not reaped yet.
        unsafe {
            libc::kill(pid as libc::pid_t, signal);
        }
    }
}

/// The command's exit code, as a shell reports it (128 + N for death by signal N).
fn exit_code(status: ExitStatus) -> u8 {
    match (status.code(), status.signal()) {
        (Some(code), _) => code as u8,
        (None, Some(signal)) => 128u8.saturating_add(signal as u8),
        (None, None) => Outcome::Failed.code(),
    }
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname").map(|name| name.trim().to_owned()).unwrap_or_default()
}
