//! Our node in the queue: which queue and how our node looks (`QueueSpec`), the protected create
//! (pipelined with what the opening asks for), finding the node again after a lost reply, and
//! deleting what an acquire that did not hold may have left (`NodeCleanup`). A held node's delete
//! is `delete.rs`'s.

use zookeeper_client::{
    Acl, Acls, Client, CreateMode, CreateOptions, CreateSequence, Error as ZkError, OneshotWatcher, Stat,
};

use std::sync::Arc;
use std::time::Instant;

use super::delete::delete_node;
use crate::client::background;
use crate::client::deadline::{within, CLEANUP_AFTER_DEADLINE};
use crate::client::retry::{back_off, is_connection_loss, is_transient, retry_transient};
use crate::error::{Error, LossReason, Result};
use crate::options::{AclProvider, DeadlockCheck};
use crate::rules::decide::Rule;
use crate::rules::entry::Level;
use crate::rules::naming::{sequential_name, Schema};
use crate::rules::opening::{alone_proof, Opening, Ours, Proof};
use crate::rules::owner_tag::NodeMark;

/// Which queue, and how our node in it looks.
#[derive(Debug)]
pub(crate) struct QueueSpec<'a> {
    pub(crate) client: &'a Client,
    pub(crate) lock_path: &'a str,
    /// How nodes are named and ordered.
    pub(crate) schema: Schema,
    /// Who may hold.
    pub(crate) rule: Rule,
    pub(crate) data: &'a [u8],
    /// The ACL of our node.
    pub(crate) acls: &'a [Acl],
    /// The ACL of the parents we create.
    pub(crate) parent_acls: &'a [Acl],
    /// What goes out with the create.
    pub(crate) opening: Opening,
    /// Where our node stands instead of at a sequence number: level with a node that must still
    /// exist once ours is there (a downgrade's read node; see [`Level`]).
    pub(crate) level_with: Option<Level<'a>>,
    /// Told our place in the queue as it takes it (a leader election's `start` returns once our
    /// node is there, and its `close` removes what may exist of it).
    pub(crate) place: Option<&'a PlaceReport>,
    /// Where and how often to look, while we wait, for a deadlock our node is part of (and to
    /// give up when it is the deadlock's victim).
    pub(crate) deadlock: Option<&'a DeadlockCheck>,
    /// What the uuid of our node carries (`rules/owner_tag.rs`): the owner tag of a lock that
    /// looks for deadlocks, so that the graph tells its tasks apart, or a leader selector's
    /// mark, so that it never reads the election as a lock; `None` for a plain version 4 uuid.
    pub(crate) mark: Option<NodeMark>,
}

impl<'a> QueueSpec<'a> {
    /// The queue of `lock_path`, our node named by `schema` and let hold by `rule`, carrying
    /// `data` under the provider's ACLs; it opens with a listing, sorts by its own sequence
    /// number, and tells nobody its place (what a recipe may set otherwise).
    pub(crate) fn new(
        client: &'a Client,
        lock_path: &'a str,
        schema: Schema,
        rule: Rule,
        data: &'a [u8],
        acls: &'a AclProvider,
    ) -> Self {
        QueueSpec {
            client,
            lock_path,
            schema,
            rule,
            data,
            acls: acls.lock_nodes(),
            parent_acls: acls.parents(),
            opening: Opening::Unknown,
            level_with: None,
            place: None,
            deadlock: None,
            mark: None,
        }
    }
}

/// Where a participant's node in the queue is, as far as it knows.
pub(crate) type PlaceReport = tokio::sync::watch::Sender<Option<Place>>;

/// Our node in a queue: its protected prefix from the moment its create may be sent, its path
/// once ZooKeeper confirmed the create.
#[derive(Clone, Debug)]
pub(crate) struct Place {
    pub(crate) prefix: Arc<str>,
    pub(crate) node: Option<Arc<str>>,
}

impl Place {
    /// Deletes what may exist of this node (found by its prefix if its create was not
    /// confirmed; every request of ours, that create too, runs in order) and waits for
    /// ZooKeeper to confirm. A session that ended took the node with it.
    pub(crate) async fn delete(&self, client: &Client, lock_path: &str) -> Result<()> {
        delete_ours(client, lock_path, &self.prefix, self.node.as_deref()).await
    }
}

/// A node of ours in a lock queue.
#[derive(Debug)]
pub(crate) struct LockNode {
    /// The full path.
    pub(crate) path: String,
    name_at: usize,
    /// The zxid that created the node: the fencing token.
    pub(crate) czxid: i64,
    /// Its sequence number, when the create's reply gave it (not for a node that sorts level
    /// with another, nor one found again after a lost reply).
    pub(crate) sequence: Option<i64>,
}

impl LockNode {
    fn new(lock_path: &str, name: &str, czxid: i64, sequence: Option<i64>) -> Self {
        LockNode { path: format!("{lock_path}/{name}"), name_at: lock_path.len() + 1, czxid, sequence }
    }

    /// What the opening's decisions need of it.
    pub(crate) fn ours(&self) -> Ours<'_> {
        Ours { name: self.name(), sequence: self.sequence, czxid: self.czxid }
    }

    /// The node's name within the lock path.
    pub(crate) fn name(&self) -> &str {
        &self.path[self.name_at..]
    }
}

/// What came back with our create, besides the node.
#[derive(Debug)]
pub(crate) enum FirstLook {
    /// A listing of the lock path taken after our node was created.
    Listing(Vec<String>),
    /// A watch on a node that sorts ahead of ours and still existed after our create
    /// ([`Opening::QueuedBehind`]).
    Watching(OneshotWatcher),
    /// Nothing yet: list.
    Nothing,
}

/// Creates our node as `{lock_path}/{prefix}{seq}` (or `{prefix}{key}` for a node that sorts
/// level with another, `spec.level_with`) and, in the same round trip, sends what `spec.opening`
/// asks for: a listing of the queue, a watch on a node known to be ahead, or nothing (the
/// uncontended shortcut). Returns the node, what came back with it, and whether the create
/// proved it alone (then the first look is a listing of our node alone).
///
/// Both requests are sent before either is awaited; the server runs a session's requests in
/// order, so the list already shows our node, and a watched node that still exists was there
/// after our create. Missing parents are created as containers. After a `ConnectionLoss` on the
/// create, the node is looked for by its protected prefix and taken only if our session owns it
/// (CURATOR-498); else the create is sent again.
///
/// `cleanup` is kept up to date so that whatever happens to this future, the node can be found
/// and deleted.
pub(crate) async fn create_node(
    spec: &QueueSpec<'_>,
    prefix: &str,
    cleanup: &mut NodeCleanup,
) -> Result<(LockNode, FirstLook, Proof)> {
    let (create_path, mode) = match spec.level_with {
        Some(level) => (format!("{}/{prefix}{}", spec.lock_path, level.key), CreateMode::Ephemeral),
        None => (format!("{}/{prefix}", spec.lock_path), CreateMode::EphemeralSequential),
    };
    let acls = Acls::new(spec.acls);
    let options = mode.with_acls(acls);
    let mut throttled = 0;
    loop {
        cleanup.remains = Remains::MaybeCreated;
        let replies = send_create(spec, &create_path, &options).await;
        let node = match replies.created {
            Ok((stat, _)) if spec.level_with.is_some() => {
                LockNode::new(spec.lock_path, &create_path[spec.lock_path.len() + 1..], stat.czxid, None)
            }
            Ok((stat, sequence)) => {
                let sequence = sequence.into_i64();
                LockNode::new(spec.lock_path, &sequential_name(prefix, sequence), stat.czxid, Some(sequence))
            }
            Err(ZkError::NoNode) => {
                cleanup.remains = Remains::Nothing;
                create_parents(spec.client, spec.lock_path, Acls::new(spec.parent_acls)).await?;
                continue;
            }
            Err(err) if is_connection_loss(&err) => match find_ours(spec.client, spec.lock_path, prefix).await? {
                Some(node) => node,
                None => continue,
            },
            Err(ZkError::Throttled) => {
                // Refused unrun: nothing was created.
                cleanup.remains = Remains::Nothing;
                throttled += 1;
                back_off(throttled).await;
                continue;
            }
            Err(err) => {
                cleanup.remains = Remains::Nothing;
                return Err(Error::zookeeper("create", &create_path, err));
            }
        };
        cleanup.remains = Remains::Created(node.path.clone());
        if let Some(level) = spec.level_with {
            stands_beside(spec.client, level, replies.beside).await?;
        }
        let proof = alone_proof(&spec.opening, node.sequence, node.czxid);
        let look = match proof {
            Proof::Held => FirstLook::Listing(vec![node.name().to_owned()]),
            Proof::NotTried | Proof::Missed => first_look(&node, replies.listed, replies.watched, spec.lock_path)?,
        };
        return Ok((node, look, proof));
    }
}

/// The reply to a listing sent with our create.
type Listed = std::result::Result<Vec<String>, ZkError>;
/// The reply to a watch sent with our create.
type Watched = std::result::Result<(Vec<u8>, Stat, OneshotWatcher), ZkError>;

/// The replies to a create and what went with it.
struct CreateReplies {
    created: std::result::Result<(Stat, CreateSequence), ZkError>,
    listed: Option<Listed>,
    watched: Option<Watched>,
    /// Whether the node ours stands level with was still there after our create.
    beside: Option<std::result::Result<Option<Stat>, ZkError>>,
}

/// Proves that the node a level node stands beside (a downgrade's write node) still existed
/// after our node was created: `beside`, the read sent right behind our create (answered after
/// it), or, when that reply was lost, a read sent now. Without it, a write holder whose node an
/// operator had deleted (and who cannot know yet) would read beside the writer now first.
///
/// # Errors
/// [`Error::LockLost`] (`NodeDeleted`) when it is gone: the owner's write hold is lost, and our
/// node is deleted by the acquire's cleanup.
async fn stands_beside(
    client: &Client,
    level: Level<'_>,
    beside: Option<std::result::Result<Option<Stat>, ZkError>>,
) -> Result<()> {
    let found = match beside {
        Some(Ok(found)) => found,
        _ => retry_transient(|| client.check_stat(level.node)).await.map_err(Error::on("read", level.node))?,
    };
    match found {
        Some(_) => Ok(()),
        None => Err(Error::LockLost(LossReason::NodeDeleted)),
    }
}

/// Sends the create and, right behind it, what the opening asks for; waits for every reply.
async fn send_create(spec: &QueueSpec<'_>, path: &str, options: &CreateOptions<'_>) -> CreateReplies {
    let create = spec.client.create(path, spec.data, options);
    let list = spec.opening.sends_listing().then(|| spec.client.list_children(spec.lock_path));
    let watch = match &spec.opening {
        Opening::QueuedBehind(name) => Some(spec.client.get_and_watch_data(&format!("{}/{name}", spec.lock_path))),
        _ => None,
    };
    let beside = spec.level_with.map(|level| spec.client.check_stat(level.node));
    let created = create.await;
    let listed = match list {
        Some(list) => Some(list.await),
        None => None,
    };
    let watched = match watch {
        Some(watch) => Some(watch.await),
        None => None,
    };
    let beside = match beside {
        Some(beside) => Some(beside.await),
        None => None,
    };
    CreateReplies { created, listed, watched, beside }
}

/// What the replies sent with our create tell of the queue.
fn first_look(node: &LockNode, listed: Option<Listed>, watched: Option<Watched>, lock_path: &str) -> Result<FirstLook> {
    Ok(match (listed, watched) {
        (Some(Ok(children)), _) if children.iter().any(|child| child == node.name()) => FirstLook::Listing(children),
        (Some(Err(err)), _) if !is_transient(&err) => return Err(Error::zookeeper("list", lock_path, err)),
        // Answered after our create ran (on its connection, or on a later one after a lost
        // reply): the node was there after ours was made, so it sorts ahead of ours.
        (_, Some(Ok((_data, _stat, watcher)))) => FirstLook::Watching(watcher),
        // No listing, a lost one, one that (after a ConnectionLoss) ran before the create, or
        // a watched node already gone: list.
        _ => FirstLook::Nothing,
    })
}

/// Lists the children of `lock_path`, retrying through connection loss.
pub(crate) async fn list_children(client: &Client, lock_path: &str) -> Result<Vec<String>> {
    retry_transient(|| client.list_children(lock_path)).await.map_err(Error::on("list", lock_path))
}

async fn create_parents(client: &Client, lock_path: &str, acls: Acls<'_>) -> Result<()> {
    let options = CreateMode::Container.with_acls(acls);
    retry_transient(|| client.mkdir(lock_path, &options)).await.map_err(Error::on("create parents of", lock_path))
}

/// Finds the node created with `prefix` by this session, if any.
///
/// After a lost reply the client may have reconnected to a server that has not applied our
/// create yet; a listing there would miss the node, and we would create a second one and wait
/// behind the first for ever. A `sync` first brings that server up to date with the leader.
async fn find_ours(client: &Client, lock_path: &str, prefix: &str) -> Result<Option<LockNode>> {
    match retry_transient(|| client.sync(lock_path)).await {
        Ok(()) | Err(ZkError::NoNode) => {}
        Err(err) => return Err(Error::zookeeper("sync", lock_path, err)),
    }
    let children = match list_children(client, lock_path).await {
        Err(Error::ZooKeeper { source: ZkError::NoNode, .. }) => return Ok(None),
        other => other?,
    };
    let Some(name) = children.into_iter().find(|child| child.starts_with(prefix)) else {
        return Ok(None);
    };
    let node = LockNode::new(lock_path, &name, 0, None);
    let stat = retry_transient(|| client.check_stat(&node.path)).await.map_err(Error::on("stat", &node.path))?;
    Ok(stat
        .filter(|stat| stat.ephemeral_owner == client.session_id().0)
        .map(|stat| LockNode { czxid: stat.czxid, ..node }))
}

/// What may exist of our node, as far as the acquire got.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Remains {
    /// Nothing was created, or it was cleaned up or handed to a guard.
    Nothing,
    /// A create was sent and its outcome is unknown: look for the node by prefix.
    MaybeCreated,
    /// The node exists at this path.
    Created(String),
}

/// Deletes a half-acquired node: awaited on timeout and error, spawned when dropped.
///
/// Armed before the create is sent, so a dropped acquire future leaves no node behind.
#[derive(Debug)]
pub(crate) struct NodeCleanup {
    client: Client,
    lock_path: String,
    prefix: String,
    pub(crate) remains: Remains,
}

impl NodeCleanup {
    pub(crate) fn new(client: &Client, lock_path: &str, prefix: &str) -> Self {
        NodeCleanup {
            client: client.clone(),
            lock_path: lock_path.to_owned(),
            prefix: prefix.to_owned(),
            remains: Remains::Nothing,
        }
    }

    /// The node now belongs to a guard: nothing to clean up.
    pub(crate) fn disarm(&mut self) {
        self.remains = Remains::Nothing;
    }

    /// Ends an acquire: a node we hold now belongs to its guard; on timeout or error, what may
    /// exist of our node is deleted, spending at most [`CLEANUP_AFTER_DEADLINE`] past a deadline
    /// (an unfinished cleanup goes on in the background, from `Drop`).
    pub(crate) async fn settle<T>(
        &mut self,
        outcome: Result<Option<T>>,
        deadline: Option<Instant>,
    ) -> Result<Option<T>> {
        if let Ok(Some(_)) = &outcome {
            self.disarm();
        } else {
            let grace = deadline.map(|_| Instant::now() + CLEANUP_AFTER_DEADLINE);
            within(grace, self.run()).await;
        }
        outcome
    }

    /// Deletes what may exist of our node. Failures are logged: a session that ended took the
    /// node with it.
    ///
    /// Cancel safe: what remains is cleared only once the work is done, so a dropped `run` is
    /// finished by `Drop`.
    pub(crate) async fn run(&mut self) {
        if let Err(err) = delete_remains(&self.client, &self.lock_path, &self.prefix, &self.remains).await {
            tracing::warn!(lock_path = %self.lock_path, error = %err.with_causes(), "could not delete an abandoned lock node");
        }
        self.remains = Remains::Nothing;
    }
}

impl Drop for NodeCleanup {
    fn drop(&mut self) {
        let remains = std::mem::replace(&mut self.remains, Remains::Nothing);
        if remains == Remains::Nothing {
            return;
        }
        // The spawned future owns plain data, not a NodeCleanup: a runtime that is shutting down
        // drops it unpolled, and that must not spawn again.
        let (client, lock_path, prefix) =
            (self.client.clone(), std::mem::take(&mut self.lock_path), std::mem::take(&mut self.prefix));
        background::spawn(async move {
            if let Err(err) = delete_remains(&client, &lock_path, &prefix, &remains).await {
                tracing::warn!(%lock_path, error = %err.with_causes(), "could not delete an abandoned lock node");
            }
        });
    }
}

/// Deletes our node `prefix…` under `lock_path`: at `node` when its create was confirmed, else
/// wherever a create of ours may have put it. Returns once ZooKeeper confirmed.
pub(crate) async fn delete_ours(client: &Client, lock_path: &str, prefix: &str, node: Option<&str>) -> Result<()> {
    let remains = match node {
        Some(path) => Remains::Created(path.to_owned()),
        None => Remains::MaybeCreated,
    };
    delete_remains(client, lock_path, prefix, &remains).await
}

async fn delete_remains(client: &Client, lock_path: &str, prefix: &str, remains: &Remains) -> Result<()> {
    let outcome = async {
        let path = match remains {
            Remains::Nothing => return Ok(()),
            Remains::Created(path) => path.clone(),
            Remains::MaybeCreated => match find_ours(client, lock_path, prefix).await? {
                Some(node) => node.path,
                None => return Ok(()),
            },
        };
        delete_node(client, &path).await.map(drop)
    };
    match outcome.await {
        // The session's end deleted the node.
        Err(Error::SessionExpired | Error::SessionClosed) => Ok(()),
        outcome => outcome,
    }
}
