//! The command's process group: started in a group of its own (led by the watchdog, which
//! kills it if zklock dies), signalled as a whole, and waited for until its last process is
//! gone, so nothing the command started outlives the lock.

use std::ffi::OsString;
use std::io::ErrorKind;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::time::Duration;

use tokio::process::Child;

use crate::exit::{Failure, Outcome};
use crate::job::{stop_zklock, Terminal};
use crate::watchdog::Watchdog;

/// How often an emptied group is looked at again once the command itself has exited.
const GROUP_POLL: Duration = Duration::from_millis(20);

/// A running command and every process in its group.
#[derive(Debug)]
pub struct Group {
    child: Child,
    pgid: libc::pid_t,
    /// Leads the group; dropped (killing what is left of the group) after everything else.
    watchdog: Watchdog,
    /// The command's own status, once it has exited (its descendants may still run).
    status: Option<ExitStatus>,
    /// The terminal, when zklock was its foreground job: the command's group has it while it
    /// runs, and zklock's again when the command stops or ends.
    terminal: Option<Terminal>,
}

/// Makes this process the reaper of its orphaned descendants, so that a command's background
/// processes whose parent exits are ours to wait for instead of init's (which in a container
/// may never reap them, and a zombie still counts as a member of the group).
pub fn become_subreaper() {
    #[cfg(target_os = "linux")]
    // SAFETY: prctl with integer arguments only.
    unsafe {
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    }
}

impl Group {
    /// Starts `program` in a new process group with the lock's environment.
    pub fn spawn(program: &OsString, args: &[OsString], env: &[(&str, String)]) -> Result<Group, Failure> {
        let watchdog = Watchdog::start()?;
        let pgid = watchdog.group();
        let mut command = tokio::process::Command::new(program);
        command.args(args).process_group(pgid);
        for (name, value) in env {
            command.env(name, value);
        }
        let child = command.spawn().map_err(|err| {
            let name = program.to_string_lossy();
            match err.kind() {
                ErrorKind::NotFound => Failure::new(Outcome::CannotRun(127), format!("{name}: command not found")),
                ErrorKind::PermissionDenied => {
                    Failure::new(Outcome::CannotRun(126), format!("{name}: permission denied"))
                }
                _ => Failure::new(Outcome::CannotRun(126), format!("{name}: cannot run: {err}")),
            }
        })?;
        let terminal = Terminal::if_foreground().inspect(|terminal| {
            terminal.give_to(pgid);
            // It may have stopped on reading the terminal before it was its own.
            // SAFETY: killpg(2) on the group we just created.
            unsafe {
                libc::killpg(pgid, libc::SIGCONT);
            }
        });
        Ok(Group { child, pgid, watchdog, status: None, terminal })
    }

    /// The command's process group.
    pub fn pgid(&self) -> libc::pid_t {
        self.pgid
    }

    /// Stops zklock, once the group has stopped, as a stopped shell job (`job.rs`); returns
    /// once zklock is continued, the group still stopped.
    pub fn stop_with_it(&self) {
        stop_zklock(self.terminal.as_ref(), self.pgid);
    }

    /// Continues the group after zklock was continued, on the terminal if zklock's group has it
    /// (`fg`), in the background otherwise (`bg`).
    pub fn resume(&self) {
        if let Some(terminal) = &self.terminal {
            terminal.give_to(self.pgid);
        }
        self.signal(libc::SIGCONT);
    }

    /// Sends `signal` to every process of the group.
    pub fn signal(&self, signal: libc::c_int) {
        // SAFETY: killpg(2) on the group we created; while any member lives (we wait for all of
        // them before dropping the group) the id cannot be reused.
        unsafe {
            libc::killpg(self.pgid, signal);
        }
    }

    /// Waits until every process of the group has exited; returns the command's own status.
    ///
    /// # Cancel safety
    /// Cancel safe: the command's status is kept once seen, and waiting again goes on from there.
    pub async fn wait(&mut self) -> Result<ExitStatus, Failure> {
        let status = match self.status {
            Some(status) => status,
            None => {
                let status = self
                    .child
                    .wait()
                    .await
                    .map_err(|err| Failure::new(Outcome::Failed, format!("lost track of the command: {err}")))?;
                *self.status.insert(status)
            }
        };
        while self.has_members() {
            tokio::time::sleep(GROUP_POLL).await;
        }
        if let Some(terminal) = self.terminal.take() {
            terminal.take_back_from(self.pgid);
        }
        Ok(status)
    }

    /// Whether any process of the group but the watchdog is still there, after reaping those
    /// of its exited members that are our children (orphans we inherited as subreaper).
    fn has_members(&self) -> bool {
        loop {
            // SAFETY: a zeroed siginfo_t is a valid out-parameter for waitid(2).
            let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
            // SAFETY: waitid(2) on our own process group id, with a valid out-parameter. The
            // command's own pid was reaped by tokio before we get here, so tokio's handle is
            // never robbed of its status.
            let reaped = unsafe {
                libc::waitid(libc::P_PGID, self.pgid as libc::id_t, &mut info, libc::WEXITED | libc::WNOHANG)
            };
            // SAFETY: si_pid is set by waitid when a child was reaped, and zero otherwise.
            if reaped != 0 || unsafe { info.si_pid() } == 0 {
                break;
            }
        }
        let watchdog = self.watchdog.pid();
        let Ok(processes) = std::fs::read_dir("/proc") else { return false };
        processes
            .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<libc::pid_t>().ok())
            .filter(|&pid| pid != watchdog)
            .any(|pid| process_group(pid) == Some(self.pgid))
    }
}

/// The process group of `pid`, from `/proc/PID/stat` (`None` once the process is gone).
fn process_group(pid: libc::pid_t) -> Option<libc::pid_t> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses, so count from
    // the last ')'.
    let after_comm = &stat[stat.rfind(')')? + 1..];
    after_comm.split_whitespace().nth(2)?.parse().ok()
}

/// The command's exit code, as a shell reports it (128 + N for death by signal N).
pub fn exit_code(status: ExitStatus) -> u8 {
    match (status.code(), status.signal()) {
        (Some(code), _) => code as u8,
        (None, Some(signal)) => 128u8.saturating_add(signal as u8),
        (None, None) => Outcome::Failed.code(),
    }
}
