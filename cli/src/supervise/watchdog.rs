//! The watchdog, from zklock's side: the parent of the command, whose death, however it comes,
//! ends the command's tree before the lock can pass to another holder, and which ends the tree
//! itself when zklock stays stopped (`watchdog_process.rs` is its program).
//!
//! By default the command runs where zklock runs, and sees the pids everyone else sees (as under
//! `flock(1)`): the command dies with the watchdog (its parent-death signal); what it left
//! behind is killed by the watchdog when zklock dies (its parent-death signal is then SIGHUP,
//! which it takes), or by zklock, a subreaper to which the orphans come, when the watchdog dies.
//! zklock and the watchdog killed together leave the command's background processes running.
//!
//! With `--pid-namespace` ([`Isolation::PidNamespace`]) zklock clones the watchdog into a new
//! PID namespace, whose init it is: when a namespace's init dies, the kernel kills every process
//! in it, grandchildren and double-forked daemons included, so no SIGKILL of zklock, of the
//! watchdog or of both leaves anything of the command running. The price is the command's view
//! of pids: it is pid 2 with parent 1 in its namespace while /proc is the host's, so pidfiles it
//! writes, `$$`, and pids it reads from the host's pidfiles mean different processes.
//!
//! The watchdog reports to zklock through a pipe: the command started (or why not), its terminal
//! stops, a kill for a stopped zklock, and, once every process is gone, its status. zklock holds
//! the write end of a second pipe that tells the watchdog zklock is alive at the start.

use std::ffi::{CString, OsString};
use std::io::{ErrorKind, Read as _, Write as _};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::process::ExitStatusExt as _;
use std::process::ExitStatus;
use std::time::Duration;

use nix::errno::Errno;
use nix::fcntl::{fcntl, FcntlArg, FdFlag, OFlag};
use nix::sched::CloneFlags;
use nix::sys::prctl;
use nix::sys::signal::{kill, killpg, Signal};
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::{pipe2, setpgid, Pid};
use tokio::io::AsyncReadExt as _;
use tokio::net::unix::pipe::Receiver;

use crate::output::exit::{Failure, Outcome};
use crate::output::stderr;
use crate::supervise::job::Terminal;
use crate::supervise::watchdog_process::{kill_children, report, ASKED, NAME};

/// Where the command runs, as to pids.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Isolation {
    /// Where zklock runs: the pids everyone sees.
    None,
    /// In a PID namespace of its own (`--pid-namespace`): the strongest kill guarantee.
    PidNamespace,
}

/// The stack the clone runs on until it execs: a few system calls.
const CLONE_STACK: usize = 256 * 1024;

/// How often a dead watchdog is looked at until the kernel has emptied its namespace.
const REAP_POLL: Duration = Duration::from_millis(10);

/// What the watchdog tells zklock.
#[derive(Debug)]
pub enum Report {
    /// The command (or an orphan of its tree) stopped on a terminal stop signal.
    Stopped,
    /// zklock stayed stopped while the command ran: the watchdog killed the command's tree
    /// before the server could expire the session. `Ended` follows.
    KilledForStoppedZklock,
    /// Every process of the command's tree is gone: the command's status (death by SIGKILL when
    /// the watchdog itself was killed, which the kernel then did to the command).
    Ended(ExitStatus),
}

/// The running watchdog: the leader of the command's process group.
#[derive(Debug)]
pub struct Watchdog {
    pid: Pid,
    reports: Receiver,
    /// Bytes of reports read but not yet taken.
    unread: Vec<u8>,
    /// The command's status, once the watchdog said it or died.
    ended: Option<ExitStatus>,
    /// Reaped: its pid, which is the group's id, may belong to someone else now.
    reaped: bool,
    /// zklock sent it SIGKILL: its death is no news.
    killed: std::cell::Cell<bool>,
    /// It killed the command for a stopped zklock, and that was not yet returned.
    killed_for_stop: bool,
    /// The write end of the liveness pipe, kept open for as long as zklock lives.
    _liveness: OwnedFd,
}

/// What the clone execs, made before it: after the clone, no allocation.
struct Exec {
    exe: CString,
    argv: Vec<CString>,
    envp: Vec<CString>,
    /// The read end of the liveness pipe and the write end of the reports, for the watchdog.
    liveness: OwnedFd,
    reports: OwnedFd,
}

impl Watchdog {
    /// Starts the watchdog, which starts `command` with `env` added to zklock's environment, in
    /// a process group the watchdog leads, isolated as `isolation` says; gives that group the
    /// terminal first, if zklock's has it. The watchdog kills the command when zklock stays
    /// stopped for `stop_limit` (`watchdog_process::stop_limit`).
    ///
    /// Must run on a thread that lives as long as zklock (the main thread): the kernel signals
    /// the watchdog when the thread that cloned it ends.
    ///
    /// # Errors
    /// `NotAllowed` (77) when a PID namespace was asked for and the kernel refuses one (no
    /// CAP_SYS_ADMIN, as for a plain user or in a container's default profile; none configured).
    pub fn start(
        command: &[OsString],
        env: &[(&str, String)],
        terminal: Option<&Terminal>,
        isolation: Isolation,
        stop_limit: Duration,
    ) -> Result<Watchdog, Failure> {
        let cannot = |err: &dyn std::fmt::Display| {
            Failure::new(Outcome::Failed, format!("cannot start the command's watchdog: {err}"))
        };
        let (liveness, to_watchdog) = pipe2(OFlag::O_CLOEXEC).map_err(|err| cannot(&err))?;
        let (mut from_watchdog, reports) = pipe2(OFlag::O_CLOEXEC)
            .map(|(read, write)| (std::fs::File::from(read), write))
            .map_err(|err| cannot(&err))?;
        let exec = Exec::new(command, env, liveness, reports, stop_limit).map_err(|err| cannot(&err))?;
        let flags = match isolation {
            Isolation::None => CloneFlags::empty(),
            Isolation::PidNamespace => CloneFlags::CLONE_NEWPID,
        };
        let mut stack = vec![0u8; CLONE_STACK];
        let pid = clone(&exec, &mut stack, flags).map_err(|err| match err {
            Errno::EPERM | Errno::EINVAL | Errno::ENOSPC | Errno::EUSERS if isolation == Isolation::PidNamespace => {
                no_namespace(err)
            }
            err => cannot(&err),
        })?;
        drop(exec);
        // Also here, so the group exists whichever process runs first (after its exec the
        // watchdog refuses, having done it itself).
        let _ = setpgid(pid, pid);
        if let Some(terminal) = terminal {
            terminal.give_to(pid);
        }
        let mut liveness = std::fs::File::from(to_watchdog);
        // Now the watchdog may start the command: its group is the terminal's foreground job.
        let _ = liveness.write_all(b"G");
        let mut first = [0u8; 1];
        let started = match from_watchdog.read_exact(&mut first) {
            Ok(()) if first[0] == report::RUNNING => Ok(()),
            Ok(()) if first[0] == report::CANNOT_RUN => {
                let mut errno = [0u8; 4];
                let errno =
                    from_watchdog.read_exact(&mut errno).map(|()| i32::from_ne_bytes(errno)).unwrap_or(libc::ENOEXEC);
                Err(cannot_run(command, std::io::Error::from_raw_os_error(errno)))
            }
            _ => Err(cannot(&"it ended at once")),
        };
        let reports = Receiver::from_owned_fd(from_watchdog.into()).map_err(|err| cannot(&err));
        let reports = match (started, reports) {
            (Ok(()), Ok(reports)) => reports,
            (Err(failure), _) | (_, Err(failure)) => {
                end(pid);
                return Err(failure);
            }
        };
        Ok(Watchdog {
            pid,
            reports,
            unread: Vec::new(),
            ended: None,
            reaped: false,
            killed: false.into(),
            killed_for_stop: false,
            _liveness: liveness.into(),
        })
    }

    /// The process group it leads, the command's.
    pub fn group(&self) -> Pid {
        self.pid
    }

    /// Sends `signal` to the command's process group while the watchdog is there (its pid, the
    /// group's id, is ours until it is reaped); SIGKILL also to the watchdog, which takes every
    /// process of the command's tree with it.
    pub fn signal(&self, signal: Signal) {
        if self.reaped {
            return;
        }
        let _ = killpg(self.pid, signal);
        if signal == Signal::SIGKILL {
            self.killed.set(true);
            let _ = kill(self.pid, signal);
        }
    }

    /// The next report; `Ended` once the watchdog is gone (and again on every call after that):
    /// with a namespace, every process of the command's tree is then gone; without one, what the
    /// watchdog left when it was killed goes when this is dropped.
    ///
    /// # Cancel safety
    /// Cancel safe: bytes read are kept until taken, and the end once seen is kept.
    pub async fn next(&mut self) -> Report {
        let status = loop {
            if std::mem::take(&mut self.killed_for_stop) {
                return Report::KilledForStoppedZklock;
            }
            if let Some(status) = self.ended {
                break status;
            }
            match self.take() {
                Some(Report::Stopped) => return Report::Stopped,
                // Kept in `killed_for_stop`, returned above.
                Some(Report::KilledForStoppedZklock) => continue,
                // Kept in `ended`, returned once the watchdog is reaped.
                Some(Report::Ended(_)) => continue,
                None => {}
            }
            let mut bytes = [0u8; 64];
            match self.reports.read(&mut bytes).await {
                Ok(read @ 1..) => self.unread.extend_from_slice(&bytes[..read]),
                _ => {
                    if !self.killed.get() {
                        stderr::warn("the command's watchdog was killed; the command was killed with it");
                    }
                    self.ended = Some(ExitStatus::from_raw(Signal::SIGKILL as i32));
                }
            }
        };
        while !self.reaped {
            match waitpid(self.pid, Some(WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::StillAlive) => {
                    // Its group's remnants (without a namespace) go while its pid, the group's
                    // id, cannot be reused.
                    let _ = killpg(self.pid, Signal::SIGKILL);
                    tokio::time::sleep(REAP_POLL).await;
                }
                _ => self.reaped = true,
            }
        }
        Report::Ended(status)
    }

    /// Forgets the terminal stops reported so far (those of a stop zklock has followed); an end
    /// or a kill for a stopped zklock read meanwhile is kept (`take`).
    pub fn forget_stops(&mut self) {
        // Read from the descriptor itself: zklock has just continued, and the runtime may not
        // have seen the pipe become readable while it was stopped (its own read, after a short
        // one, waits for that news); a stop left unread would stop zklock again.
        let mut bytes = [0u8; 64];
        while let Ok(read @ 1..) = nix::unistd::read(&self.reports, &mut bytes) {
            self.unread.extend_from_slice(&bytes[..read]);
        }
        while self.take().is_some() {}
    }

    /// Whether the watchdog killed the command for a stopped zklock, as far as its reports
    /// already written say (it may not have been returned by [`next`](Self::next) yet): a loss
    /// seen as zklock continues may be that stop's. Terminal stops read meanwhile are dropped.
    pub fn killed_for_stopped_zklock(&mut self) -> bool {
        self.forget_stops();
        self.killed_for_stop
    }

    /// Takes the first whole report from the bytes read.
    fn take(&mut self) -> Option<Report> {
        loop {
            let (&kind, rest) = self.unread.split_first()?;
            match kind {
                report::STOPPED => {
                    self.unread.remove(0);
                    return Some(Report::Stopped);
                }
                report::ZKLOCK_STOPPED => {
                    self.unread.remove(0);
                    self.killed_for_stop = true;
                    return Some(Report::KilledForStoppedZklock);
                }
                report::ENDED => {
                    let status: [u8; 4] = rest.get(..4)?.try_into().ok()?;
                    self.unread.drain(..5);
                    let status = ExitStatus::from_raw(i32::from_ne_bytes(status));
                    self.ended = Some(status);
                    return Some(Report::Ended(status));
                }
                _ => {
                    self.unread.remove(0);
                }
            }
        }
    }
}

impl Drop for Watchdog {
    /// Whatever way zklock leaves, nothing of the command is left behind: without a namespace,
    /// the command's orphans come to zklock (a subreaper) once the watchdog is gone, and zklock
    /// has no other children.
    fn drop(&mut self) {
        if !self.reaped {
            end(self.pid);
        }
        kill_children();
    }
}

/// Kills the watchdog (and with it the command's tree) and reaps it. The group first: without
/// a namespace, its members would otherwise outlive it; its id is ours until the reaping.
fn end(watchdog: Pid) {
    let _ = killpg(watchdog, Signal::SIGKILL);
    let _ = kill(watchdog, Signal::SIGKILL);
    let _ = waitpid(watchdog, None);
}

/// Clones the watchdog with `flags`: it execs zklock as `exec` says.
fn clone(exec: &Exec, stack: &mut [u8], flags: CloneFlags) -> nix::Result<Pid> {
    // In a namespace the kernel's kill of init does it all; without one, the watchdog wakes to
    // kill the command's tree itself.
    let death = if flags.contains(CloneFlags::CLONE_NEWPID) { Signal::SIGKILL } else { Signal::SIGHUP };
    let argv: Vec<*const libc::c_char> = exec.argv.iter().map(|arg| arg.as_ptr()).chain([std::ptr::null()]).collect();
    let envp: Vec<*const libc::c_char> = exec.envp.iter().map(|var| var.as_ptr()).chain([std::ptr::null()]).collect();
    let become_watchdog = Box::new(|| {
        // Only async-signal-safe calls from here to the exec, and no allocation: a thread of
        // zklock's may have held the allocator's lock at the clone.
        let _ = setpgid(Pid::from_raw(0), Pid::from_raw(0));
        let _ = prctl::set_pdeathsig(death);
        let _ = fcntl(&exec.liveness, FcntlArg::F_SETFD(FdFlag::empty()));
        let _ = fcntl(&exec.reports, FcntlArg::F_SETFD(FdFlag::empty()));
        // SAFETY: null-terminated arrays of pointers to C strings that outlive the call.
        unsafe { libc::execve(exec.exe.as_ptr(), argv.as_ptr(), envp.as_ptr()) };
        127
    });
    // SAFETY: no CLONE_VM, so the child has a copy of this process (as after fork) and runs the
    // closure above on `stack`, which is its own copy too; the closure makes only
    // async-signal-safe calls before it execs or returns (which ends the child).
    unsafe { nix::sched::clone(become_watchdog, stack, flags, Some(libc::SIGCHLD)) }
}

impl Exec {
    fn new(
        command: &[OsString],
        env: &[(&str, String)],
        liveness: OwnedFd,
        reports: OwnedFd,
        stop_limit: Duration,
    ) -> Result<Exec, String> {
        let c_string =
            |bytes: &[u8]| CString::new(bytes).map_err(|_| "a NUL byte in the command or its environment".to_owned());
        let fd_number = |fd: &OwnedFd| std::os::fd::AsRawFd::as_raw_fd(fd).to_string();
        let mut argv = vec![c_string(NAME.as_bytes())?, c_string(ASKED.as_bytes())?];
        argv.push(c_string(fd_number(&liveness).as_bytes())?);
        argv.push(c_string(fd_number(&reports).as_bytes())?);
        argv.push(c_string(std::process::id().to_string().as_bytes())?);
        argv.push(c_string(stop_limit.as_millis().to_string().as_bytes())?);
        for word in command {
            argv.push(c_string(word.as_bytes())?);
        }
        let ours = |name: &OsString| env.iter().any(|(set, _)| name.as_bytes() == set.as_bytes());
        let mut envp = Vec::new();
        for (name, value) in std::env::vars_os().filter(|(name, _)| !ours(name)) {
            envp.push(c_string(&[name.as_bytes(), b"=", value.as_bytes()].concat())?);
        }
        for (name, value) in env {
            envp.push(c_string(format!("{name}={value}").as_bytes())?);
        }
        Ok(Exec { exe: c_string(b"/proc/self/exe")?, argv, envp, liveness, reports })
    }
}

/// A PID namespace asked for and refused: the promise it gives cannot be kept.
fn no_namespace(err: Errno) -> Failure {
    let why = match err {
        Errno::EPERM => "not permitted (it needs CAP_SYS_ADMIN: root, and not a container's default profile)",
        Errno::EINVAL => "this kernel has no PID namespaces",
        _ => "the limit of namespaces is reached",
    };
    Failure::new(Outcome::NotAllowed, format!("--pid-namespace: cannot run the command in a PID namespace: {why}"))
}

/// Whether the kernel gives this process a PID namespace for the command (`--pid-namespace`):
/// clones a child into one, which exits at once. Asked before the lock is taken, so that a run
/// that cannot keep its promise refuses before it holds anything.
///
/// # Errors
/// As [`Watchdog::start`] refuses.
pub fn check_namespace() -> Result<(), Failure> {
    let mut stack = vec![0u8; 16 * 1024];
    // SAFETY: no CLONE_VM, so the child runs on its own copy of `stack` and of this process;
    // it makes no call at all before returning (which ends it).
    let child = unsafe { nix::sched::clone(Box::new(|| 0), &mut stack, CloneFlags::CLONE_NEWPID, Some(libc::SIGCHLD)) };
    match child {
        Ok(pid) => {
            let _ = waitpid(pid, None);
            Ok(())
        }
        Err(err @ (Errno::EPERM | Errno::EINVAL | Errno::ENOSPC | Errno::EUSERS)) => Err(no_namespace(err)),
        Err(err) => Err(Failure::new(Outcome::Failed, format!("cannot start the command's watchdog: {err}"))),
    }
}

/// Why `command` could not be started, as a shell says it (127 not found, 126 otherwise).
fn cannot_run(command: &[OsString], err: std::io::Error) -> Failure {
    let name = command.first().map(|program| program.to_string_lossy().into_owned()).unwrap_or_default();
    match err.kind() {
        ErrorKind::NotFound => Failure::new(Outcome::CannotRun(127), format!("{name}: command not found")),
        ErrorKind::PermissionDenied => Failure::new(Outcome::CannotRun(126), format!("{name}: permission denied")),
        _ => Failure::new(Outcome::CannotRun(126), format!("{name}: cannot run: {err}")),
    }
}
