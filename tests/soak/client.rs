//! The soak's clients: each behind its own proxy, replaced when its session ends; the last one
//! a `zklock::Session` whose locks are built once and live through every expiry.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use zklock::Session;
use zklock_testcontainers::Proxy;
use zookeeper_client::Client;

use super::recipe::{Locks, Paths};

pub const SESSION_TIMEOUT: Duration = Duration::from_secs(6);

/// A client slot the nemesis can reach: the current client its tasks share (the lock worker and
/// the election participants), its proxy, and when each critical section or term now under way
/// is planned to end (the nemesis likes to cut off a holder).
pub struct Slot {
    pub proxy: Proxy,
    pub client: Mutex<Option<Client>>,
    holds: Mutex<Vec<(Hold, Instant)>>,
    /// A slot on a `Session`: the session and the locks built on it once, for the whole run.
    on_session: Mutex<Option<(Session, Arc<Locks>)>>,
    /// How many holds its locks took on each session (a slot on a `Session`).
    pub held_on: Mutex<BTreeMap<i64, u64>>,
}

/// What a slot's task holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hold {
    Lock,
    Leadership,
}

impl Slot {
    pub fn new(proxy: Proxy) -> Self {
        Slot {
            proxy,
            client: Mutex::default(),
            holds: Mutex::default(),
            on_session: Mutex::default(),
            held_on: Mutex::default(),
        }
    }

    /// A slot whose client is a `Session`'s, with the locks on `paths` built on it once.
    pub async fn on_session(proxy: Proxy, paths: &Paths) -> Self {
        let through = proxy.connect_string();
        let session = Session::connect(move || {
            let through = through.clone();
            async move { Client::connector().with_session_timeout(SESSION_TIMEOUT).connect(&through).await }
        })
        .await
        .expect("the session connects");
        let locks = Arc::new(Locks::new(&session, paths));
        let slot = Slot::new(proxy);
        *slot.on_session.lock().unwrap() = Some((session, locks));
        slot
    }

    /// The locks built once on the slot's session, if it is on one.
    pub fn session_locks(&self) -> Option<Arc<Locks>> {
        self.on_session.lock().unwrap().as_ref().map(|(_, locks)| Arc::clone(locks))
    }

    /// The current client, connecting a new one through the proxy when there is none (on a
    /// session: its current client, once a new one replaced an expired one).
    pub async fn client(&self) -> Client {
        loop {
            let session = self.on_session.lock().unwrap().as_ref().map(|(session, _)| session.clone());
            if let Some(session) = session {
                return session.usable_client().await;
            }
            if let Some(client) = self.client.lock().unwrap().clone() {
                return client;
            }
            if let Some(client) = self.connect().await {
                *self.client.lock().unwrap() = Some(client.clone());
                return client;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Forgets the current client if its session has ended, so that the next [`Self::client`]
    /// connects anew; `true` if it did. Several tasks share the client and each learns of the
    /// end by itself: only the first replaces it, the others must not drop its successor.
    pub fn forget_ended_client(&self) -> bool {
        if self.on_session.lock().unwrap().is_some() {
            // The session replaces its client itself.
            return false;
        }
        let mut client = self.client.lock().unwrap();
        let ended = client.as_ref().is_some_and(|client| client.state().is_terminated());
        if ended {
            client.take();
        }
        ended
    }

    /// Forgets the current client, for good: the run is over.
    pub fn forget_client(&self) {
        self.client.lock().unwrap().take();
        self.on_session.lock().unwrap().take();
    }

    /// Marks a hold (a critical section, a term of leadership) planned to last `until`, for as
    /// long as the returned mark lives.
    pub fn holding(&self, hold: Hold, until: Instant) -> Holding<'_> {
        self.holds.lock().unwrap().push((hold, until));
        Holding { slot: self, hold: (hold, until) }
    }

    /// When the longest hold under way (of kind `only`, if given) is planned to end, if one is.
    pub fn holding_until(&self, only: Option<Hold>) -> Option<Instant> {
        let holds = self.holds.lock().unwrap();
        holds.iter().filter(|(hold, _)| only.is_none_or(|only| only == *hold)).map(|(_, until)| *until).max()
    }

    async fn connect(&self) -> Option<Client> {
        let connect_string = self.proxy.connect_string();
        let connecting = Client::connector().with_session_timeout(SESSION_TIMEOUT).connect(&connect_string);
        tokio::time::timeout(SESSION_TIMEOUT * 2, connecting).await.ok()?.ok()
    }
}

/// A hold under way on a slot, seen by the nemesis until dropped.
pub struct Holding<'a> {
    slot: &'a Slot,
    hold: (Hold, Instant),
}

impl Drop for Holding<'_> {
    fn drop(&mut self) {
        let mut holds = self.slot.holds.lock().unwrap();
        if let Some(position) = holds.iter().position(|hold| *hold == self.hold) {
            holds.swap_remove(position);
        }
    }
}
