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

use std::io::stdin;

use nix::sys::signal::{raise, SigSet, SigmaskHow, Signal};
use nix::unistd::{getpgrp, isatty, tcgetpgrp, tcsetpgrp, Pid};
use tokio::signal::unix::{signal, Signal as SignalStream, SignalKind};

use crate::output::exit::{Failure, Outcome};

/// SIGTSTP sent to zklock itself (`kill -TSTP`, not the terminal's Ctrl-Z, which reaches the
/// command's group directly): passed on to the command's group, so that both stop (or neither,
/// if the command chooses not to: zklock must not stop while the command runs on without it).
/// zklock stops once the watchdog reports the command stopped (`watchdog.rs`).
pub struct Suspend {
    /// `None` when SIGTSTP was ignored when zklock started (it stays so).
    stream: Option<SignalStream>,
}

impl Suspend {
    /// Starts catching SIGTSTP; before the command starts, so that none goes unseen.
    pub fn watch() -> Result<Suspend, Failure> {
        let cannot = |err: std::io::Error| Failure::new(Outcome::Failed, format!("cannot catch signals: {err}"));
        let stream = match crate::signals::ignored_at_start().contains(&libc::SIGTSTP) {
            true => None,
            false => Some(signal(SignalKind::from_raw(libc::SIGTSTP)).map_err(cannot)?),
        };
        Ok(Suspend { stream })
    }

    /// Waits for SIGTSTP sent to zklock (for ever if it was ignored at the start).
    ///
    /// # Cancel safety
    /// Cancel safe: a signal not yet returned stays pending in its stream.
    pub async fn next(&mut self) {
        match &mut self.stream {
            Some(stream) => {
                stream.recv().await;
            }
            None => std::future::pending().await,
        }
    }
}

/// The terminal on zklock's stdin, when zklock was its foreground job at the start.
#[derive(Debug)]
pub struct Terminal {
    /// zklock's own process group, the job the shell knows.
    ours: Pid,
}

impl Terminal {
    /// The terminal, when zklock is the foreground job of the one on its stdin. The command's
    /// group is then made the foreground job while it runs, as a shell does: it can read the
    /// terminal (a background group would stop on SIGTTIN), and the terminal's Ctrl-C reaches
    /// it once, directly, instead of through zklock.
    pub fn if_foreground() -> Option<Terminal> {
        let ours = getpgrp();
        (isatty(stdin()) == Ok(true) && foreground() == Some(ours)).then_some(Terminal { ours })
    }

    /// Makes `pgid` the foreground job if zklock's group is (not after `bg`: a background
    /// job does not take the terminal from the shell).
    pub fn give_to(&self, pgid: Pid) {
        if foreground() == Some(self.ours) {
            set_foreground(pgid);
        }
    }

    /// Makes zklock's group the foreground job again if `pgid` is.
    pub fn take_back_from(&self, pgid: Pid) {
        if foreground() == Some(pgid) {
            set_foreground(self.ours);
        }
    }
}

/// Stops zklock as a stopped job stops (the shell then takes the terminal back and prompts),
/// after making zklock's group the terminal's foreground job again if the command's group
/// `pgid` was; returns once zklock is continued.
pub fn stop_zklock(terminal: Option<&Terminal>, pgid: Pid) {
    if let Some(terminal) = terminal {
        terminal.take_back_from(pgid);
    }
    // Stops every thread of the process until SIGCONT.
    let _ = raise(Signal::SIGSTOP);
}

/// The terminal's foreground process group (`None` when there is none or no terminal).
fn foreground() -> Option<Pid> {
    tcgetpgrp(stdin()).ok()
}

/// Makes `pgid` the terminal's foreground group. SIGTTOU is blocked meanwhile, as a background
/// process (zklock, once it gave the terminal away) may otherwise not take it back.
fn set_foreground(pgid: Pid) {
    let mut block = SigSet::empty();
    block.add(Signal::SIGTTOU);
    let Ok(previous) = block.thread_swap_mask(SigmaskHow::SIG_BLOCK) else { return };
    let _ = tcsetpgrp(stdin(), pgid);
    let _ = previous.thread_set_mask();
}
