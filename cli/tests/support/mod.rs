//! Running `zklock` as a user would in the command's tests: with no option inherited from the
//! test's environment, as a job of its own that no test leaves behind.
#![allow(dead_code)] // each test binary uses its own subset

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::common::eventually;

pub const TIMED_OUT: i32 = 75;
pub const LOST: i32 = 76;
pub const UNAVAILABLE: i32 = 69;
pub const USAGE: i32 = 64;
pub const NOT_ALLOWED: i32 = 77;
/// How `hold` and `elect` without a command end on SIGTERM, waiting or holding.
pub const TERMINATED: i32 = 128 + libc::SIGTERM;

/// `zklock` with no option set and none inherited from the test's environment.
pub fn bare_zklock() -> Command {
    bare_zklock_free(Command::new(env!("CARGO_BIN_EXE_zklock")))
}

/// `command` with no zklock option inherited from the test's environment, in a group of its own.
pub fn bare_zklock_free(mut command: Command) -> Command {
    for (name, _) in std::env::vars() {
        if name.starts_with("ZKLOCK_") || name == "ZK_CONNECT" || name == "RUST_LOG" {
            command.env_remove(name);
        }
    }
    // Its own process group, as a shell's job: a test can signal the job as a terminal does,
    // and kill zklock and its command together.
    command.process_group(0);
    command
}

pub fn zklock(zk: &str) -> Command {
    let mut command = bare_zklock();
    command.arg("--zk").arg(zk).arg("--session-timeout").arg("4s");
    command
}

/// Kills a process group when dropped (zklock and its command), so no test leaves one behind.
pub struct Group(pub Child);

impl Group {
    pub fn spawn(command: &mut Command) -> Group {
        Group(command.spawn().unwrap())
    }

    /// Sends `signal` to zklock's group, as a terminal sends Ctrl-C to its foreground job.
    pub fn signal_job(&self, signal: libc::c_int) {
        // SAFETY: killpg on the group of a child we started and have not reaped.
        unsafe {
            libc::killpg(self.0.id() as libc::pid_t, signal);
        }
    }

    pub fn wait(&mut self, timeout: Duration) -> ExitStatus {
        wait_with_timeout(&mut self.0, timeout)
    }

    pub fn stderr(&mut self) -> String {
        let mut stderr = String::new();
        std::io::Read::read_to_string(self.0.stderr.as_mut().unwrap(), &mut stderr).unwrap();
        stderr
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        // SAFETY: killpg on the group of a child we started.
        unsafe {
            libc::killpg(self.0.id() as libc::pid_t, libc::SIGKILL);
        }
        let _ = self.0.wait();
    }
}

pub fn wait_with_timeout(child: &mut Child, timeout: Duration) -> ExitStatus {
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(started.elapsed() < timeout, "zklock still running after {timeout:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Starts `zklock hold` with `options` and returns it with the node it printed.
pub fn hold(zk: &str, options: &[&str], path: &str) -> (Group, String) {
    let mut holder = Group::spawn(zklock(zk).arg("hold").args(options).arg(path).stdout(Stdio::piped()));
    let mut line = String::new();
    BufReader::new(holder.0.stdout.as_mut().unwrap()).read_line(&mut line).unwrap();
    let node = line.split_whitespace().next().unwrap_or_else(|| panic!("hold printed {line:?}")).to_owned();
    (holder, node)
}

pub async fn log_has(log: &Path, what: &str) {
    eventually(&format!("the log has {what:?}"), || async { read(log).contains(what) }).await;
}

pub fn read(log: &Path) -> String {
    std::fs::read_to_string(log).unwrap_or_default()
}

/// A pseudo-terminal: `master` for the test, `slave` for a child's stdin, stdout or stderr.
pub struct Pty {
    pub master: std::fs::File,
    pub slave: std::fs::File,
}

impl Pty {
    pub fn open() -> Pty {
        use std::os::fd::FromRawFd;
        // SAFETY: posix_openpt, grantpt, unlockpt and ptsname_r on a descriptor we own; the
        // slave's name is read into a local buffer, and each descriptor is owned once.
        unsafe {
            let master = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC);
            assert!(master >= 0, "posix_openpt: {}", std::io::Error::last_os_error());
            assert_eq!(libc::grantpt(master), 0);
            assert_eq!(libc::unlockpt(master), 0);
            let mut name = [0 as libc::c_char; 128];
            assert_eq!(libc::ptsname_r(master, name.as_mut_ptr(), name.len()), 0);
            let slave = libc::open(name.as_ptr(), libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC);
            assert!(slave >= 0, "open the pty's slave: {}", std::io::Error::last_os_error());
            Pty { master: std::fs::File::from_raw_fd(master), slave: std::fs::File::from_raw_fd(slave) }
        }
    }

    /// The slave, for a child's standard stream.
    pub fn stdio(&self) -> Stdio {
        Stdio::from(self.slave.try_clone().unwrap())
    }

    /// Everything written to the terminal, once every child holding the slave has exited.
    pub fn output(self) -> String {
        drop(self.slave);
        let mut master = self.master;
        let mut bytes = Vec::new();
        // Linux says EIO on the master once the last slave is closed, after the last byte.
        let _ = std::io::Read::read_to_end(&mut master, &mut bytes);
        String::from_utf8_lossy(&bytes).into_owned()
    }
}
