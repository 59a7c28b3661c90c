//! The watchdog's own program: zklock started again (`/proc/self/exe`) as the parent of the
//! command, in a PID namespace of its own where it is init (pid 1) when the kernel allows one.
//!
//! Its life: make sure zklock still lives (it dies with zklock by the parent-death signal, set
//! before this program started), start the command, then reap every process until none is left
//! (as init or, without a namespace, as a subreaper every orphan of the command's tree is its
//! child), telling zklock through a pipe of the command's terminal stops and, at the end, of the
//! command's status. Its death, however it comes, ends the command's tree: as init, the kernel
//! kills every process of the namespace; without one, the command dies of its parent-death
//! signal and zklock kills the orphans (`watchdog.rs`). Without one too, zklock's death wakes
//! the watchdog (SIGHUP, its parent-death signal then), which kills the tree itself.

use std::ffi::OsString;
use std::io::{Read as _, Write as _};
use std::os::fd::AsFd as _;
use std::os::fd::{FromRawFd as _, OwnedFd, RawFd};
use std::os::unix::process::CommandExt as _;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::prctl;
use nix::sys::signal::{kill, SigSet, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::{getpgrp, getpid, getppid, Pid};

/// The watchdog's `argv[0]`, which `ps` shows, and the word after it that asks for this program.
pub const NAME: &str = "zklock-watchdog";
pub const ASKED: &str = "--zklock-watchdog";

/// The reports the watchdog writes to zklock, one byte each and what follows it.
pub mod report {
    /// The command is running.
    pub const RUNNING: u8 = b'R';
    /// The command could not be started: its errno follows (4 bytes, native order).
    pub const CANNOT_RUN: u8 = b'E';
    /// A child of the watchdog stopped on a terminal stop signal.
    pub const STOPPED: u8 = b'S';
    /// Every process is gone: the command's wait status follows (4 bytes, native order).
    pub const ENDED: u8 = b'X';
    /// zklock stayed stopped (SIGSTOP, a debugger) past the stop limit while the command ran:
    /// the watchdog killed the command's tree, before the server could expire the session.
    pub const ZKLOCK_STOPPED: u8 = b'Z';
}

/// The stop signals a terminal sends (a shell's job stops on these, and not on SIGSTOP, which
/// a debugger or an operator sends).
const TERMINAL_STOPS: [Signal; 3] = [Signal::SIGTSTP, Signal::SIGTTIN, Signal::SIGTTOU];

/// The signals zklock passes on to the command's process group, which the watchdog is in: not
/// for it (as init it would ignore them anyway; without a namespace they would end it).
const FOR_THE_COMMAND: [Signal; 9] = [
    Signal::SIGINT,
    Signal::SIGTERM,
    Signal::SIGHUP,
    Signal::SIGQUIT,
    Signal::SIGUSR1,
    Signal::SIGUSR2,
    Signal::SIGTSTP,
    Signal::SIGTTIN,
    Signal::SIGTTOU,
];

/// Runs the watchdog when this process was started as one (`zklock-watchdog --zklock-watchdog
/// LIVENESS_FD REPORT_FD ZKLOCK_PID STOP_LIMIT_MS COMMAND...`); `None` otherwise.
pub fn run_if_asked() -> Option<ExitCode> {
    let mut args = std::env::args_os();
    if args.next()? != NAME || args.next()? != ASKED {
        return None;
    }
    let liveness = inherited_fd(args.next());
    let reports = inherited_fd(args.next());
    let zklock = args.next().and_then(|pid| pid.to_str()?.parse().ok()).map(Pid::from_raw);
    let stop_limit = args.next().and_then(|ms| ms.to_str()?.parse().ok()).map(Duration::from_millis);
    let command: Vec<OsString> = args.collect();
    Some(match (liveness, reports, zklock, stop_limit) {
        (Some(liveness), Some(reports), Some(zklock), Some(stop_limit)) => {
            watch(liveness, std::fs::File::from(reports), zklock, stop_limit, &command)
        }
        _ => ExitCode::from(crate::output::exit::Outcome::Usage.code()),
    })
}

/// How long zklock may stay stopped while the command runs, and how often the watchdog looks,
/// for a session timeout `session`. The server cannot expire the session before `session`
/// after the last request it had from us; zookeeper-client sends one (a ping) at the latest
/// `session`/5 after the one before (3 of its ticks of `session`/20, looked at every tick), so
/// expiry comes at the earliest 4/5 of `session` after zklock stopped. The watchdog sees the
/// stop within a look (`session`/20) and kills once it has lasted `session`/4: done by 3/10 of
/// `session`, with half of it to spare for the kill and a loaded machine. A shorter stop (a
/// debugger's breakpoint, a `kill -STOP` undone at once) lets the command run on.
pub fn stop_limit(session: Duration) -> Duration {
    session / 4
}

/// How often the watchdog looks whether zklock is stopped.
fn stop_look_period(stop_limit: Duration) -> Duration {
    (stop_limit / 5).max(Duration::from_millis(5))
}

/// A descriptor zklock left open across exec for us, made close-on-exec again so that the
/// command does not inherit it.
fn inherited_fd(number: Option<OsString>) -> Option<OwnedFd> {
    let fd: RawFd = number?.to_str()?.parse().ok()?;
    if fd < 3 {
        return None;
    }
    // SAFETY: F_SETFD on a number is no I/O-safety breach by itself (it fails on a closed one);
    // once it succeeded the descriptor is open, and zklock passed it to this process alone, so
    // nothing else owns it.
    unsafe { (libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) == 0).then(|| OwnedFd::from_raw_fd(fd)) }
}

/// The watchdog's life; its exit code says nothing to anyone (zklock reads the reports).
fn watch(
    liveness: OwnedFd,
    mut reports: std::fs::File,
    zklock: Pid,
    stop_limit: Duration,
    command: &[OsString],
) -> ExitCode {
    let _ = prctl::set_name(c"zklock-watchdog");
    // zklock as /proc numbers it (our parent, in /proc's namespace), to look at its state.
    let zklock_in_proc =
        std::fs::read_link("/proc/self").ok().and_then(|me| parent_of(me.to_str()?)).filter(|parent| parent != "0");
    let init = getpid() == Pid::from_raw(1);
    if !init {
        // Orphans of the command's tree become ours to reap (and to wait for, or kill).
        let _ = prctl::set_child_subreaper(true);
    }
    // Taken from a signalfd, so that one thread waits for children and for zklock's death.
    let mut heard = SigSet::empty();
    // SIGCONT too, to see a stop that held the command up end (blocked, it still continues us).
    FOR_THE_COMMAND.iter().chain(&[Signal::SIGCHLD, Signal::SIGCONT]).for_each(|&signal| heard.add(signal));
    let _ = heard.thread_block();
    let Ok(signals) = SignalFd::with_flags(&heard, SfdFlags::SFD_CLOEXEC) else { return ExitCode::FAILURE };
    // zklock may have died before the parent-death signal was set: then nothing would end us.
    if !zklock_says_go(liveness) {
        return ExitCode::FAILURE;
    }
    // In a namespace our parent shows as 0; without one, zklock until it dies.
    let zklock = if init { Pid::from_raw(0) } else { zklock };
    let Some(command) = start(command, &mut reports) else { return ExitCode::FAILURE };
    let _ = reports.write_all(&[report::RUNNING]);
    leave_zklock_stdio();
    let mut state = CommandState {
        pid: command,
        in_proc: in_proc_of_child(command),
        status: 0,
        stopped: false,
        hold_up_told: false,
    };
    let mut zklock_stopped_since: Option<Instant> = None;
    let look = stop_look_period(stop_limit);
    loop {
        if !reap(&mut state, &mut reports) {
            break;
        }
        if getppid() != zklock {
            // zklock died (its parent-death signal, SIGHUP without a namespace, woke us).
            kill_children();
        }
        let held_up = state.held_up_by_a_stop();
        if held_up && !state.hold_up_told {
            let _ = reports.write_all(&[report::STOPPED]);
        }
        state.hold_up_told = held_up;
        // A stopped zklock sends no heartbeat, and the session would expire while the command
        // runs on: a stopped command (a terminal's Ctrl-Z, which stops zklock after it) waits.
        let stopped = !held_up && !state.stopped && zklock_in_proc.as_deref().is_some_and(is_stopped);
        zklock_stopped_since = stopped.then(|| zklock_stopped_since.unwrap_or_else(Instant::now));
        if zklock_stopped_since.is_some_and(|since| since.elapsed() >= stop_limit) {
            let _ = reports.write_all(&[report::ZKLOCK_STOPPED]);
            kill_children();
            state.status = Signal::SIGKILL as i32;
            zklock_stopped_since = None;
        }
        // Each terminal stop (Ctrl-Z again after `fg`) is news, whether or not the last was
        // seen to end.
        if wait_for_signal(&signals, look).is_some_and(|signal| TERMINAL_STOPS.contains(&signal)) {
            state.hold_up_told = false;
        }
    }
    let _ = reports.write_all(&[&[report::ENDED][..], &state.status.to_ne_bytes()].concat());
    ExitCode::SUCCESS
}

/// What the watchdog knows of the command.
struct CommandState {
    pid: Pid,
    /// Its name in /proc (another number than `pid` in a PID namespace); `None` once it ended.
    in_proc: Option<String>,
    /// Its wait status, once it ended.
    status: i32,
    /// Stopped, as its last wait status said.
    stopped: bool,
    /// zklock was told of a stop that holds it up (`held_up_by_a_stop`), which lasts.
    hold_up_told: bool,
}

impl CommandState {
    /// Whether a terminal stop holds the command up without its being stopped: a stop signal is
    /// due in a process that cannot act on it, asleep in the kernel (`stop_is_due`). So is a
    /// shell in vfork(2) whose child the same Ctrl-Z stopped before it could exec: the shell
    /// cannot run (nor stop) until the child is continued, and no wait status ever comes.
    fn held_up_by_a_stop(&self) -> bool {
        !self.stopped
            && self
                .in_proc
                .as_deref()
                .and_then(|pid| std::fs::read_to_string(format!("/proc/{pid}/status")).ok())
                .is_some_and(|status| stop_is_due(&status))
    }
}

/// Whether a /proc status says the process sleeps uninterruptibly (state D, as in vfork(2)
/// until the child execs) with a terminal stop signal pending (for a thread or the process):
/// it stops, or handles the stop, as soon as it can run again.
fn stop_is_due(status: &str) -> bool {
    let pending =
        |name: &str| status_field(status, name).and_then(|mask| u64::from_str_radix(mask, 16).ok()).unwrap_or(0);
    let stops = TERMINAL_STOPS.iter().fold(0u64, |mask, &signal| mask | 1 << (signal as u64 - 1));
    status_field(status, "State:").is_some_and(|state| state.starts_with('D'))
        && (pending("SigPnd:") | pending("ShdPnd:")) & stops != 0
}

/// The value of the line `name` (with its colon) of a /proc status, trimmed.
fn status_field<'a>(status: &'a str, name: &str) -> Option<&'a str> {
    status.lines().find_map(|line| line.strip_prefix(name)).map(str::trim)
}

/// Starts the command in the watchdog's process group; its pid, or `None` after reporting why
/// it could not start.
fn start(command: &[OsString], reports: &mut std::fs::File) -> Option<Pid> {
    let (program, args) = command.split_first()?;
    let watchdog = getpid();
    let mut spawn = std::process::Command::new(program);
    spawn.args(args).process_group(getpgrp().as_raw());
    // SAFETY: pthread_sigmask, prctl and getppid are async-signal-safe, and the hook allocates
    // nothing.
    unsafe {
        spawn.pre_exec(move || {
            // The command starts with no signal blocked, whatever the watchdog blocks.
            SigSet::empty().thread_set_mask()?;
            // Without a namespace, what ends the command when the watchdog dies.
            prctl::set_pdeathsig(Signal::SIGKILL)?;
            // The watchdog died before the line above: nothing would end the command.
            if getppid() != watchdog {
                return Err(std::io::Error::other("the watchdog is gone"));
            }
            Ok(())
        });
    }
    match spawn.spawn() {
        Ok(child) => Some(Pid::from_raw(child.id() as libc::pid_t)),
        Err(err) => {
            let errno = err.raw_os_error().unwrap_or(libc::ENOEXEC);
            let _ = reports.write_all(&[&[report::CANNOT_RUN][..], &errno.to_ne_bytes()].concat());
            None
        }
    }
}

/// Waits until a signal comes (a child's end or stop, zklock's death, a stop or a continue of
/// the group) or `look` passed; the signal.
fn wait_for_signal(signals: &SignalFd, look: Duration) -> Option<Signal> {
    let timeout = PollTimeout::try_from(look).unwrap_or(PollTimeout::MAX);
    let mut fds = [PollFd::new(signals.as_fd(), PollFlags::POLLIN)];
    if !matches!(poll(&mut fds, timeout), Ok(1..)) {
        return None;
    }
    let heard = signals.read_signal().ok()??;
    Signal::try_from(heard.ssi_signo as i32).ok()
}

/// Whether the process /proc names `pid` is stopped (by a signal, or by a debugger).
fn is_stopped(pid: &str) -> bool {
    matches!(stat_field(pid, 0).as_deref(), Some("T" | "t"))
}

/// Reaps every child that has ended (the command, or an orphan of its tree), keeping the
/// command's wait status and whether it is stopped in `command`, and telling zklock of terminal
/// stops; false once no child is left.
fn reap(command: &mut CommandState, reports: &mut std::fs::File) -> bool {
    loop {
        match waitpid(None, Some(WaitPidFlag::WUNTRACED | WaitPidFlag::WCONTINUED | WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::StillAlive) => return true,
            Ok(WaitStatus::Stopped(pid, signal)) => {
                command.stopped |= pid == command.pid;
                if TERMINAL_STOPS.contains(&signal) {
                    let _ = reports.write_all(&[report::STOPPED]);
                }
            }
            Ok(WaitStatus::Continued(pid)) if pid == command.pid => command.stopped = false,
            Ok(WaitStatus::Exited(pid, code)) if pid == command.pid => {
                command.status = (code & 0xff) << 8;
                command.in_proc = None;
            }
            Ok(WaitStatus::Signaled(pid, signal, core)) if pid == command.pid => {
                command.status = signal as i32 | if core { 0x80 } else { 0 };
                command.in_proc = None;
            }
            Ok(_) | Err(Errno::EINTR) => {}
            Err(_) => return false,
        }
    }
}

/// Kills every descendant: the children first, whose orphans then come to us (a subreaper),
/// until none is left. Only children are killed, each before it is reaped, so no kill can reach
/// a process that reused a pid. (zklock too, for what its watchdog left.)
pub fn kill_children() {
    loop {
        let ours = children();
        if ours.is_empty() {
            return;
        }
        for &child in &ours {
            let _ = kill(child, Signal::SIGKILL);
        }
        for child in ours {
            let _ = waitpid(child, None);
        }
    }
}

/// Our children, by their pids in our PID namespace.
fn children() -> Vec<Pid> {
    children_in_proc().into_iter().map(|(_, pid)| pid).collect()
}

/// How /proc names our child `child` (`None` if it names no such child).
fn in_proc_of_child(child: Pid) -> Option<String> {
    children_in_proc().into_iter().find_map(|(in_proc, pid)| (pid == child).then_some(in_proc))
}

/// Our children, each by its name in /proc and its pid in our PID namespace. /proc, not
/// remounted, numbers processes as an outer namespace sees them when we run in one (with
/// `--pid-namespace`, or a zklock run by a zklock's command): its NSpid line gives a process's
/// pid at each level, ours among them.
fn children_in_proc() -> Vec<(String, Pid)> {
    let Some(me) = std::fs::read_link("/proc/self").ok().and_then(|me| me.to_str().map(str::to_owned)) else {
        return Vec::new();
    };
    let Some(depth) = pids_by_level(&me).map(|pids| pids.len() - 1) else { return Vec::new() };
    let Ok(processes) = std::fs::read_dir("/proc") else { return Vec::new() };
    processes
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .filter(|pid| pid.bytes().all(|byte| byte.is_ascii_digit()) && parent_of(pid).as_deref() == Some(&me))
        .filter_map(|in_proc| {
            let pid = Pid::from_raw(*pids_by_level(&in_proc)?.get(depth)?);
            Some((in_proc, pid))
        })
        .collect()
}

/// The parent of `pid` as /proc says.
fn parent_of(pid: &str) -> Option<String> {
    stat_field(pid, 1)
}

/// Field `index` of `pid`'s /proc stat after its name ("pid (comm) state ppid ...", comm may
/// hold spaces and parentheses): 0 the state, 1 the parent.
fn stat_field(pid: &str, index: usize) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat[stat.rfind(')')? + 1..].split_whitespace().nth(index).map(str::to_owned)
}

/// The pids of `pid` (as /proc names it) in each PID namespace, from /proc's own to its.
fn pids_by_level(pid: &str) -> Option<Vec<libc::pid_t>> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status_field(&status, "NSpid:")?
        .split_whitespace()
        .map(|level| level.parse().ok())
        .collect::<Option<Vec<_>>>()
        .filter(|pids| !pids.is_empty())
}

/// Waits for zklock's word that the command may start (its group has the terminal, if any);
/// false if zklock died first: the write end of the liveness pipe, which only zklock holds, is
/// closed.
fn zklock_says_go(liveness: OwnedFd) -> bool {
    let mut go = [0u8; 1];
    std::fs::File::from(liveness).read_exact(&mut go).is_ok()
}

/// Holding zklock's stdout or stderr (a pipe to a log reader, say) would keep them open after
/// the command: the command has its own copies.
fn leave_zklock_stdio() {
    let Ok(null) = std::fs::OpenOptions::new().read(true).write(true).open("/dev/null") else { return };
    let _ = nix::unistd::dup2_stdin(&null);
    let _ = nix::unistd::dup2_stdout(&null);
    let _ = nix::unistd::dup2_stderr(&null);
}

#[cfg(test)]
mod tests {
    use super::stop_is_due;

    /// /proc/PID/status, as much of it as `stop_is_due` reads.
    fn status(state: &str, thread_pending: &str, shared_pending: &str) -> String {
        format!("Name:\tsh\nState:\t{state}\nSigPnd:\t{thread_pending}\nShdPnd:\t{shared_pending}\nSigBlk:\t0000000000000000\n")
    }

    #[test]
    fn a_stop_is_due_in_an_uninterruptible_sleep_with_a_terminal_stop_pending() {
        // SIGTSTP (20), SIGTTIN (21), SIGTTOU (22): bits 19, 20, 21.
        assert!(stop_is_due(&status("D (disk sleep)", "0000000000000000", "0000000000080000")));
        assert!(stop_is_due(&status("D (disk sleep)", "0000000000100000", "0000000000000000")));
        assert!(stop_is_due(&status("D (disk sleep)", "0000000000000000", "0000000000200000")));
    }

    #[test]
    fn no_stop_is_due_when_the_process_can_act_on_it_or_none_is_pending() {
        // Running or in an interruptible sleep, it stops by itself (and its parent hears).
        assert!(!stop_is_due(&status("R (running)", "0000000000000000", "0000000000080000")));
        assert!(!stop_is_due(&status("S (sleeping)", "0000000000000000", "0000000000080000")));
        // SIGSTOP (19, bit 18) is no terminal stop; SIGINT (2) no stop at all.
        assert!(!stop_is_due(&status("D (disk sleep)", "0000000000040000", "0000000000000002")));
        assert!(!stop_is_due(&status("D (disk sleep)", "0000000000000000", "0000000000000000")));
        assert!(!stop_is_due(""));
    }
}
