//! One ZooKeeper server process: its directory, configuration, launch, readiness and signals.

use std::fs;
use std::io::Read;
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::blocking::off_runtime;
use crate::spawn::spawn_tied_to_process;
use crate::{HarnessError, ServerOptions};

/// How often a wait asks the server again.
pub(crate) const POLL: Duration = Duration::from_millis(50);

/// A server's process and where it lives; the process is killed when this is dropped.
///
/// The child is behind a mutex, held only for a signal or a look at its status (never across an
/// await), so that a server shared by many tests can be restarted through `&self`.
#[derive(Debug)]
pub(crate) struct ServerProcess {
    child: Mutex<Option<Child>>,
    dir: PathBuf,
    classpath: String,
    heap: String,
    container_check_interval: Duration,
    pub(crate) client_address: SocketAddr,
}

impl ServerProcess {
    /// Writes `zoo.cfg` (with `extra_config` appended) and `log4j.properties` into `dir`.
    pub(crate) fn configure(
        dir: &Path,
        client_port: u16,
        options: &ServerOptions,
        extra_config: &str,
    ) -> Result<(), HarnessError> {
        let data = dir.join("data");
        fs::create_dir_all(&data).map_err(HarnessError::io("create the data directory"))?;
        let config = format!(
            "tickTime={tick}\n\
             dataDir={data}\n\
             clientPort={client_port}\n\
             clientPortAddress=127.0.0.1\n\
             maxSessionTimeout={max_session}\n\
             maxClientCnxns=0\n\
             forceSync={force_sync}\n\
             admin.enableServer=false\n\
             4lw.commands.whitelist=*\n\
             {extra_config}",
            tick = options.tick_time.as_millis(),
            data = data.display(),
            max_session = options.max_session_timeout.as_millis(),
            force_sync = if options.force_sync { "yes" } else { "no" },
        );
        fs::write(dir.join("zoo.cfg"), config).map_err(HarnessError::io("write zoo.cfg"))?;
        let logging = "log4j.rootLogger=INFO, CONSOLE\n\
                       log4j.appender.CONSOLE=org.apache.log4j.ConsoleAppender\n\
                       log4j.appender.CONSOLE.layout=org.apache.log4j.PatternLayout\n\
                       log4j.appender.CONSOLE.layout.ConversionPattern=%d{ISO8601} %-5p [%t] %c{1} - %m%n\n";
        fs::write(dir.join("log4j.properties"), logging).map_err(HarnessError::io("write log4j.properties"))
    }

    /// Starts the server configured in `dir` (without waiting for it).
    pub(crate) fn launch(
        dir: &Path,
        client_address: SocketAddr,
        options: &ServerOptions,
    ) -> Result<Self, HarnessError> {
        let process = ServerProcess {
            child: Mutex::new(None),
            dir: dir.to_path_buf(),
            classpath: match options.tls {
                true => format!("{}:{}", crate::classpath::discover_classpath()?, crate::tls::netty_classpath()),
                false => crate::classpath::discover_classpath()?,
            },
            heap: options.heap.clone(),
            container_check_interval: options.container_check_interval,
            client_address,
        };
        process.start()?;
        Ok(process)
    }

    /// Starts the process again (after [`Self::kill`] or [`Self::stop`]), with its data kept.
    pub(crate) fn start(&self) -> Result<(), HarnessError> {
        let mut child = self.child();
        if child.as_mut().is_some_and(|child| matches!(child.try_wait(), Ok(None))) {
            return Ok(());
        }
        let log = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("zookeeper.log"))
            .map_err(HarnessError::io("open the server's log file"))?;
        let log_err = log.try_clone().map_err(HarnessError::io("open the server's log file"))?;
        let mut command = Command::new(java());
        command
            .arg(format!("-Xmx{}", self.heap))
            .arg("-XX:+UseSerialGC")
            .arg("-Dzookeeper.admin.enableServer=false")
            .arg("-Dzookeeper.4lw.commands.whitelist=*")
            .arg(format!("-Dznode.container.checkIntervalMs={}", self.container_check_interval.as_millis()))
            // Every empty container at once: the server's own pace (10,000 a minute, 6 ms each)
            // queues a test's lock path behind the thousand another test left on a shared server.
            .arg("-Dznode.container.maxPerMinute=60000000")
            .arg("-Dzookeeper.root.logger=INFO,CONSOLE")
            .arg("-Dlog4j.configuration=file:log4j.properties")
            .arg("-cp")
            .arg(format!("{}:{}", self.dir.display(), self.classpath))
            .arg("org.apache.zookeeper.server.quorum.QuorumPeerMain")
            .arg("zoo.cfg")
            .current_dir(&self.dir)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log_err);
        *child = Some(spawn_tied_to_process(command).map_err(HarnessError::JavaNotStarted)?);
        Ok(())
    }

    fn child(&self) -> MutexGuard<'_, Option<Child>> {
        self.child.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Waits until `ready`, a blocking probe of the server, holds; the probe runs off the
    /// runtime's threads, every [`POLL`].
    ///
    /// # Errors
    /// [`HarnessError::ExitedEarly`] once the process has exited, [`HarnessError::NotReady`] after
    /// `timeout`; both with the server's last log lines.
    pub(crate) async fn wait_until(
        &self,
        timeout: Duration,
        ready: impl Fn() -> bool + Clone + Send + 'static,
    ) -> Result<(), HarnessError> {
        let started = Instant::now();
        loop {
            let exited = self.child().as_mut().and_then(|child| child.try_wait().ok().flatten());
            if let Some(status) = exited {
                return Err(HarnessError::ExitedEarly { status, log: self.log_tail(30) });
            }
            if off_runtime(ready.clone()).await {
                return Ok(());
            }
            if started.elapsed() > timeout {
                return Err(HarnessError::NotReady { waited: timeout, log: self.log_tail(30) });
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// The process id, while it runs.
    pub(crate) fn pid(&self) -> Option<u32> {
        self.child().as_ref().map(Child::id)
    }

    /// Sends `signal` to the process, if it runs.
    pub(crate) fn signal(&self, signal: libc::c_int) {
        if let Some(child) = self.child().as_ref() {
            // SAFETY: kill(2) on our own child's pid.
            unsafe {
                libc::kill(child.id() as libc::pid_t, signal);
            }
        }
    }

    /// SIGSTOP, and waits (up to 5 s) until the kernel reports every thread stopped, so that a
    /// caller's next request cannot be answered by a thread that had not stopped yet.
    pub(crate) fn freeze(&self) {
        self.signal(libc::SIGSTOP);
        self.wait_for_state(|state| state == 'T');
    }

    /// SIGCONT, and waits (up to 5 s) until the process runs again.
    pub(crate) fn thaw(&self) {
        self.signal(libc::SIGCONT);
        self.wait_for_state(|state| state != 'T');
    }

    /// Polls the state letter of every thread in /proc until `wanted` holds for all of them.
    fn wait_for_state(&self, wanted: impl Fn(char) -> bool) {
        let Some(pid) = self.pid() else { return };
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(5) {
            let states = thread_states(pid);
            if !states.is_empty() && states.into_iter().all(&wanted) {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// SIGKILL, and reap.
    pub(crate) fn kill(&self) {
        let taken = self.child().take();
        if let Some(mut child) = taken {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// SIGTERM (a clean shutdown), and reap; SIGKILL after 10 s.
    pub(crate) fn stop(&self) {
        self.signal(libc::SIGCONT);
        self.signal(libc::SIGTERM);
        let taken = self.child().take();
        if let Some(mut child) = taken {
            let started = Instant::now();
            while matches!(child.try_wait(), Ok(None)) && started.elapsed() < Duration::from_secs(10) {
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    pub(crate) fn log_tail(&self, lines: usize) -> String {
        let mut text = String::new();
        if let Ok(mut file) = fs::File::open(self.dir.join("zookeeper.log")) {
            let _ = file.read_to_string(&mut text);
        }
        let all: Vec<&str> = text.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The state letters (R, S, T, ...) of every thread of `pid`, from /proc.
fn thread_states(pid: u32) -> Vec<char> {
    let Ok(tasks) = fs::read_dir(format!("/proc/{pid}/task")) else { return Vec::new() };
    tasks
        .flatten()
        .filter_map(|task| fs::read_to_string(task.path().join("stat")).ok())
        // The state follows the command name, which is in parentheses and may contain spaces.
        .filter_map(|stat| stat.rsplit_once(") ").and_then(|(_, rest)| rest.chars().next()))
        .collect()
}

/// Loopback ports that were free a moment ago, all distinct.
pub(crate) fn free_loopback_ports(count: usize) -> Result<Vec<u16>, HarnessError> {
    // Hold every listener until all are chosen, so that none is handed out twice.
    let listeners = (0..count)
        .map(|_| TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).map_err(HarnessError::io("find a free loopback port")))
        .collect::<Result<Vec<_>, _>>()?;
    listeners
        .iter()
        .map(|l| l.local_addr().map(|a| a.port()).map_err(HarnessError::io("find a free loopback port")))
        .collect()
}

fn java() -> PathBuf {
    match std::env::var_os("JAVA_HOME").filter(|home| !home.is_empty()) {
        Some(home) => PathBuf::from(home).join("bin/java"),
        None => PathBuf::from("java"),
    }
}
