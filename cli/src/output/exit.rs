//! The exit codes of `zklock`, and the one-line error that goes with each failure.

use std::process::ExitCode;

/// The command's own status is passed through; these are zklock's own outcomes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Bad usage: a bad lock path, duration or option, or no command to run.
    Usage,
    /// ZooKeeper could not be reached, or the session ended before the lock was held.
    Unavailable,
    /// The command could not be started (not found: 127, not executable: 126, as shells do).
    CannotRun(u8),
    /// The lock was busy: `-n`, or `--timeout` passed before it was held. The code is `-E`'s.
    Busy(u8),
    /// The lock was lost while the command ran; the command was stopped.
    Lost,
    /// `--fail-on-deadlock`: the wait was a deadlock's victim and gave up, so the others go on.
    Deadlock,
    /// ZooKeeper refused us: an ACL, or authentication failed.
    NotAllowed,
    /// Something else went wrong.
    Failed,
    /// `list`: nobody holds; `revoke`: the node does not exist.
    NoHolder,
    /// Standard output could not be written (a full disk, say).
    CannotWrite,
    /// The reader of standard output went away: the code of a process killed by SIGPIPE.
    ReaderGone,
}

impl Outcome {
    pub fn code(self) -> u8 {
        match self {
            Outcome::NoHolder => 1,
            Outcome::Usage => 64,
            Outcome::Unavailable => 69,
            Outcome::Failed => 70,
            Outcome::CannotWrite => 74,
            Outcome::NotAllowed => 77,
            Outcome::Busy(code) => code,
            Outcome::Lost => 76,
            Outcome::Deadlock => 79,
            Outcome::CannotRun(code) => code,
            Outcome::ReaderGone => 128 + libc::SIGPIPE as u8,
        }
    }
}

/// A failure: what to print (one line) and how to exit.
#[derive(Debug)]
pub struct Failure {
    pub outcome: Outcome,
    pub message: String,
    /// Whether the message is only a notice, which `--quiet` leaves unsaid.
    notice: bool,
}

impl Failure {
    pub fn new(outcome: Outcome, message: impl Into<String>) -> Self {
        Failure { outcome, message: message.into(), notice: false }
    }

    /// A failure whose message the exit code already tells: unsaid with `--quiet`.
    pub fn notice(outcome: Outcome, message: impl Into<String>) -> Self {
        Failure { notice: true, ..Failure::new(outcome, message) }
    }

    /// A failure that prints nothing.
    pub fn quiet(outcome: Outcome) -> Self {
        Failure::new(outcome, "")
    }

    /// Classifies a library error.
    pub fn from_lock_error(err: zklock::Error) -> Self {
        let outcome = match &err {
            zklock::Error::InvalidPath { .. } | zklock::Error::InvalidOptions(_) => Outcome::Usage,
            // A semaphore of another N on the path, as `layout.rs` refuses for Curator's layout.
            zklock::Error::MaxLeasesMismatch { .. } => Outcome::Usage,
            zklock::Error::SessionExpired | zklock::Error::SessionClosed => Outcome::Unavailable,
            zklock::Error::LockLost(_) => Outcome::Lost,
            zklock::Error::Deadlock(_) => Outcome::Deadlock,
            zklock::Error::ZooKeeper { source, .. } if refused(source) => Outcome::NotAllowed,
            _ => Outcome::Failed,
        };
        Failure::new(outcome, err.with_causes().to_string())
    }

    /// Classifies an error of a request the command sends itself.
    pub fn zookeeper(operation: &str, path: &str, err: zookeeper_client::Error) -> Self {
        let outcome = match err {
            _ if refused(&err) => Outcome::NotAllowed,
            zookeeper_client::Error::SessionExpired | zookeeper_client::Error::ClientClosed => Outcome::Unavailable,
            _ => Outcome::Failed,
        };
        Failure::new(outcome, format!("zookeeper {operation} {path}: {err}"))
    }

    pub fn report(self) -> ExitCode {
        if self.notice {
            crate::output::stderr::notice(&self.message);
        } else if !self.message.is_empty() {
            crate::output::stderr::warn(&self.message);
        }
        ExitCode::from(self.outcome.code())
    }
}

fn refused(err: &zookeeper_client::Error) -> bool {
    matches!(err, zookeeper_client::Error::NoAuth | zookeeper_client::Error::AuthFailed)
}
