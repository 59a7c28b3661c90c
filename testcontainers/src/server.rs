use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tempfile::TempDir;

use crate::blocking::{block_on, off_runtime};
use crate::error::with_causes;
use crate::four_letter::{answers, session_requests, watchers};
use crate::process::{free_loopback_ports, ServerProcess};
use crate::tls::{make_certificates, TlsFiles};
use crate::{four_letter_word, HarnessError};

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
    /// Whether the server syncs its transaction log to disk before it acknowledges a write
    /// (`forceSync`). Defaults to `false`, so that tests do not wait for the disk; ZooKeeper's
    /// own default is `true`.
    pub force_sync: bool,
    /// Whether the server also listens on a TLS port (a throwaway CA and server certificate,
    /// made with the JDK's `keytool`); see [`ZooKeeperServer::secure_connect_string`] and
    /// [`ZooKeeperServer::tls_ca_pem`]. Defaults to `false`. Needs Debian's Netty jars
    /// (`libnetty-java`, which its `zookeeper` package depends on).
    pub tls: bool,
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            tick_time: Duration::from_millis(200),
            max_session_timeout: Duration::from_secs(60),
            start_timeout: Duration::from_secs(60),
            heap: "256m".into(),
            container_check_interval: Duration::from_secs(1),
            force_sync: false,
            tls: false,
        }
    }
}

/// A standalone ZooKeeper server on a free loopback port, killed when dropped.
///
/// Every four-letter word is enabled (`wchp`, `cons`, `mntr`, ...), the admin HTTP server is off,
/// and data is written without fsync unless [`ServerOptions::force_sync`] says otherwise. The
/// server's log is `zookeeper.log` in [`Self::dir`]. It can be restarted in place
/// ([`Self::restart`]), on its port and with its data.
#[derive(Debug)]
pub struct ZooKeeperServer {
    // Declared before `dir`: the process dies before its directory is removed. Shared only with
    // a restart under way on a blocking thread.
    process: Arc<ServerProcess>,
    start_timeout: Duration,
    /// The TLS port and its files, when started with [`ServerOptions::tls`].
    secure: Option<(SocketAddr, TlsFiles)>,
    dir: TempDir,
}

impl ZooKeeperServer {
    /// Starts a server with [`ServerOptions::default`]; see [`Self::start_with`].
    ///
    /// # Errors
    /// As [`Self::start_with`].
    ///
    /// # Cancel safety
    /// As [`Self::start_with`].
    pub async fn start() -> Result<Self, HarnessError> {
        Self::start_with(&ServerOptions::default()).await
    }

    /// Starts a server and waits until it answers `ruok` (and, with [`ServerOptions::tls`],
    /// until its TLS port accepts connections), for at most [`ServerOptions::start_timeout`].
    ///
    /// It does not block the caller's runtime: the process is started, and the server asked
    /// whether it is up, on tokio's blocking threads, so a current-thread test runtime goes on
    /// with its other tasks meanwhile. From sync code (a `static`), use
    /// [`Self::start_blocking`].
    ///
    /// # Errors
    /// - [`HarnessError::JarsNotFound`] when ZooKeeper is not installed;
    /// - [`HarnessError::JavaNotStarted`] when `java` is missing;
    /// - [`HarnessError::ExitedEarly`] or [`HarnessError::NotReady`], with the server's last log
    ///   lines, when it does not come up;
    /// - [`HarnessError::Tls`] when the certificates of [`ServerOptions::tls`] cannot be made;
    /// - [`HarnessError::Io`] when the temporary directory cannot be written.
    ///
    /// # Panics
    /// Outside a tokio runtime.
    ///
    /// # Cancel safety
    /// Dropped before it returns, it leaves no server: the process is killed and its directory
    /// removed (a step already running on a blocking thread finishes first, then cleans up).
    pub async fn start_with(options: &ServerOptions) -> Result<Self, HarnessError> {
        let launch = options.clone();
        let server = off_runtime(move || Self::launch(&launch)).await?;
        server.wait_until_ready().await?;
        Ok(server)
    }

    /// Waits until the server answers `ruok` and its TLS port, if any, accepts connections, for
    /// at most [`ServerOptions::start_timeout`].
    async fn wait_until_ready(&self) -> Result<(), HarnessError> {
        let address = self.address();
        let secure = self.secure.as_ref().map(|(address, _)| *address);
        // The TLS port is bound by its own Netty channel, which may open after the plain port
        // answers `ruok`: a client let in between met "connection refused".
        let ready = move || {
            answers(address, "ruok", &["imok"])
                && secure.is_none_or(|secure| TcpStream::connect_timeout(&secure, Duration::from_secs(1)).is_ok())
        };
        self.process.wait_until(self.start_timeout, ready).await
    }

    /// Stops the server (SIGTERM, a clean shutdown), starts it again at once on the same port
    /// with the same data directory, and waits until it answers, as [`Self::start_with`] does.
    ///
    /// What was written stays: nodes, and the sessions that were open. Those sessions are given
    /// their whole timeout again from the moment the server is back, so a client that
    /// reconnects within its session timeout keeps its session, its ephemeral nodes and (once
    /// its client sets them again) its watches; meanwhile every client is disconnected. A
    /// session that does not come back in time expires. The restart takes about as long as a
    /// start: a second or two for the JVM.
    ///
    /// Callable through a shared reference, so that a server in a `static` ([`shared_server`])
    /// can be restarted too; every test that shares it is then disconnected.
    ///
    /// # Errors
    /// As [`Self::start_with`]: [`HarnessError::JavaNotStarted`], [`HarnessError::Io`], and
    /// [`HarnessError::ExitedEarly`] or [`HarnessError::NotReady`] when it does not come back.
    ///
    /// # Panics
    /// Outside a tokio runtime.
    ///
    /// # Cancel safety
    /// Dropped before it returns, the stop and the start (run on a blocking thread) still finish;
    /// the server is then running, not waited for.
    pub async fn restart(&self) -> Result<(), HarnessError> {
        let process = Arc::clone(&self.process);
        off_runtime(move || {
            process.stop();
            process.start()
        })
        .await?;
        self.wait_until_ready().await
    }

    /// Starts a server from sync code, blocking the calling thread until it answers: for a
    /// server in a `static` (see [`shared_server`]) or a test without a runtime. Callable on any
    /// thread, a runtime's too (it runs [`Self::start_with`] on a runtime and thread of its
    /// own), but async code should await [`Self::start_with`] instead, which leaves the
    /// runtime's thread free.
    ///
    /// # Errors
    /// As [`Self::start_with`], and [`HarnessError::Io`] when its runtime cannot be made.
    pub fn start_blocking(options: &ServerOptions) -> Result<Self, HarnessError> {
        block_on(Self::start_with(options))
    }

    /// Writes the server's directory, configuration and certificates, and starts its process
    /// (without waiting for it).
    fn launch(options: &ServerOptions) -> Result<Self, HarnessError> {
        let dir = temp_dir("zklock-zookeeper-")?;
        let ports = free_loopback_ports(1 + usize::from(options.tls))?;
        let secure = match options.tls {
            true => Some((SocketAddr::from((Ipv4Addr::LOCALHOST, ports[1])), make_certificates(dir.path())?)),
            false => None,
        };
        let extra_config = secure.as_ref().map(|(address, files)| files.config(address.port())).unwrap_or_default();
        ServerProcess::configure(dir.path(), ports[0], options, &extra_config)?;
        let address = SocketAddr::from((Ipv4Addr::LOCALHOST, ports[0]));
        let process = Arc::new(ServerProcess::launch(dir.path(), address, options)?);
        Ok(ZooKeeperServer { process, start_timeout: options.start_timeout, secure, dir })
    }

    /// `host:port` for [`zookeeper_client::Client::connect`].
    pub fn connect_string(&self) -> String {
        self.process.client_address.to_string()
    }

    /// `host:port` of the TLS port, for a client with TLS options trusting [`Self::tls_ca_pem`];
    /// `None` unless started with [`ServerOptions::tls`].
    pub fn secure_connect_string(&self) -> Option<String> {
        self.secure.as_ref().map(|(address, _)| address.to_string())
    }

    /// The PEM certificate of the CA that signed the TLS port's certificate.
    pub fn tls_ca_pem(&self) -> Option<&Path> {
        self.secure.as_ref().map(|(_, files)| files.ca_pem.as_path())
    }

    /// The server's client address on loopback.
    pub fn address(&self) -> SocketAddr {
        self.process.client_address
    }

    /// The server's process id: to send it a signal, or read what it uses from `/proc`. `None`
    /// once its process has been reaped.
    pub fn pid(&self) -> Option<u32> {
        self.process.pid()
    }

    /// The server's own directory: `zoo.cfg`, `data/` and `zookeeper.log`.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Requests this server has received from session `session_id`, from its `cons` answer
    /// (`recved=`): to count what a client sends, as the server sees it. `None` when the server
    /// cannot be asked or does not list the session.
    ///
    /// Pings count too: measure over spans shorter than a third of the session timeout.
    pub fn session_requests(&self, session_id: i64) -> Option<u64> {
        session_requests(self.address(), session_id)
    }

    /// Who watches what on this server, from its `wchp` answer: each watched path with the
    /// sessions (hexadecimal ids, as the server prints them) that watch it. Empty when the server
    /// cannot be asked.
    pub fn watchers(&self) -> std::collections::BTreeMap<String, Vec<String>> {
        watchers(self.address())
    }

    /// Sends a four-letter word to this server; see [`four_letter_word`].
    ///
    /// # Errors
    /// As [`four_letter_word`].
    pub fn four_letter_word(&self, word: &str) -> Result<String, HarnessError> {
        four_letter_word(self.address(), word)
    }

    /// The last `lines` lines of the server's log, for failure messages.
    pub fn log_tail(&self, lines: usize) -> String {
        self.process.log_tail(lines)
    }
}

/// One server for the whole test binary, started on first use with [`ServerOptions::default`].
///
/// It is never dropped; the parent-death signal kills it when the test process exits. Tests that
/// share it must use distinct paths. The first call blocks its thread until the server answers
/// ([`ZooKeeperServer::start_blocking`]), once per test binary; later calls return at once.
///
/// # Panics
/// When the server cannot be started: a test cannot go on without it, and the message says why
/// (for example, which package to install).
pub fn shared_server() -> &'static ZooKeeperServer {
    static SERVER: OnceLock<ZooKeeperServer> = OnceLock::new();
    SERVER.get_or_init(|| {
        ZooKeeperServer::start_blocking(&ServerOptions::default())
            .unwrap_or_else(|err| panic!("cannot start ZooKeeper: {}", with_causes(&err)))
    })
}

pub(crate) fn temp_dir(prefix: &str) -> Result<TempDir, HarnessError> {
    tempfile::Builder::new().prefix(prefix).tempdir().map_err(HarnessError::io("create a temporary directory"))
}
