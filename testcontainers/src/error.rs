use std::io;
use std::time::Duration;

/// Why a test server could not be started or queried.
///
/// `Display` says what happened; the error behind it, if any, is the
/// [`source`](std::error::Error::source), so that a chain (`{:#}` of anyhow, eyre's reports)
/// prints each cause once.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HarnessError {
    /// No ZooKeeper jars were found; the message says how to install them.
    #[error("zookeeper jars not found: {0}")]
    JarsNotFound(String),
    /// `java` could not be started.
    #[error("cannot start java (install a JDK or JRE, e.g. `apt-get install -y default-jre-headless`)")]
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
    #[error("cannot {context}")]
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
    #[error("cannot {context}")]
    Client {
        /// What the harness was doing.
        context: String,
        /// The underlying error.
        #[source]
        source: zookeeper_client::Error,
    },
    /// [`expire_session`](crate::expire_session)'s client did not see its session expire.
    #[error("the client did not see its session expire within {waited:?}")]
    NotExpired {
        /// How long the harness waited.
        waited: Duration,
    },
}

impl HarnessError {
    pub(crate) fn io(context: impl Into<String>) -> impl FnOnce(io::Error) -> Self {
        let context = context.into();
        move |source| HarnessError::Io { context, source }
    }
}

/// `error` and each of its causes, `: `-separated, as error reporters print a chain: for the
/// harness's own panic messages, where `Display` alone would leave the causes out.
pub(crate) fn with_causes(error: &dyn std::error::Error) -> String {
    let chain = std::iter::successors(Some(error), |error| error.source());
    chain.map(ToString::to_string).collect::<Vec<_>>().join(": ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chain_prints_each_cause_once() {
        #[derive(Debug, thiserror::Error)]
        #[error("setting up the test")]
        struct Setup(#[source] HarnessError);

        let io = Setup(HarnessError::io("write zoo.cfg")(io::Error::other("disk full")));
        assert_eq!(with_causes(&io), "setting up the test: cannot write zoo.cfg: disk full");
        let not_found = io::Error::from(io::ErrorKind::NotFound);
        let java = Setup(HarnessError::JavaNotStarted(io::Error::from(io::ErrorKind::NotFound)));
        assert_eq!(
            with_causes(&java),
            format!(
                "setting up the test: cannot start java (install a JDK or JRE, e.g. \
                 `apt-get install -y default-jre-headless`): {not_found}"
            )
        );
        let client = Setup(HarnessError::Client {
            context: "join the session to expire".into(),
            source: zookeeper_client::Error::SessionExpired,
        });
        assert_eq!(
            with_causes(&client),
            format!("setting up the test: cannot join the session to expire: {}", zookeeper_client::Error::SessionExpired)
        );
    }

    #[test]
    fn error_is_send_sync_static() {
        fn bounds<T: std::error::Error + Send + Sync + 'static>() {}
        bounds::<HarnessError>();
    }
}
