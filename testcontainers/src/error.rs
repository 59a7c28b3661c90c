use std::io;
use std::time::Duration;

/// Why a test server could not be started or queried.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HarnessError {
    /// No ZooKeeper jars were found; the message says how to install them.
    #[error("zookeeper jars not found: {0}")]
    JarsNotFound(String),
    /// `java` could not be started.
    #[error("cannot start java (install a JDK or JRE, e.g. `apt-get install -y default-jre-headless`): {0}")]
    JavaNotStarted(#[source] io::Error),
    /// The server process exited before it answered.
    #[error("zookeeper exited during start-up with {status}; last log lines:\n{log}")]
    ExitedEarly {
        /// How the process ended.
        status: std::process::ExitStatus,
        /// The tail of the server's log.
        log: String,
    },
    /// The server did not answer `ruok` in time.
    #[error("zookeeper did not answer within {waited:?}; last log lines:\n{log}")]
    NotReady {
        /// How long the harness waited.
        waited: Duration,
        /// The tail of the server's log.
        log: String,
    },
    /// A file or socket operation failed.
    #[error("{context}: {source}")]
    Io {
        /// What the harness was doing.
        context: String,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// The test certificates of a TLS server could not be made (`keytool`'s message).
    #[error("cannot make the test server's certificates: {0}")]
    Tls(String),
    /// A ZooKeeper client operation of the harness failed.
    #[error("{context}: {source}")]
    Client {
        /// What the harness was doing.
        context: String,
        /// The underlying error.
        #[source]
        source: zookeeper_client::Error,
    },
}

impl HarnessError {
    pub(crate) fn io(context: impl Into<String>) -> impl FnOnce(io::Error) -> Self {
        let context = context.into();
        move |source| HarnessError::Io { context, source }
    }
}
