//! A server the benchmark starts for itself (Redis, MariaDB): its own temporary directory, and a
//! process that dies with the benchmark.
//!
//! Dropping the guard kills the process and removes the directory, also while a panic unwinds.
//! If the benchmark dies without unwinding (abort, SIGKILL, Ctrl-C), the kernel kills the
//! server: it is forked with the parent-death signal, as the ZooKeeper server is.

use std::fs::File;
use std::net::{Ipv4Addr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use zklock_testcontainers::__private::spawn_tied_to_process;

/// A temporary directory and, once [`Spawned::start`] ran, the server process that uses it.
pub struct Spawned {
    name: &'static str,
    dir: PathBuf,
    child: Option<Child>,
}

impl Spawned {
    /// Makes a fresh, empty directory for server `name` (its data, socket and log).
    pub fn new(name: &'static str) -> Result<Spawned, String> {
        let prefix = format!("zklock-bench-{name}-");
        remove_abandoned(&prefix);
        let dir = std::env::temp_dir().join(format!("{prefix}{}", std::process::id()));
        // A directory left by an earlier benchmark with the same pid holds nothing of ours.
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).map_err(|e| format!("create {}: {e}", dir.display()))?;
        Ok(Spawned { name, dir, child: None })
    }

    /// The server's process id, once started.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// The server's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The server's log file, where its stdout and stderr go.
    pub fn log(&self) -> PathBuf {
        self.dir.join(format!("{}.log", self.name))
    }

    /// Runs a setup command to completion (such as `mariadb-install-db`), tied to this process
    /// like the server.
    pub fn run(&self, mut command: Command) -> Result<Output, String> {
        let program = command.get_program().to_string_lossy().into_owned();
        command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let child = spawn_tied_to_process(command).map_err(|e| not_started(&program, e))?;
        child.wait_with_output().map_err(|e| format!("{program}: {e}"))
    }

    /// Starts the server, its output going to [`Self::log`]; does not wait for it to serve.
    pub fn start(&mut self, mut command: Command) -> Result<(), String> {
        let program = command.get_program().to_string_lossy().into_owned();
        let log = File::create(self.log()).map_err(|e| format!("create the {} log: {e}", self.name))?;
        let log_too = log.try_clone().map_err(|e| e.to_string())?;
        command.stdin(Stdio::null()).stdout(log).stderr(log_too);
        self.child = Some(spawn_tied_to_process(command).map_err(|e| not_started(&program, e))?);
        Ok(())
    }

    /// `Err` with the end of its log when the server process has exited (it will never serve).
    pub fn check_running(&mut self) -> Result<(), String> {
        let Some(child) = &mut self.child else { return Err(format!("{} was not started", self.name)) };
        match child.try_wait() {
            Ok(None) => Ok(()),
            Ok(Some(status)) => Err(format!("{} exited ({status}): {}", self.name, self.log_tail())),
            Err(e) => Err(format!("{}: {e}", self.name)),
        }
    }

    /// The last lines of the log, on one line, for a "skipped" reason.
    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(self.log()).unwrap_or_default();
        let lines: Vec<&str> = text.lines().filter(|line| !line.trim().is_empty()).collect();
        lines[lines.len().saturating_sub(2)..].join(" / ")
    }
}

impl Drop for Spawned {
    fn drop(&mut self) {
        // SIGKILL: the data is thrown away, so there is nothing for a clean shutdown to save.
        if let Some(child) = &mut self.child {
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A loopback port that was free a moment ago (the server binds it right after).
pub fn free_port() -> Result<u16, String> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).map_err(|e| format!("find a free port: {e}"))?;
    listener.local_addr().map(|address| address.port()).map_err(|e| e.to_string())
}

/// Finds `program` on `PATH`, or in the sbin directories a non-root `PATH` lacks.
pub fn find_program(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/usr/bin", "/sbin", "/usr/local/sbin", "/usr/local/bin"].map(PathBuf::from))
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
}

/// Removes the directories of benchmarks that were killed before they could (MariaDB's holds
/// tens of MB): those whose pid no longer runs.
fn remove_abandoned(prefix: &str) {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|name| name.strip_prefix(prefix)) else { continue };
        if pid.parse::<u32>().is_ok() && !Path::new("/proc").join(pid).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

fn not_started(program: &str, error: std::io::Error) -> String {
    format!("start {program}: {error}")
}
