//! `LeaderView`: an election watched without joining it.
//!
//! As etcd's `Observe` and Curator's `getLeader`: who leads now, with the leader's data and fencing
//! token, as a stream of changes.
//!
//! One task per view follows the election's queue: it lists the queue with a watch on its
//! children (so that a first participant, or the path's creation, is seen) and reads the first
//! node's data with a watch on it (so that its deletion, or new data it writes, is seen), and
//! publishes the leader whenever either fires and the answer differs.

use std::time::Duration;

use tokio::sync::watch;
use zookeeper_client::{Client, Error as ZkError, OneshotWatcher};

use crate::client::background;
use crate::client::retry::{is_transient, Retries};
use crate::client::session::Connection;
use crate::error::{Error, Result};
use crate::queue::listing::in_queue_order;
use crate::queue::queue_node::QueueNode;
use crate::rules::naming::{Schema, KAZOO_MUTEX, LATCH, MUTEX};
use crate::rules::path::validate_lock_path;

/// What a view has seen last: the leader (or nobody), or why it stopped.
#[derive(Clone, Debug)]
enum Seen {
    /// Nothing read yet.
    Unread,
    Leader(Option<QueueNode>),
    Stopped(Error),
}

/// Who leads an election, followed without taking part: no node of ours, nothing written.
/// Made by [`LeaderView::latch`] (a [`LeaderLatch`](crate::LeaderLatch)'s election, Curator's
/// too) or [`LeaderView::selector`] (a [`LeaderSelector`](crate::LeaderSelector)'s).
///
/// Each change of leader (a term ended, a node deleted, a leader's session expired) and each
/// new data a leader writes to its node is told by [`changed`](Self::changed). A view on a
/// [`Session`](crate::Session) goes on across its expiries; on a client, the expiry ends it.
/// Dropping it stops its task.
///
/// # Examples
///
/// ```no_run
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let client = zklock::Client::connect("127.0.0.1:2181").await?;
/// let mut view = zklock::election::LeaderView::latch(&client, "/app/elections/report-writer")?;
/// loop {
///     match view.changed().await? {
///         Some(leader) => println!("{} leads (token {})", leader.id(), leader.fencing_token),
///         None => println!("nobody leads"),
///     }
/// }
/// # }
/// ```
#[derive(Debug)]
pub struct LeaderView {
    seen: watch::Receiver<Seen>,
}

impl LeaderView {
    /// Follows the election of [`LeaderLatch`](crate::LeaderLatch)es (and Curator's
    /// `LeaderLatch`) at `path`.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a path that is not one.
    pub fn latch(on: impl Into<Connection>, path: &str) -> Result<LeaderView> {
        Self::start(on.into(), path, LATCH)
    }

    /// Follows the election of [`LeaderSelector`](crate::LeaderSelector)s (and Curator's
    /// `LeaderSelector`) at `path`.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a path that is not one.
    pub fn selector(on: impl Into<Connection>, path: &str) -> Result<LeaderView> {
        Self::start(on.into(), path, MUTEX)
    }

    /// Follows a kazoo `Election` at `path` (and the [`LeaderSelector`](crate::LeaderSelector)s
    /// built with [`NodeSchema::Kazoo`](crate::NodeSchema::Kazoo)): the leader is the first
    /// `{hex32}__lock__{seq}` node, its data the id kazoo's `contenders()` reads.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] for a path that is not one.
    pub fn kazoo(on: impl Into<Connection>, path: &str) -> Result<LeaderView> {
        Self::start(on.into(), path, KAZOO_MUTEX)
    }

    fn start(connection: Connection, path: &str, schema: Schema) -> Result<LeaderView> {
        validate_lock_path(path)?;
        let (publish, seen) = watch::channel(Seen::Unread);
        let follow = follow(connection, path.to_owned(), schema, publish);
        if !background::spawn(follow) {
            return Err(Error::CannotBlock("zklock's runtime thread could not be started"));
        }
        Ok(LeaderView { seen })
    }

    /// The leader as last read (`None`: nobody leads, or nothing has been read yet). Never
    /// sends a request.
    pub fn leader(&self) -> Option<QueueNode> {
        match &*self.seen.borrow() {
            Seen::Leader(leader) => leader.clone(),
            Seen::Unread | Seen::Stopped(_) => None,
        }
    }

    /// Waits for the first reading, then for each change: the leader now, `None` while nobody
    /// leads (no participant, or no election at the path yet).
    ///
    /// # Errors
    /// Why the view stopped, from then on: [`Error::SessionExpired`] on a client whose session
    /// expired, [`Error::SessionClosed`] (also when the runtime its task ran on shut down), or
    /// an [`Error::ZooKeeper`] refusal (`NoAuth`).
    ///
    /// # Cancel safety
    /// Cancel safe: a change not yet returned is returned by the next call.
    pub async fn changed(&mut self) -> Result<Option<QueueNode>> {
        loop {
            let gone = self.seen.changed().await.is_err();
            match &*self.seen.borrow_and_update() {
                Seen::Stopped(err) => return Err(err.clone()),
                // The task ended with nothing to say: its runtime shut down.
                _ if gone => return Err(Error::SessionClosed),
                Seen::Unread => continue,
                Seen::Leader(leader) => return Ok(leader.clone()),
            }
        }
    }
}

/// The task: reads the leader after every event that may change it, until the view is dropped
/// or the session ends for good.
async fn follow(connection: Connection, path: String, schema: Schema, publish: watch::Sender<Seen>) {
    // Paced, never giving up: a view follows for as long as it is kept.
    let mut failures = Retries::new(connection.retry_policy().without_bound());
    loop {
        let client = connection.client();
        let read = tokio::select! {
            read = read_leader(&client, &path, schema) => read,
            () = publish.closed() => return,
        };
        match read {
            Ok((leader, wake)) => {
                failures = Retries::new(connection.retry_policy().without_bound());
                publish.send_if_modified(|seen| match seen {
                    Seen::Leader(old) if *old == leader => false,
                    _ => {
                        *seen = Seen::Leader(leader);
                        true
                    }
                });
                tokio::select! {
                    () = wake.fired() => {}
                    () = publish.closed() => return,
                }
            }
            Err(err) if is_transient(&err) => {
                failures.pause().await;
            }
            Err(err) => {
                let err = Error::zookeeper("watch", &path, err);
                if !connection.rides_over::<()>(&Err(err.clone())) {
                    publish.send_replace(Seen::Stopped(err));
                    return;
                }
                // On a Session, the next session comes; read again once it is there.
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

/// The watches that wake the view: the queue's children (or the path's creation), and the
/// leader's node.
struct Wake {
    queue: OneshotWatcher,
    leader: Option<OneshotWatcher>,
}

impl Wake {
    async fn fired(self) {
        match self.leader {
            Some(leader) => {
                tokio::select! {
                    _ = self.queue.changed() => {}
                    _ = leader.changed() => {}
                }
            }
            None => drop(self.queue.changed().await),
        }
    }
}

/// The leader of the queue at `path` now, and the watches that fire when that may change.
async fn read_leader(
    client: &Client,
    path: &str,
    schema: Schema,
) -> std::result::Result<(Option<QueueNode>, Wake), ZkError> {
    loop {
        let (children, queue) = match client.list_and_watch_children(path).await {
            Ok(listed) => listed,
            Err(ZkError::NoNode) => match client.check_and_watch_stat(path).await? {
                // Created meanwhile: list it.
                (Some(_), _) => continue,
                (None, created) => return Ok((None, Wake { queue: created, leader: None })),
            },
            Err(err) => return Err(err),
        };
        let Some(first) = in_queue_order(path, schema, children).into_iter().next() else {
            return Ok((None, Wake { queue, leader: None }));
        };
        match client.get_and_watch_data(&first).await {
            Ok((data, stat, leader)) => {
                let found = QueueNode::read(first, data, &stat);
                return Ok((Some(found), Wake { queue, leader: Some(leader) }));
            }
            // Gone between the list and the read: the next leader is read at once.
            Err(ZkError::NoNode) => continue,
            Err(err) => return Err(err),
        }
    }
}
