//! The command as a shell job. On a terminal, its group is the terminal's foreground job while
//! it runs, as a shell makes a job's. A terminal stop of that group (Ctrl-Z, or a read or a
//! write from the background: SIGTSTP, SIGTTIN, SIGTTOU), or SIGTSTP sent to zklock, stops
//! zklock with it: the shell waits for zklock, and only a stopped zklock gives it its prompt
//! back. `fg` or `bg` continues zklock, which continues the command.
//!
//! A stopped zklock sends ZooKeeper no heartbeat, so a job stopped longer than the session
//! timeout loses the lock. The command is therefore continued only once ZooKeeper has answered
//! our session again with our node still there (an expired session never answers again);
//! otherwise it is killed while still stopped, and zklock exits 76 as on any loss.

use tokio::signal::unix::{signal, Signal, SignalKind};

use crate::exit::{Failure, Outcome};

/// The stop signals a terminal sends (a shell's job stops on these, and not on SIGSTOP, which
/// a debugger or an operator sends).
const TERMINAL_STOPS: [libc::c_int; 3] = [libc::SIGTSTP, libc::SIGTTIN, libc::SIGTTOU];

/// Watches for the command's group being stopped by the terminal.
pub struct Stops {
    children: Signal,
    /// SIGTSTP sent to zklock; `None` when it was ignored when zklock started (it stays so).
    suspend: Option<Signal>,
}

impl Stops {
    /// Starts watching; before the command starts, so that no stop goes unseen.
    pub fn watch() -> Result<Stops, Failure> {
        let cannot = |err: std::io::Error| Failure::new(Outcome::Failed, format!("cannot catch signals: {err}"));
        let children = signal(SignalKind::child()).map_err(cannot)?;
        let suspend = match crate::signals::ignored_at_start().contains(&libc::SIGTSTP) {
            true => None,
            false => Some(signal(SignalKind::from_raw(libc::SIGTSTP)).map_err(cannot)?),
        };
        Ok(Stops { children, suspend })
    }

    /// Waits until a process of group `pgid` that is our child stops on a terminal stop signal.
    /// SIGTSTP sent to zklock is passed on to the group, so that both stop (or neither, if the
    /// command chooses not to: zklock must not stop while the command runs on without it).
    ///
    /// # Cancel safety
    /// Cancel safe: a stop is taken from the kernel and returned in the same poll.
    pub async fn next(&mut self, pgid: libc::pid_t) {
        std::future::poll_fn(|cx| {
            if let Some(suspend) = &mut self.suspend {
                while suspend.poll_recv(cx).is_ready() {
                    // SAFETY: killpg(2) on the command's group, which the caller keeps alive.
                    unsafe { libc::killpg(pgid, libc::SIGTSTP) };
                }
            }
            while self.children.poll_recv(cx).is_ready() {
                if stopped_by_terminal(pgid) {
                    return std::task::Poll::Ready(());
                }
            }
            std::task::Poll::Pending
        })
        .await
    }
}

/// Takes every stop report of our children in group `pgid`; whether one was a terminal stop.
fn stopped_by_terminal(pgid: libc::pid_t) -> bool {
    let mut seen = false;
    loop {
        // SAFETY: a zeroed siginfo_t is a valid out-parameter for waitid(2).
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: waitid(2) for stops only (no WEXITED: nobody's exit status is taken, tokio
        // keeps the command's) on our own group, with a valid out-parameter.
        let reported =
            unsafe { libc::waitid(libc::P_PGID, pgid as libc::id_t, &mut info, libc::WSTOPPED | libc::WNOHANG) };
        // SAFETY: si_pid and si_status are set by waitid when a child was reported, and si_pid
        // is zero otherwise.
        if reported != 0 || unsafe { info.si_pid() } == 0 {
            return seen;
        }
        // SAFETY: as above, a child was reported.
        seen |= TERMINAL_STOPS.contains(&unsafe { info.si_status() });
    }
}

/// The terminal on zklock's stdin, when zklock was its foreground job at the start.
#[derive(Debug)]
pub struct Terminal {
    /// zklock's own process group, the job the shell knows.
    ours: libc::pid_t,
}

impl Terminal {
    /// The terminal, when zklock is the foreground job of the one on its stdin. The command's
    /// group is then made the foreground job while it runs, as a shell does: it can read the
    /// terminal (a background group would stop on SIGTTIN), and the terminal's Ctrl-C reaches
    /// it once, directly, instead of through zklock.
    pub fn if_foreground() -> Option<Terminal> {
        // SAFETY: isatty, tcgetpgrp and getpgrp only read this process's state.
        unsafe {
            let ours = libc::getpgrp();
            (libc::isatty(libc::STDIN_FILENO) == 1 && libc::tcgetpgrp(libc::STDIN_FILENO) == ours)
                .then_some(Terminal { ours })
        }
    }

    /// Makes `pgid` the foreground job if zklock's group is (not after `bg`: a background
    /// job does not take the terminal from the shell).
    pub fn give_to(&self, pgid: libc::pid_t) {
        if foreground() == self.ours {
            set_foreground(pgid);
        }
    }

    /// Makes zklock's group the foreground job again if `pgid` is.
    pub fn take_back_from(&self, pgid: libc::pid_t) {
        if foreground() == pgid {
            set_foreground(self.ours);
        }
    }
}

/// Stops zklock as a stopped job stops (the shell then takes the terminal back and prompts),
/// after making zklock's group the terminal's foreground job again if the command's group
/// `pgid` was; returns once zklock is continued.
pub fn stop_zklock(terminal: Option<&Terminal>, pgid: libc::pid_t) {
    if let Some(terminal) = terminal {
        terminal.take_back_from(pgid);
    }
    // SAFETY: raise(3) with a signal that stops every thread of the process until SIGCONT.
    unsafe { libc::raise(libc::SIGSTOP) };
}

/// The terminal's foreground process group (-1 when there is none or no terminal).
fn foreground() -> libc::pid_t {
    // SAFETY: tcgetpgrp only reads the terminal's state.
    unsafe { libc::tcgetpgrp(libc::STDIN_FILENO) }
}

/// Makes `pgid` the terminal's foreground group. SIGTTOU is blocked meanwhile, as a background
/// process (zklock, once it gave the terminal away) may otherwise not take it back.
fn set_foreground(pgid: libc::pid_t) {
    // SAFETY: sigset operations on a local set, and pthread_sigmask/tcsetpgrp with valid
    // arguments; the previous mask of this thread is restored.
    unsafe {
        let mut block: libc::sigset_t = std::mem::zeroed();
        let mut previous: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut block);
        libc::sigaddset(&mut block, libc::SIGTTOU);
        libc::pthread_sigmask(libc::SIG_BLOCK, &block, &mut previous);
        libc::tcsetpgrp(libc::STDIN_FILENO, pgid);
        libc::pthread_sigmask(libc::SIG_SETMASK, &previous, std::ptr::null_mut());
    }
}
