use std::fs;
use std::io::Read;
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use tempfile::TempDir;

use crate::spawn::spawn_tied_to_process;
use crate::{discover_classpath, four_letter_word, HarnessError};

/// How a test server is configured. Start from [`ServerOptions::default`].
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ServerOptions {
    /// ZooKeeper's `tickTime`; sessions may last from 2 to `max_session_timeout`.
    /// Defaults to 200 ms, so that short test sessions are allowed.
    pub tick_time: Duration,
    /// The longest session the server grants. Defaults to 60 s.
    pub max_session_timeout: Duration,
    /// How long [`ZooKeeperServer::start_with`] waits for the server to answer. Defaults to 60 s.
    pub start_timeout: Duration,
    /// Maximum Java heap. Defaults to `256m`.
    pub heap: String,
    /// How often the server deletes empty container nodes (`znode.container.checkIntervalMs`).
    /// Defaults to 1 s, so tests can watch containers go; ZooKeeper's own default is 60 s.
    pub container_check_interval: Duration,
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            tick_time: Duration::from_millis(200),
            max_session_timeout: Duration::from_secs(60),
            start_timeout: Duration::from_secs(60),
            heap: "256m".into(),
            container_check_interval: Duration::from_secs(1),
        }
    }
}

/// A standalone ZooKeeper server on a free loopback port, killed when dropped.
///
/// Every four-letter word is enabled (`wchp`, `cons`, `mntr`, ...), the admin HTTP server is off,
/// and data is written without fsync. The server's log is `zookeeper.log` in [`Self::dir`].
#[derive(Debug)]
pub struct ZooKeeperServer {
    child: Child,
    address: SocketAddr,
    dir: TempDir,
}

impl ZooKeeperServer {
    /// Starts a server with [`ServerOptions::default`]; see [`Self::start_with`].
    ///
    /// # Errors
    /// As [`Self::start_with`].
    pub fn start() -> Result<Self, HarnessError> {
        Self::start_with(&ServerOptions::default())
    }

    /// Starts a server and waits until it answers `ruok`.
    ///
    /// # Errors
    /// - [`HarnessError::JarsNotFound`] when ZooKeeper is not installed;
    /// - [`HarnessError::JavaNotStarted`] when `java` is missing;
    /// - [`HarnessError::ExitedEarly`] or [`HarnessError::NotReady`], with the server's last log
    ///   lines, when it does not come up;
    /// - [`HarnessError::Io`] when the temporary directory cannot be written.
    pub fn start_with(options: &ServerOptions) -> Result<Self, HarnessError> {
        let classpath = discover_classpath()?;
        let dir = tempfile::Builder::new()
            .prefix("zklock-zookeeper-")
            .tempdir()
            .map_err(HarnessError::io("create the server's temporary directory"))?;
        let port = free_loopback_port()?;
        let address = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
        write_config(dir.path(), port, options)?;
        let log = fs::File::create(dir.path().join("zookeeper.log"))
            .map_err(HarnessError::io("create the server's log file"))?;
        let log_err = log
            .try_clone()
            .map_err(HarnessError::io("open the server's log file"))?;

        let mut command = Command::new(java());
        command
            .arg(format!("-Xmx{}", options.heap))
            .arg("-XX:+UseSerialGC")
            .arg("-Dzookeeper.admin.enableServer=false")
            .arg("-Dzookeeper.4lw.commands.whitelist=*")
            .arg(format!(
                "-Dznode.container.checkIntervalMs={}",
                options.container_check_interval.as_millis()
            ))
            .arg("-Dzookeeper.root.logger=INFO,CONSOLE")
            .arg("-Dlog4j.configuration=file:log4j.properties")
            .arg("-cp")
            .arg(format!("{}:{classpath}", dir.path().display()))
            .arg("org.apache.zookeeper.server.quorum.QuorumPeerMain")
            .arg("zoo.cfg")
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log_err);
        let child = spawn_tied_to_process(command).map_err(HarnessError::JavaNotStarted)?;
        let mut server = ZooKeeperServer {
            child,
            address,
            dir,
        };
        server.wait_until_ready(options.start_timeout)?;
        Ok(server)
    }

    /// `host:port` for [`zookeeper_client::Client::connect`].
    pub fn connect_string(&self) -> String {
        self.address.to_string()
    }

    /// The server's client address on loopback.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// The server's own directory: `zoo.cfg`, `data/` and `zookeeper.log`.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Sends a four-letter word to this server; see [`four_letter_word`].
    ///
    /// # Errors
    /// As [`four_letter_word`].
    pub fn four_letter_word(&self, word: &str) -> Result<String, HarnessError> {
        four_letter_word(self.address, word)
    }

    /// The last `lines` lines of the server's log, for failure messages.
    pub fn log_tail(&self, lines: usize) -> String {
        log_tail(&self.dir.path().join("zookeeper.log"), lines)
    }

    fn wait_until_ready(&mut self, timeout: Duration) -> Result<(), HarnessError> {
        let started = Instant::now();
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(HarnessError::ExitedEarly {
                    status,
                    log: self.log_tail(30),
                });
            }
            if matches!(self.four_letter_word("ruok"), Ok(answer) if answer == "imok") {
                return Ok(());
            }
            if started.elapsed() > timeout {
                return Err(HarnessError::NotReady {
                    waited: timeout,
                    log: self.log_tail(30),
                });
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for ZooKeeperServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One server for the whole test binary, started on first use.
///
/// It is never dropped; the parent-death signal kills it when the test process exits. Tests that
/// share it must use distinct paths.
///
/// # Panics
/// When the server cannot be started: a test cannot go on without it, and the message says why
/// (for example, which package to install).
pub fn shared_server() -> &'static ZooKeeperServer {
    static SERVER: OnceLock<ZooKeeperServer> = OnceLock::new();
    SERVER.get_or_init(|| {
        ZooKeeperServer::start().unwrap_or_else(|err| panic!("cannot start ZooKeeper: {err}"))
    })
}

fn java() -> PathBuf {
    match std::env::var_os("JAVA_HOME").filter(|home| !home.is_empty()) {
        Some(home) => PathBuf::from(home).join("bin/java"),
        None => PathBuf::from("java"),
    }
}

fn free_loopback_port() -> Result<u16, HarnessError> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .map_err(HarnessError::io("find a free loopback port"))?;
    let port = listener
        .local_addr()
        .map_err(HarnessError::io("find a free loopback port"))?
        .port();
    Ok(port)
}

fn write_config(dir: &Path, port: u16, options: &ServerOptions) -> Result<(), HarnessError> {
    let data = dir.join("data");
    fs::create_dir_all(&data).map_err(HarnessError::io("create the data directory"))?;
    let config = format!(
        "tickTime={tick}\n\
         dataDir={data}\n\
         clientPort={port}\n\
         clientPortAddress=127.0.0.1\n\
         maxSessionTimeout={max_session}\n\
         maxClientCnxns=0\n\
         forceSync=no\n\
         admin.enableServer=false\n\
         4lw.commands.whitelist=*\n",
        tick = options.tick_time.as_millis(),
        data = data.display(),
        max_session = options.max_session_timeout.as_millis(),
    );
    fs::write(dir.join("zoo.cfg"), config).map_err(HarnessError::io("write zoo.cfg"))?;
    let logging = "log4j.rootLogger=INFO, CONSOLE\n\
                   log4j.appender.CONSOLE=org.apache.log4j.ConsoleAppender\n\
                   log4j.appender.CONSOLE.layout=org.apache.log4j.PatternLayout\n\
                   log4j.appender.CONSOLE.layout.ConversionPattern=%d{ISO8601} %-5p [%t] %c{1} - %m%n\n";
    fs::write(dir.join("log4j.properties"), logging)
        .map_err(HarnessError::io("write log4j.properties"))
}

fn log_tail(path: &Path, lines: usize) -> String {
    let mut text = String::new();
    if let Ok(mut file) = fs::File::open(path) {
        let _ = file.read_to_string(&mut text);
    }
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}
