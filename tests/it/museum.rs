//! The museum of peers' bugs: double holders, double leaders and orphan nodes once reported
//! against Curator, kazoo, etcd's `concurrency` package and Consul's lock, each replayed against
//! zklock with its trigger (a cut, black-holed or reply-losing proxy, a session expiry, a pause,
//! an operator) and checked for what the peer got wrong: at most one holder or leader, no node
//! left behind, the loss told, the acquire's error typed. One module per library; each test's
//! doc comment names the bug. docs/guarantees.md, "Proven against the bugs of others", is the table.

use crate::common;

#[path = "museum/curator.rs"]
mod curator;
#[path = "museum/etcd.rs"]
mod etcd;
#[path = "museum/kazoo.rs"]
mod kazoo;

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use zklock_testcontainers::Proxy;
use zookeeper_client::Client;

use common::{connect_through, server};

/// Generous bound for "promptly": a hang exceeds it, a slow machine does not.
pub const PROMPTLY: Duration = Duration::from_secs(30);

/// The session timeout of a participant whose session a test lets the server expire.
pub const SHORT_SESSION: Duration = Duration::from_secs(4);

/// A client behind a proxy of its own to the shared server.
pub async fn behind_proxy(session_timeout: Duration) -> (Proxy, Client) {
    let proxy = Proxy::start(server().address()).unwrap();
    let client = connect_through(&proxy, session_timeout).await;
    (proxy, client)
}

/// `future`, which must end within [`PROMPTLY`].
pub async fn promptly<F: Future>(what: &str, future: F) -> F::Output {
    tokio::time::timeout(PROMPTLY, future).await.unwrap_or_else(|_| panic!("{what}: not within {PROMPTLY:?}"))
}

/// The session that owns `node`, or `None` once it is gone.
pub async fn owner_of(observer: &Client, node: &str) -> Option<i64> {
    observer.check_stat(node).await.unwrap().map(|stat| stat.ephemeral_owner)
}

/// Counts, every few milliseconds until stopped, how many of the participants believe they
/// lead (or hold), and remembers the most seen at once.
pub struct Believers {
    stop: Arc<AtomicBool>,
    most: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

/// Whether one participant believes it leads or holds now, asked without a request.
pub type Belief = Box<dyn Fn() -> bool + Send + Sync>;

impl Believers {
    pub fn watch(beliefs: Vec<Belief>) -> Believers {
        let stop = Arc::new(AtomicBool::new(false));
        let most = Arc::new(AtomicUsize::new(0));
        let task = tokio::spawn({
            let (stop, most) = (stop.clone(), most.clone());
            async move {
                while !stop.load(Ordering::Relaxed) {
                    let now = beliefs.iter().filter(|believes| believes()).count();
                    most.fetch_max(now, Ordering::Relaxed);
                    tokio::time::sleep(Duration::from_millis(2)).await;
                }
            }
        });
        Believers { stop, most, task }
    }

    /// Stops counting; returns the most that believed at once.
    pub async fn most_at_once(self) -> usize {
        self.stop.store(true, Ordering::Relaxed);
        self.task.await.unwrap();
        self.most.load(Ordering::Relaxed)
    }
}
