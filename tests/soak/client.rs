//! The soak's clients: each behind its own proxy, replaced when its session ends.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use zklock_testcontainers::Proxy;
use zookeeper_client::Client;

pub const SESSION_TIMEOUT: Duration = Duration::from_secs(6);

/// A client slot the nemesis can reach: the current client its tasks share (the lock worker and
/// the election participants), its proxy, and when each critical section or term now under way
/// is planned to end (the nemesis likes to cut off a holder).
pub struct Slot {
    pub proxy: Proxy,
    pub client: Mutex<Option<Client>>,
    holds: Mutex<Vec<(Hold, Instant)>>,
}

/// What a slot's task holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hold {
    Lock,
    Leadership,
}

impl Slot {
    pub fn new(proxy: Proxy) -> Self {
        Slot { proxy, client: Mutex::default(), holds: Mutex::default() }
    }

    /// The current client, connecting a new one through the proxy when there is none.
    pub async fn client(&self) -> Client {
        loop {
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
