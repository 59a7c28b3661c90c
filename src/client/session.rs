//! `Session`, a ZooKeeper session that outlives its expiry, its builder, and `Connection`.
//!
//! As Curator's framework gives Java users: a [`Session`] hands out the current client and connects
//! a new one when the server expires the old session (a zookeeper-client `Client` cannot renew its
//! session), and tells its state. Every recipe can be built on one (through [`Connection`]), and
//! then keeps working after an expiry. A [`SessionBuilder`] sets its [`RetryPolicy`], then one of
//! the ways to connect its first client (and every later one); `Session`'s own constructors take
//! the defaults.
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Weak};

use tokio::sync::{watch, Notify};
use zookeeper_client::{Client, Connector, SessionState};

use super::deadline::{within, Patience};
use super::retry::RetryPolicy;
use super::session_end::{check_session_ended, SessionEnd};
use crate::error::{Error, Result};

/// How a new client is connected: the connect string, session timeout, auth, TLS and chroot of
/// the caller's connector.
#[derive(Clone)]
pub(crate) struct Connect(Arc<dyn Fn() -> ConnectFuture + Send + Sync>);

type ConnectFuture = Pin<Box<dyn Future<Output = std::result::Result<Client, zookeeper_client::Error>> + Send>>;

impl Connect {
    pub(crate) fn new<F, Fut>(connect: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = std::result::Result<Client, zookeeper_client::Error>> + Send + 'static,
    {
        Connect(Arc::new(move || Box::pin(connect())))
    }

    pub(crate) fn connect(&self) -> ConnectFuture {
        (self.0)()
    }
}

impl fmt::Debug for Connect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Connect(..)")
    }
}

/// Where a [`Session`] stands, as Curator's `ConnectionState` says it.
///
/// [`Session::subscribe`] is a `watch` channel: it keeps only the latest state, so a reader that
/// looks late may miss [`Lost`](Self::Lost) and see only the `Reconnected` after it, as after a
/// plain [`Suspended`](Self::Suspended). `Reconnected` therefore carries `expiries`, the number
/// of sessions lost so far (0 in `Connected`): a reader that remembers the count it last saw
/// knows from any later `Reconnected` whether its holds were lost in between, without having
/// to see every transition (a count cannot be missed, a channel of every transition could lag
/// or fill up).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ConnectionState {
    /// Connected on its first session.
    Connected {
        /// The session's id.
        session_id: i64,
    },
    /// Disconnected: the client is reconnecting, and the session may still live. Holds are kept
    /// or given up as their [`LossPolicy`](crate::LossPolicy) says.
    Suspended,
    /// The server expired the session: its ephemeral nodes are gone, and every hold on it is
    /// lost. A new session is being connected.
    Lost,
    /// Connected again: on the same session after [`Suspended`](Self::Suspended), or on a new
    /// one after [`Lost`](Self::Lost).
    Reconnected {
        /// The session's id (a new one after an expiry).
        session_id: i64,
        /// How many sessions have expired since the `Session` was made: higher than the count
        /// a reader last saw when a session was lost in between, whether or not it saw `Lost`.
        expiries: u64,
    },
}

/// A ZooKeeper session for the life of a service: it hands out the current [`Client`], and when
/// the server expires the session (a long pause, a partition longer than the session timeout),
/// it connects a new client, pacing its tries as its [`RetryPolicy`] says (by default with
/// jitter up to 5 s between tries), until it connects or the `Session` is dropped. [`subscribe`](Self::subscribe) tells where it stands.
///
/// Every recipe can be built on a `Session` instead of a `Client` (`&session` wherever a builder
/// takes `&client`). Such a recipe object survives expiry, with no code of the caller's: holds
/// on the old session are lost and say so; an acquire waiting on it (or about to send its first
/// request) rides over the expiry: it queues again on the new session once it is connected,
/// within its patience (its deadline unchanged; the old session's nodes are the server's to
/// delete), so it never fails with [`Error::SessionExpired`]; every later acquire uses the new
/// session. A try ([`try_acquire`](crate::InterProcessMutex::try_acquire),
/// `acquire_timeout(Duration::ZERO)`) never waits for a new session: while there is none it
/// answers `Ok(None)` at once, as it does when another participant holds the lock (on a
/// `Client`, an expired session is [`Error::SessionExpired`] at once). Leader elections built
/// on a `Session` join again after an expiry.
///
/// Every request of a recipe built on it is retried as its [`RetryPolicy`] says, set with
/// [`Session::builder`]; the constructors below take the default.
///
/// Clones share the session. Dropping the last one closes the current client.
///
/// # Examples
///
/// ```no_run
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// // Every later session connects the same way (`connect_with` takes a connector's options).
/// let session = zklock::Session::connect_to("127.0.0.1:2181").await?;
/// let mutex = zklock::InterProcessMutex::new(&session, "/app/locks/nightly")?;
/// loop {
///     // After an expiry this still works: it queues on the new session.
///     let guard = mutex.acquire().await?;
///     // ... the nightly job ...
///     # break;
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Session {
    shared: Arc<Shared>,
}

struct Shared {
    connect: Connect,
    retry: RetryPolicy,
    current: watch::Sender<Client>,
    state: watch::Sender<ConnectionState>,
    /// Ends the task that follows the sessions, once the last `Session` is dropped.
    stop: Arc<Notify>,
}

impl Drop for Shared {
    fn drop(&mut self) {
        self.stop.notify_one();
    }
}

impl Session {
    /// Follows `client`, and those `connect` makes after it, retrying as `retry` says (checked
    /// by the caller).
    pub(crate) fn start(client: Client, connect: Connect, retry: RetryPolicy) -> Result<Session> {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return Err(Error::InvalidOptions("a Session needs a tokio runtime"));
        };
        let session_id = client.session_id().0;
        // Where the client stands now: one that expired before it was handed over is lost, and
        // `follow` connects the next session at once.
        let state = match SessionEnd::of_state(client.state()) {
            Some(SessionEnd::Expired) => ConnectionState::Lost,
            _ => ConnectionState::Connected { session_id },
        };
        let states = client.state_watcher();
        let stop = Arc::new(Notify::new());
        let shared = Arc::new(Shared {
            connect,
            retry,
            current: watch::Sender::new(client),
            state: watch::Sender::new(state),
            stop: Arc::clone(&stop),
        });
        runtime.spawn(follow(Arc::downgrade(&shared), states, stop));
        Ok(Session { shared })
    }

    /// The current client: the one the next acquire uses.
    pub fn client(&self) -> Client {
        self.shared.current.borrow().clone()
    }

    /// How requests on this session are retried, and new sessions connected after an expiry.
    pub fn retry_policy(&self) -> RetryPolicy {
        self.shared.retry
    }

    /// The current session's id.
    pub fn session_id(&self) -> i64 {
        self.shared.current.borrow().session_id().0
    }

    /// The session's state from now on: each change is sent as it happens (a receiver that
    /// reads late sees the latest; compare [`Reconnected`](ConnectionState::Reconnected)'s
    /// `expiries` with the count last seen to know whether a session was lost in between).
    #[must_use = "a receiver does nothing unless it is read"]
    pub fn subscribe(&self) -> watch::Receiver<ConnectionState> {
        self.shared.state.subscribe()
    }

    /// The current client once it can be used: while a new session is being connected after an
    /// expiry, waits for it. A session closed by its client is handed out as it is (its
    /// requests fail with [`Error::SessionClosed`]).
    ///
    /// # Cancel safety
    /// Cancel safe: it only waits.
    pub async fn usable_client(&self) -> Client {
        let mut current = self.shared.current.subscribe();
        loop {
            let client = current.borrow_and_update().clone();
            if !matches!(check_session_ended(&client), Some(Error::SessionExpired)) {
                return client;
            }
            if current.changed().await.is_err() {
                return client;
            }
        }
    }
}

impl fmt::Debug for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Session")
            .field("session_id", &self.session_id())
            .field("state", &*self.shared.state.borrow())
            .finish()
    }
}

/// Follows the current client's state into [`ConnectionState`], and connects a new client after
/// each expiry, until the last `Session` is dropped (or its client is closed). It starts from
/// the state the client is in, not its next change: a client handed over already expired (or
/// disconnected) would otherwise never be followed out of it.
async fn follow(shared: Weak<Shared>, mut states: zookeeper_client::StateWatcher, stop: Arc<Notify>) {
    let mut suspended = false;
    let mut expiries = 0;
    let mut state = states.state();
    loop {
        {
            let Some(session) = shared.upgrade() else { return };
            match (SessionEnd::of_state(state), state) {
                (Some(SessionEnd::Closed), _) => return,
                (Some(SessionEnd::Expired), _) => {
                    expiries += 1;
                    session.state.send_replace(ConnectionState::Lost);
                    drop(session);
                    let Some(next) = reconnect(&shared, &stop, expiries).await else { return };
                    states = next;
                    suspended = false;
                    state = states.state();
                    continue;
                }
                (None, SessionState::Disconnected) => {
                    suspended = true;
                    session.state.send_replace(ConnectionState::Suspended);
                }
                (None, _) if suspended => {
                    suspended = false;
                    let session_id = session.current.borrow().session_id().0;
                    session.state.send_replace(ConnectionState::Reconnected { session_id, expiries });
                }
                (None, _) => {}
            }
        }
        state = tokio::select! {
            state = states.changed() => state,
            () = stop.notified() => return,
        };
    }
}

/// Connects a new client after an expiry, pausing between tries as the policy's reconnect
/// back-off says (full jitter, so that the services one outage expired do not reconnect in
/// step); never gives up: `None` once the session is dropped.
async fn reconnect(shared: &Weak<Shared>, stop: &Notify, expiries: u64) -> Option<zookeeper_client::StateWatcher> {
    let mut failures = 0;
    loop {
        let (connect, backoff) = {
            let session = shared.upgrade()?;
            (session.connect.clone(), session.retry.reconnect_backoff())
        };
        let connected = tokio::select! {
            connected = connect.connect() => connected,
            () = stop.notified() => return None,
        };
        match connected {
            Ok(client) => {
                let session = shared.upgrade()?;
                let session_id = client.session_id().0;
                let states = client.state_watcher();
                session.current.send_replace(client);
                session.state.send_replace(ConnectionState::Reconnected { session_id, expiries });
                return Some(states);
            }
            Err(err) => {
                tracing::warn!(target: "zklock", error = %err, "could not connect a new session after an expiry")
            }
        }
        failures += 1;
        tokio::select! {
            () = tokio::time::sleep(backoff.pause(failures, fastrand::f64())) => {}
            () = stop.notified() => return None,
        }
    }
}

/// What a recipe is built on: a [`Client`] (its one session, for as long as it lives) or a
/// [`Session`] (a new client after each expiry). Every builder takes `impl Into<Connection>`, so
/// `&client` and `&session` both work.
///
/// It carries how the recipe's requests are retried: a session's [`RetryPolicy`], or the default
/// for a client.
#[derive(Clone, Debug)]
pub struct Connection {
    source: Source,
    retry: RetryPolicy,
}

#[derive(Clone, Debug)]
enum Source {
    /// Shared, not cloned, into each hold: a client's clone copies its session's password.
    Client(Arc<Client>),
    Session(Session),
}

impl Connection {
    fn new(source: Source) -> Self {
        let retry = match &source {
            Source::Client(_) => RetryPolicy::default(),
            Source::Session(session) => session.retry_policy(),
        };
        Connection { source, retry }
    }

    /// How the recipe's requests are retried.
    pub(crate) fn retry_policy(&self) -> RetryPolicy {
        self.retry
    }

    /// The client now (for reads, and what a lock object is labelled with).
    pub(crate) fn client(&self) -> Client {
        match &self.source {
            Source::Client(client) => Client::clone(client),
            Source::Session(session) => session.client(),
        }
    }

    /// The error the end of the current session is, if the client knows it ended: asked by a
    /// re-entry, which borrows a plain client rather than cloning it.
    pub(crate) fn session_ended(&self) -> Option<Error> {
        match &self.source {
            Source::Client(client) => check_session_ended(client),
            Source::Session(session) => check_session_ended(&session.client()),
        }
    }

    /// The client an acquire starting now uses: on a session, the new one once an expiry's
    /// reconnection is through, waited for within `patience`; `Ok(None)` when it runs out first.
    /// A try (`NoWait`) never waits for a reconnection: `Ok(None)` at once while there is none.
    /// Shared, the client's, when the connection is a client: a clone copies the session's
    /// password, and the hold keeps it.
    ///
    /// # Errors
    /// The end of the client's session, when the client knows it ended (a closed `Session`, or
    /// a plain client's expiry): a hold taken on it would be worth nothing. (A `Session` hands
    /// out no expired client, so an acquire that starts is never ridden over on the session it
    /// started on.)
    pub(crate) async fn usable_client(&self, patience: Patience) -> Result<Option<Arc<Client>>> {
        let client = match &self.source {
            Source::Client(client) => Arc::clone(client),
            Source::Session(session) if patience == Patience::NoWait => {
                let client = session.client();
                if matches!(check_session_ended(&client), Some(Error::SessionExpired)) {
                    return Ok(None);
                }
                Arc::new(client)
            }
            Source::Session(session) => match within(patience.deadline(), session.usable_client()).await {
                Some(client) => Arc::new(client),
                None => return Ok(None),
            },
        };
        match check_session_ended(&client) {
            Some(ended) => Err(ended),
            None => Ok(Some(client)),
        }
    }

    /// Whether an acquire attempt that ended with `outcome` queues again: on a session, an
    /// expiry that landed while it was under way is ridden over, on the next session (Curator
    /// retries its `NoNode` there); on a client, it is the acquire's error.
    pub(crate) fn rides_over<T>(&self, outcome: &Result<T>) -> bool {
        matches!((outcome, &self.source), (Err(Error::SessionExpired), Source::Session(_)))
    }
}

impl From<&Client> for Connection {
    fn from(client: &Client) -> Self {
        Connection::new(Source::Client(Arc::new(client.clone())))
    }
}

impl From<Client> for Connection {
    fn from(client: Client) -> Self {
        Connection::new(Source::Client(Arc::new(client)))
    }
}

impl From<&Session> for Connection {
    fn from(session: &Session) -> Self {
        Connection::new(Source::Session(session.clone()))
    }
}

impl From<Session> for Connection {
    fn from(session: Session) -> Self {
        Connection::new(Source::Session(session))
    }
}

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
