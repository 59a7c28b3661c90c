//! The soak's clients: each behind its own proxy, replaced when its session ends.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use zklock_testcontainers::Proxy;
use zookeeper_client::Client;

pub const SESSION_TIMEOUT: Duration = Duration::from_secs(6);

/// A client slot the nemesis can reach: the worker's current client, its proxy, and when its
/// current critical section is planned to end (the nemesis likes to cut off a holder).
pub struct Slot {
    pub proxy: Proxy,
    pub client: Mutex<Option<Client>>,
    pub holding_until: Mutex<Option<Instant>>,
}

impl Slot {
    pub fn new(proxy: Proxy) -> Self {
        Slot { proxy, client: Mutex::default(), holding_until: Mutex::default() }
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

    /// Forgets the current client (its session ended); the next [`Self::client`] connects anew.
    pub fn forget_client(&self) {
        self.client.lock().unwrap().take();
    }

    async fn connect(&self) -> Option<Client> {
        let connect_string = self.proxy.connect_string();
        let connecting = Client::connector().with_session_timeout(SESSION_TIMEOUT).connect(&connect_string);
        tokio::time::timeout(SESSION_TIMEOUT * 2, connecting).await.ok()?.ok()
    }
}
