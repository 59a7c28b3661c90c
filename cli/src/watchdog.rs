//! The watchdog: a process that leads the command's process group and kills that group the
//! moment zklock dies, whatever killed it (SIGKILL and the OOM killer included), so the command
//! never runs on once nobody watches the lock for it.
//!
//! The kernel tells the watchdog of zklock's death (`PR_SET_PDEATHSIG`); it then sends SIGKILL
//! to its own group, which is the command's. Leading the group keeps the group id ours for as
//! long as the watchdog lives, so the kill can never reach a group that reused the id. It is
//! forked without exec and only makes system calls that are safe after a fork in a threaded
//! process.

use crate::exit::{Failure, Outcome};

/// The watchdog process: the leader of the command's process group.
#[derive(Debug)]
pub struct Watchdog {
    pid: libc::pid_t,
}

impl Watchdog {
    /// Forks the watchdog into a new process group of its own; the command joins it.
    ///
    /// Must run on a thread that lives as long as zklock (the main thread): the kernel signals
    /// the watchdog when the thread that forked it ends.
    pub fn start() -> Result<Watchdog, Failure> {
        // Everything the child needs is made before the fork: after it, no allocation.
        // SAFETY: sigset operations on a local, zeroed set.
        let every_signal = unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigfillset(&mut set);
            set
        };
        let dev_null = c"/dev/null";
        // SAFETY: getpid has no preconditions.
        let zklock = unsafe { libc::getpid() };
        // SAFETY: the child calls only async-signal-safe system calls (watch) and never
        // returns into Rust code.
        match unsafe { libc::fork() } {
            -1 => Err(Failure::new(
                Outcome::Failed,
                format!("cannot start the command's watchdog: {}", std::io::Error::last_os_error()),
            )),
            // SAFETY: in the child of the fork, with values made before it.
            0 => unsafe { watch(zklock, &every_signal, dev_null.as_ptr()) },
            pid => {
                // Also here, so the command can join the group whichever process runs first.
                // SAFETY: setpgid on our own child.
                unsafe { libc::setpgid(pid, pid) };
                Ok(Watchdog { pid })
            }
        }
    }

    /// The process group it leads.
    pub fn group(&self) -> libc::pid_t {
        self.pid
    }

    pub fn pid(&self) -> libc::pid_t {
        self.pid
    }
}

impl Drop for Watchdog {
    /// Once the group has emptied (or zklock gives up on it), the watchdog goes: SIGKILL to the
    /// whole group, so nothing of the command is left behind on any way out.
    fn drop(&mut self) {
        // SAFETY: killpg on the group our child leads, then reaping that child; it cannot have
        // been reaped by anyone else (only we wait for our children by group or pid).
        unsafe {
            libc::killpg(self.pid, libc::SIGKILL);
            libc::waitpid(self.pid, std::ptr::null_mut(), 0);
        }
    }
}

/// The watchdog's life: leave zklock's files and signals, wait for zklock's death, kill the
/// group.
///
/// # Safety
/// Only in the child of a fork; `dev_null` a valid C string.
unsafe fn watch(zklock: libc::pid_t, every_signal: &libc::sigset_t, dev_null: *const libc::c_char) -> ! {
    libc::setpgid(0, 0);
    // So that `ps -o comm` and `top` tell it from zklock, whose command line it shares.
    libc::prctl(libc::PR_SET_NAME, c"zklock-watchdog".as_ptr());
    // Signals zklock passes on to the group are not for the watchdog: it takes them from its
    // queue and carries on. Only SIGKILL (and SIGSTOP) reach it.
    libc::sigprocmask(libc::SIG_SETMASK, every_signal, std::ptr::null_mut());
    // Holding zklock's session socket or the pipes of its stdout would keep them open after
    // zklock is gone.
    let null = libc::open(dev_null, libc::O_RDWR);
    if null >= 0 {
        for fd in 0..3 {
            libc::dup2(null, fd);
        }
    }
    libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, 0u32);
    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGHUP);
    // zklock may have died before the line above: then our parent is already another process.
    while libc::getppid() == zklock {
        libc::sigwaitinfo(every_signal, std::ptr::null_mut());
    }
    libc::kill(0, libc::SIGKILL);
    libc::_exit(0)
}
