//! The command's process group: started in a group of its own (led by the watchdog, its
//! parent, whose death ends the command's whole tree), signalled as a whole, and waited for
//! until its last process is gone, so nothing the command started outlives the lock.

use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

use nix::sys::signal::Signal;

use crate::output::exit::{Failure, Outcome};
use crate::supervise::job::{stop_zklock, Terminal};
use crate::supervise::watchdog::{Isolation, Report, Watchdog};

/// A running command and every process it started.
#[derive(Debug)]
pub struct Group {
    /// The command's parent; dropped (killing what is left of the tree) when the group is.
    watchdog: Watchdog,
    /// The terminal, when zklock was its foreground job: the command's group has it while it
    /// runs, and zklock's again when the command stops or ends.
    terminal: Option<Terminal>,
}

/// Makes this process the reaper of its orphaned descendants: without a PID namespace (the
/// default), what the command left behind when its watchdog was killed is ours to kill
/// (`watchdog.rs`).
pub fn become_subreaper() {
    let _ = nix::sys::prctl::set_child_subreaper(true);
}

impl Group {
    /// Starts `program` in a new process group with the lock's environment, isolated as
    /// `isolation` says, killed by the watchdog when zklock stays stopped for `stop_limit`.
    pub fn spawn(
        program: &OsString,
        args: &[OsString],
        env: &[(&str, String)],
        isolation: Isolation,
        stop_limit: std::time::Duration,
    ) -> Result<Group, Failure> {
        let command: Vec<OsString> = std::iter::once(program).chain(args).cloned().collect();
        let terminal = Terminal::if_foreground();
        let watchdog = Watchdog::start(&command, env, terminal.as_ref(), isolation, stop_limit)?;
        Ok(Group { watchdog, terminal })
    }

    /// Stops zklock, once the group has stopped, as a stopped shell job (`job.rs`); returns
    /// once zklock is continued, the group still stopped.
    pub fn stop_with_it(&self) {
        stop_zklock(self.terminal.as_ref(), self.watchdog.group());
    }

    /// Continues the group after zklock was continued, on the terminal if zklock's group has it
    /// (`fg`), in the background otherwise (`bg`). The stops reported meanwhile were of the
    /// stop just followed.
    pub fn resume(&mut self) {
        self.watchdog.forget_stops();
        if let Some(terminal) = &self.terminal {
            terminal.give_to(self.watchdog.group());
        }
        self.signal(libc::SIGCONT);
    }

    /// Whether the watchdog killed the command because zklock stayed stopped
    /// ([`Watchdog::killed_for_stopped_zklock`]).
    pub fn killed_for_stopped_zklock(&mut self) -> bool {
        self.watchdog.killed_for_stopped_zklock()
    }

    /// Sends `signal` to every process of the group (SIGKILL: to the whole tree).
    pub fn signal(&self, signal: libc::c_int) {
        if let Ok(signal) = Signal::try_from(signal) {
            self.watchdog.signal(signal);
        }
    }

    /// The next terminal stop of the command, or its end (its own status, once every process it
    /// started is gone too).
    ///
    /// # Cancel safety
    /// Cancel safe, as [`Watchdog::next`].
    pub async fn next(&mut self) -> Report {
        let report = self.watchdog.next().await;
        if let (Report::Ended(_), Some(terminal)) = (&report, self.terminal.take()) {
            terminal.take_back_from(self.watchdog.group());
        }
        report
    }

    /// Waits until every process of the group has exited; returns the command's own status.
    ///
    /// # Cancel safety
    /// Cancel safe: the command's status is kept once seen, and waiting again goes on from there.
    pub async fn wait(&mut self) -> ExitStatus {
        loop {
            if let Report::Ended(status) = self.next().await {
                return status;
            }
        }
    }
}

/// The command's exit code, as a shell reports it (128 + N for death by signal N).
pub fn exit_code(status: ExitStatus) -> u8 {
    match (status.code(), status.signal()) {
        (Some(code), _) => code as u8,
        (None, Some(signal)) => 128u8.saturating_add(signal as u8),
        (None, None) => Outcome::Failed.code(),
    }
}
