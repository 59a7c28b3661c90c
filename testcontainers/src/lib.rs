//! Real, throwaway ZooKeeper servers for tests, in the spirit of Curator's `TestingServer`.
//!
//! **No Docker, no containers**: despite the crate's name, each server is a local `java` process
//! running the ZooKeeper jars installed on the machine. What it needs, on Linux only:
//!
//! - **Java** (a Java runtime): `$JAVA_HOME/bin/java`, else `java` on `PATH`;
//! - **the ZooKeeper server jars**, found in this order, first match wins:
//!   1. `ZOOKEEPER_CLASSPATH`: a Java classpath used as it is;
//!   2. `ZOOKEEPER_HOME`: an unpacked Apache ZooKeeper release (`lib/*.jar` and its own jar);
//!   3. Debian's `zookeeper` package: `/usr/share/java/zookeeper.jar` (and its logging jars).
//!
//! On Debian or Ubuntu, `apt-get install -y default-jre-headless zookeeper` installs both (in
//! zklock's repository, `scripts/install-deps` does it, with what zklock's own tests need
//! beside). Without the jars, starting a server fails with
//! [`HarnessError::JarsNotFound`], whose message says what to set or install.
//!
//! [`ZooKeeperServer::start`] writes a configuration into a temporary directory of its own, picks
//! a free loopback port, starts the server, and returns once the server answers `ruok`.
//! Dropping the server kills the process and removes its directory. The process is also killed
//! when the test process dies in any other way (a panic that aborts, `SIGKILL`, a server kept in
//! a `static`): it is started with Linux's parent-death signal from a thread that lives as long
//! as the process.
//!
//! ```no_run
//! use zklock_testcontainers::ZooKeeperServer;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let server = ZooKeeperServer::start().await?;
//! let client = zklock::Client::connect(&server.connect_string()).await?;
//! assert_eq!(server.four_letter_word("ruok")?, "imok");
//! drop(client);
//! // The server process is killed here.
//! drop(server);
//! # Ok(())
//! # }
//! ```
//!
//! Starting waits for the server without blocking the test's runtime (the process is started
//! and asked whether it is up on tokio's blocking threads). For a whole test binary, share one
//! server through a `static` and give each test its own lock path; see [`shared_server`], or
//! [`ZooKeeperServer::start_blocking`] for a `static` server with options of your own.
//!
//! For fault tests: [`ZooKeeperServer::restart`] stops a server and starts it again with its
//! data; [`Ensemble`] runs 3 or 5 servers whose members can be killed, stopped,
//! paused and restarted with their data; [`Proxy`] stands between a client and the servers and
//! can cut it off, black-hole its traffic, lose the server's replies or have one request
//! refused as `Throttled`; [`expire_session`]
//! expires a client's session at once and deterministically.
#![deny(missing_docs, missing_debug_implementations)]

/// README.md's Rust examples, compiled as doctests so that they cannot rot.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

// Linux only: every child is started with Linux's parent-death signal (`prctl`), and the
// pause and resume helpers read threads' states from `/proc`. Elsewhere the crate says so, once,
// instead of a page of unresolved names.
#[cfg(not(target_os = "linux"))]
compile_error!(
    "zklock-testcontainers runs on Linux only: it ties every server to the test process with \
     Linux's parent-death signal (prctl PR_SET_PDEATHSIG) and reads /proc"
);

pub mod history;

/// Each item, on Linux only.
macro_rules! linux_only {
    ($($item:item)*) => { $( #[cfg(target_os = "linux")] $item )* };
}

linux_only! {
    mod blocking;
    mod classpath;
    mod ensemble;
    mod error;
    mod four_letter;
    mod process;
    mod proxy;
    mod server;
    mod session;
    mod spawn;
    mod tls;
    mod wire;

    pub use ensemble::Ensemble;
    pub use error::HarnessError;
    pub use four_letter::four_letter_word;
    pub use proxy::{Proxy, ThrottledOperation};
    pub use server::{shared_server, ServerOptions, ZooKeeperServer};
    pub use session::expire_session;

    /// Not for users: what zklock's own tests and benchmarks share with the harness's
    /// internals. Not part of the public API and not covered by semver: it may change or go in
    /// any release.
    #[doc(hidden)]
    pub mod __private {
        pub use crate::spawn::spawn_tied_to_process;
    }
}
