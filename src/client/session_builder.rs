//! `SessionBuilder`: how a `Session` is set up before it connects.
//!
//! Its [`RetryPolicy`], then one of the ways to connect its first client (and every later one);
//! `Session`'s own constructors take the defaults.

use std::future::Future;
use std::sync::Arc;

use zookeeper_client::{Client, Connector};

use super::retry::RetryPolicy;
use super::session::{Connect, Session};
use crate::error::{Error, Result};

/// The ways to connect a [`Session`] with the default [`RetryPolicy`], and the builder for
/// another.
impl Session {
    /// A builder, to set a [`RetryPolicy`] before connecting.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use zklock::Session;
    /// use zklock::session::RetryPolicy;
    ///
    /// // An acquire whose requests keep failing gives up after 10 retries instead of riding on.
    /// let session = Session::builder()
    ///     .retry_policy(RetryPolicy::new().with_max_retries(10))
    ///     .connect_to("127.0.0.1:2181")
    ///     .await?;
    /// let mutex = zklock::InterProcessMutex::new(&session, "/app/locks/nightly")?;
    /// # let _ = mutex;
    /// # Ok(())
    /// # }
    /// ```
    pub fn builder() -> SessionBuilder {
        SessionBuilder::default()
    }

    /// Connects a first session with `connect` (code of the caller's: a connect string read
    /// anew, a connector chosen per try), and connects every later session the same way, with
    /// the default [`RetryPolicy`]; see [`SessionBuilder::connect`].
    ///
    /// # Errors
    /// [`Error::ZooKeeper`] (operation `connect`) when the first connect fails: nothing is
    /// retried before the caller has a session.
    pub async fn connect<F, Fut>(connect: F) -> Result<Session>
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = std::result::Result<Client, zookeeper_client::Error>> + Send + 'static,
    {
        Session::builder().connect(connect).await
    }

    /// Connects a first session to `connect_string` (`"host:2181,host2:2181/chroot"`, the
    /// client's defaults: a 6 s session timeout, no auth), and every later session the same
    /// way, with the default [`RetryPolicy`]. [`connect_with`](Self::connect_with) takes a
    /// connector with options of its own; [`connect`](Self::connect) any connecting code.
    ///
    /// # Errors
    /// [`Error::ZooKeeper`] (operation `connect`, its path the connect string) when the first
    /// connect fails.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let session = zklock::Session::connect_to("127.0.0.1:2181").await?;
    /// let mutex = zklock::InterProcessMutex::new(&session, "/app/locks/nightly")?;
    /// # let _ = mutex;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn connect_to(connect_string: &str) -> Result<Session> {
        Session::builder().connect_to(connect_string).await
    }

    /// Connects a first session with `connector` (its session timeout, auth, TLS) to
    /// `connect_string`, and every later session with a clone of it, with the default
    /// [`RetryPolicy`]; see [`SessionBuilder::connect_with`].
    ///
    /// # Errors
    /// [`Error::ZooKeeper`] (operation `connect`, its path the connect string) when the first
    /// connect fails.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use std::time::Duration;
    ///
    /// let connector = zklock::Client::connector().with_session_timeout(Duration::from_secs(10));
    /// let session = zklock::Session::connect_with(connector, "127.0.0.1:2181").await?;
    /// # let _ = session;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn connect_with(connector: Connector, connect_string: &str) -> Result<Session> {
        Session::builder().connect_with(connector, connect_string).await
    }

    /// A session that starts from `client` and connects every later session with `connect`,
    /// with the default [`RetryPolicy`]; see [`SessionBuilder::from_client`]. Sends nothing.
    ///
    /// # Errors
    /// [`Error::InvalidOptions`] when called outside a tokio runtime (the session is followed by
    /// a task of its own).
    pub fn from_client<F, Fut>(client: Client, connect: F) -> Result<Session>
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = std::result::Result<Client, zookeeper_client::Error>> + Send + 'static,
    {
        Session::builder().from_client(client, connect)
    }
}

/// Sets up a [`Session`]: [`Session::builder`]. What is not set takes its default.
///
/// # Examples
///
/// ```no_run
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use std::time::Duration;
/// use zklock::Session;
/// use zklock::session::{Backoff, RetryPolicy};
///
/// let policy = RetryPolicy::new()
///     .with_backoff(Backoff::exponential(Duration::from_millis(20), Duration::from_secs(2)))
///     .with_max_elapsed(Duration::from_secs(30));
/// let session = Session::builder().retry_policy(policy).connect_to("127.0.0.1:2181").await?;
/// assert_eq!(session.retry_policy(), policy);
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug, Default)]
#[must_use = "a builder does nothing until it connects"]
pub struct SessionBuilder {
    retry: RetryPolicy,
}

impl SessionBuilder {
    /// How every request of every recipe built on the session is retried, and how new sessions
    /// are connected after an expiry. Defaults to [`RetryPolicy::default`]. Checked when the
    /// session is made.
    pub fn retry_policy(mut self, policy: RetryPolicy) -> Self {
        self.retry = policy;
        self
    }

    /// Connects a first session with `connect` (code of the caller's: a connect string read
    /// anew, a connector chosen per try), and connects every later session the same way.
    ///
    /// # Errors
    /// [`Error::InvalidOptions`] for a retry policy that does not hold together (checked before
    /// anything is sent); [`Error::ZooKeeper`] (operation `connect`) when the first connect
    /// fails: nothing is retried before the caller has a session.
    pub async fn connect<F, Fut>(self, connect: F) -> Result<Session>
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = std::result::Result<Client, zookeeper_client::Error>> + Send + 'static,
    {
        self.connect_first(Connect::new(connect), "").await
    }

    /// Connects a first session to `connect_string` (`"host:2181,host2:2181/chroot"`, the
    /// client's defaults: a 6 s session timeout, no auth), and every later session the same
    /// way.
    ///
    /// # Errors
    /// As [`connect`](Self::connect); a failed connect's path is the connect string.
    pub async fn connect_to(self, connect_string: &str) -> Result<Session> {
        self.connect_with(Client::connector(), connect_string).await
    }

    /// Connects a first session with `connector` (its session timeout, auth, TLS) to
    /// `connect_string`, and every later session with a clone of it. A connector told to resume
    /// a session ([`with_session`](zookeeper_client::Connector::with_session)) would try the
    /// expired one again after each expiry: leave that to [`from_client`](Self::from_client).
    ///
    /// # Errors
    /// As [`connect`](Self::connect); a failed connect's path is the connect string.
    pub async fn connect_with(self, connector: Connector, connect_string: &str) -> Result<Session> {
        let address: Arc<str> = connect_string.into();
        let connect = Connect::new(move || {
            let (connector, address) = (connector.clone(), Arc::clone(&address));
            async move { connector.connect(&address).await }
        });
        self.connect_first(connect, connect_string).await
    }

    /// A session that starts from `client` and connects every later session with `connect` (a
    /// program that connected its client its own way, and wants its recipes to outlive the
    /// session, or to follow a retry policy of its own). Sends nothing. It starts where
    /// `client` stands: a client whose session has already expired is
    /// [`Lost`](crate::session::ConnectionState::Lost) from the start, and the next session is
    /// connected at once.
    ///
    /// # Errors
    /// [`Error::InvalidOptions`] for a retry policy that does not hold together, or when called
    /// outside a tokio runtime (the session is followed by a task of its own).
    pub fn from_client<F, Fut>(self, client: Client, connect: F) -> Result<Session>
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = std::result::Result<Client, zookeeper_client::Error>> + Send + 'static,
    {
        self.retry.validate()?;
        Session::start(client, Connect::new(connect), self.retry)
    }

    /// Connects the first session with `connect`; a failure names `address` (empty when a
    /// caller's closure hides it).
    async fn connect_first(self, connect: Connect, address: &str) -> Result<Session> {
        self.retry.validate()?;
        let client = connect.connect().await.map_err(Error::on("connect", address))?;
        Session::start(client, connect, self.retry)
    }
}
