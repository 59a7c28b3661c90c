//! What a waiting acquire sees of its queue, published while it waits.
//!
//! Where it stands and who holds, for every recipe (they all wait in `turn.rs`). A caller asks for
//! it by running an acquire inside [`watch_queue`]; an acquire that nobody watches sends nothing
//! more and allocates nothing for it.

use std::convert::Infallible;
use std::future::Future;
use std::time::Instant;

use tokio::sync::watch;
use zookeeper_client::{Client, Error as ZkError};

use crate::client::retry::{retry_transient, Retries, RetryPolicy};
use crate::queue::queue_node::QueueNode;
use crate::rules::path::child_path;

tokio::task_local! {
    /// Where the acquire running in [`watch_queue`]'s scope publishes its position.
    static WATCHER: watch::Sender<Option<QueuePosition>>;
}

/// Where a waiting acquire stands in its queue, as of its last look at the queue.
///
/// Told at once when the acquire starts waiting, and again at every change of the queue (a
/// node ahead or behind arriving or leaving), while it waits.
///
/// Only a wait in ZooKeeper is told: a task that waits in its lock object's local line (a
/// [`LocalHandoff`](crate::LocalHandoff)) has no node yet, and may be handed the hold by the
/// task ahead without ever being told a position. A multi-lock tells each lock's wait in turn
/// (`lock_path` says which); an acquire that rides over a session's expiry tells its new node's
/// place once it waits on the new session.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct QueuePosition {
    /// The lock directory our node is in (a semaphore's lease directory while it waits for room,
    /// its gate's lock path before).
    pub lock_path: String,
    /// Our node's full path (in `lock_path`).
    pub node_path: String,
    /// How many nodes of the queue sort before ours, holders included (for a read-write lock,
    /// readers and writers alike; for a semaphore, the leases and their takers). `None` when our
    /// node is not in the queue as last listed (an operator deleted it, or the lock path with
    /// it): the acquire finds that out on its next look, and queues anew or fails. A listing the
    /// server refuses or loses (`Throttled`, a connection loss) is tried again, as the acquire's
    /// own requests are; the position told stays as it was meanwhile.
    pub ahead: Option<usize>,
    /// The first node of the queue: the holder of a mutex, the first holder of the other locks,
    /// read when it became the first (its data as it was then). `None` when unknown (not listed
    /// yet, or gone before it could be read), and when the first node is our own.
    pub holder: Option<QueueNode>,
    /// When this acquire started waiting.
    pub waiting_since: Instant,
}

/// Runs `acquire` (any recipe's acquire, try or timed acquire), publishing into `position` where
/// it stands each time it looks at its queue while it waits. The value stays as last published
/// once the acquire returns.
///
/// It costs what the wait does, plus, while it waits, a listing of the queue with a watch when
/// the wait starts and at every change of the queue, each followed by one read (an exists) of
/// the queue's head when another node comes to head it, to tell whose it is. A watched waiter is told of every
/// change, where an unwatched one hears only of its predecessor's: watch the waits a person or
/// a dashboard looks at, not thousands. An acquire outside `watch_queue` sends nothing for it.
///
/// # Examples
///
/// ```no_run
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let client = zklock::zookeeper_client::Client::connect("127.0.0.1:2181").await?;
/// let mutex = zklock::InterProcessMutex::new(&client, "/app/locks/nightly")?;
/// let (position, mut seen) = tokio::sync::watch::channel(None::<zklock::queue::QueuePosition>);
/// tokio::spawn(async move {
///     while seen.changed().await.is_ok() {
///         if let Some(position) = &*seen.borrow() {
///             eprintln!("waiting: {:?} ahead", position.ahead);
///         }
///     }
/// });
/// let guard = zklock::queue::watch_queue(position, mutex.acquire()).await?;
/// # Ok(())
/// # }
/// ```
///
/// # Cancel safety
/// As cancel safe as `acquire`.
pub async fn watch_queue<F: Future>(position: watch::Sender<Option<QueuePosition>>, acquire: F) -> F::Output {
    WATCHER.scope(position, acquire).await
}

/// One waiting acquire's view of its queue, told to `watcher`.
pub(crate) struct PositionReport {
    watcher: watch::Sender<Option<QueuePosition>>,
    waiting_since: Instant,
}

impl PositionReport {
    /// A report for the acquire under way in this task, if someone watches it.
    pub(crate) fn for_this_task() -> Option<PositionReport> {
        let watcher = WATCHER.try_with(watch::Sender::clone).ok()?;
        Some(PositionReport { watcher, waiting_since: Instant::now() })
    }

    /// Follows the queue `lock_path` for good (the caller stops it when its wait ends): lists it
    /// with a watch, tells where our node `node` stands among the children as `sort` orders
    /// them, and again at each change; the head is read again only when another node heads the
    /// queue. It never stops telling while the wait lasts: a transient failure is retried as
    /// the acquire's own requests are, any other listing failure (or one past the retry policy's
    /// bound) after a back-off, and
    /// a lock path gone is told as our node gone (`ahead: None`).
    pub(crate) async fn follow(
        &self,
        client: &Client,
        retry: RetryPolicy,
        lock_path: &str,
        node: &str,
        sort: impl Fn(Vec<String>) -> Vec<String>,
    ) -> Infallible {
        let mut holder: Option<QueueNode> = None;
        // Every failure is paced, but the view never stops while the wait lasts.
        let mut failures = Retries::new(retry.without_bound());
        loop {
            let (children, watcher) = match retry_transient(retry, || client.list_and_watch_children(lock_path)).await {
                Ok(listing) => listing,
                Err(ZkError::NoNode) => {
                    // Our node went with the lock path; the acquire's own wait hears of it too,
                    // and ends (dropping this) or queues anew.
                    self.tell(lock_path, node, None, None);
                    return std::future::pending().await;
                }
                Err(err) => {
                    // Not transient (a session ending, an ACL): the acquire's wait fails on it
                    // soon, or the next try succeeds. Told as it stands until then.
                    tracing::debug!(lock_path, error = %err, "cannot list the queue for its view");
                    failures.pause().await;
                    continue;
                }
            };
            failures = Retries::new(retry.without_bound());
            let queue = sort(children);
            let ahead = queue.iter().position(|name| name == node);
            holder = match queue.first() {
                Some(head) if head == node => None,
                // The same queue's head: the holder's path ends with its name.
                Some(head)
                    if holder.as_ref().is_some_and(|holder| holder.node_path.rsplit('/').next() == Some(head)) =>
                {
                    holder
                }
                Some(head) => head_of(client, retry, lock_path, head).await,
                None => None,
            };
            self.tell(lock_path, node, ahead, holder.clone());
            watcher.changed().await;
        }
    }

    fn tell(&self, lock_path: &str, node: &str, ahead: Option<usize>, holder: Option<QueueNode>) {
        self.watcher.send_replace(Some(QueuePosition {
            lock_path: lock_path.to_owned(),
            node_path: child_path(lock_path, node),
            ahead,
            holder,
            waiting_since: self.waiting_since,
        }));
    }
}

/// The queue's head `name`, read (its data and stat, tried again on a transient failure); `None`
/// if it is gone or the read failed otherwise (the view is a courtesy: its failure never fails
/// the acquire).
async fn head_of(client: &Client, retry: RetryPolicy, lock_path: &str, name: &str) -> Option<QueueNode> {
    let path = child_path(lock_path, name);
    let (data, stat) = retry_transient(retry, || client.get_data(&path)).await.ok()?;
    Some(QueueNode::read(path, data, &stat))
}
