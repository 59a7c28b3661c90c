//! Our node in the queue: `QueueSpec`, its protected create, and what an acquire may leave of it.
//!
//! The create is pipelined with what the opening asks for. After a lost reply the node is found
//! again by its protected prefix (for the create, and for its cleanup); on every way out of an
//! acquire that did not hold, what may exist of it is deleted: awaited on timeout and error,
//! spawned when the acquire is dropped (`NodeCleanup`). The cleanup's requests never give up
//! while the session lives, whatever the retry policy's bound: a cleanup that gave up would leave
//! a node that keeps the queue waiting. A held node's delete is `delete.rs`'s.
use std::borrow::Cow;
use std::sync::Arc;
use std::time::Instant;

use zookeeper_client::{Acl, Acls, Client, CreateMode, CreateOptions, CreateSequence, Error as ZkError, Stat};

use super::delete::delete_node;
use crate::client::background;
use crate::client::deadline::{within, CLEANUP_AFTER_DEADLINE};
use crate::client::retry::{is_connection_loss, is_transient, retry_transient, Backoff, Retries, RetryPolicy};
use crate::error::{Error, LossReason, Result};
use crate::options::{AclProvider, DeadlockCheck};
use crate::rules::decide::Rule;
use crate::rules::entry::Level;
use crate::rules::naming::{sequential_name, Protection, Schema};
use crate::rules::opening::{alone_proof, Opening, Ours, Proof};
use crate::rules::owner_tag::NodeMark;
use crate::rules::path::{child_path, concat};

/// Which queue, and how our node in it looks.
#[derive(Debug)]
pub(crate) struct QueueSpec<'a> {
    pub(crate) client: &'a Client,
    /// How the acquire's requests are retried (bounded, if the policy is), and, without its
    /// bound, the requests of its cleanup and of its hold.
    pub(crate) retry: RetryPolicy,
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
    /// `data` under the provider's ACLs, its requests retried as `retry` says; it opens with a listing, sorts by its own sequence
    /// number, and tells nobody its place (what a recipe may set otherwise).
    pub(crate) fn new(
        client: &'a Client,
        retry: RetryPolicy,
        lock_path: &'a str,
        schema: Schema,
        rule: Rule,
        data: &'a [u8],
        acls: &'a AclProvider,
    ) -> Self {
        QueueSpec {
            client,
            retry,
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
/// once ZooKeeper confirmed the create, and how its delete is retried (never giving up).
#[derive(Clone, Debug)]
pub(crate) struct Place {
    pub(crate) prefix: Arc<str>,
    pub(crate) node: Option<Arc<str>>,
    pub(crate) retry: RetryPolicy,
}

impl Place {
    /// Deletes what may exist of this node (found by its prefix if its create was not
    /// confirmed; every request of ours, that create too, runs in order) and waits for
    /// ZooKeeper to confirm. A session that ended took the node with it.
    pub(crate) async fn delete(&self, client: &Client, lock_path: &str) -> Result<()> {
        delete_ours(client, self.retry, lock_path, &self.prefix, self.node.as_deref()).await
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
    /// How the requests about it are paced once it is ours: the acquire's pacing (they never
    /// give up: a delete that gave up would leave the node behind). The pacing alone, not the
    /// whole policy: the node is moved from step to step of every acquire.
    pacing: Backoff,
}

impl LockNode {
    pub(crate) fn new(lock_path: &str, name: &str, czxid: i64, sequence: Option<i64>, retry: RetryPolicy) -> Self {
        LockNode::at(child_path(lock_path, name), lock_path.len() + 1, czxid, sequence, retry)
    }

    /// The node at `path`, whose name starts at byte `name_at`.
    fn at(path: String, name_at: usize, czxid: i64, sequence: Option<i64>, retry: RetryPolicy) -> Self {
        LockNode { path, name_at, czxid, sequence, pacing: retry.backoff() }
    }

    /// How the requests about it are retried: its pacing, never giving up.
    pub(crate) fn retry(&self) -> RetryPolicy {
        RetryPolicy::never_giving_up(self.pacing)
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
    /// Such a listing already put in queue order by the rule (the first look's decision sorted
    /// it): the wait decides from it without sorting it again.
    Queued(Vec<String>),
    /// Nothing yet: list.
    Nothing,
    /// Our node alone in the queue, as the create proved it ([`Proof::Held`], the uncontended
    /// shortcut): it holds, as a listing of our node alone would say, with none built.
    Alone,
}

/// Creates our node as `{prefixed}{seq}`, `prefixed` being `{lock_path}/{prefix}` (or
/// `{prefixed}{key}` for a node that sorts level with another, `spec.level_with`) and, in the
/// same round trip, sends what `spec.opening` asks for: a listing of the queue, or nothing (the
/// uncontended shortcut). Returns the node, what came back with it, and whether the create
/// proved it alone (then the first look is [`FirstLook::Alone`]).
///
/// Both requests are sent before either is awaited; the server runs a session's requests in
/// order, so the list already shows our node. Missing parents are created (see
/// [`create_parents`]). After a `ConnectionLoss` on the create, the node is looked for by its protected prefix and taken only if our session owns it
/// (CURATOR-498); else the create is sent again. Each lost or throttled create counts toward
/// the retry policy's bound: once it is spent, the create's last error is returned.
///
/// `cleanup` is kept up to date so that whatever happens to this future, the node can be found
/// and deleted.
pub(crate) async fn create_node(
    spec: &QueueSpec<'_>,
    prefixed: &str,
    cleanup: &mut NodeCleanup<'_>,
) -> Result<(LockNode, FirstLook, Proof)> {
    let prefix = &prefixed[spec.lock_path.len() + 1..];
    let (create_path, mode) = match spec.level_with {
        Some(level) => (Cow::Owned(concat(&[prefixed, level.key])), CreateMode::Ephemeral),
        None => (Cow::Borrowed(prefixed), CreateMode::EphemeralSequential),
    };
    let acls = Acls::new(spec.acls);
    let options = mode.with_acls(acls);
    let mut retries = Retries::new(spec.retry);
    loop {
        cleanup.remains = Remains::MaybeCreated;
        // Taken apart at once, and what only a created node needs dropped before a rare step's
        // await: a reply kept across those awaits would sit beside the create's future in
        // every acquire's state (336 bytes, which every level above carries and copies).
        let CreateReplies { created, mut listed, mut beside } = send_create(spec, &create_path, &options).await;
        let node = match created {
            Ok((stat, _)) if spec.level_with.is_some() => {
                LockNode::new(spec.lock_path, &create_path[spec.lock_path.len() + 1..], stat.czxid, None, spec.retry)
            }
            Ok((stat, sequence)) => {
                let sequence = sequence.into_i64();
                let path = sequential_name(&create_path, sequence);
                LockNode::at(path, spec.lock_path.len() + 1, stat.czxid, Some(sequence), spec.retry)
            }
            Err(ZkError::NoNode) => {
                drop((listed, beside));
                cleanup.remains = Remains::Nothing;
                // Boxed, as the other rare steps below: every acquire's state would carry them.
                Box::pin(create_parents(
                    spec.client,
                    spec.retry,
                    spec.lock_path,
                    spec.schema,
                    Acls::new(spec.parent_acls),
                ))
                .await?;
                continue;
            }
            Err(err) if is_connection_loss(&err) => {
                // Sent behind the create on the connection that was lost: lost with it.
                drop((listed, beside));
                match Box::pin(find_ours(spec.client, spec.retry, spec.lock_path, prefix)).await? {
                    Some((name, czxid)) => {
                        (listed, beside) = (None, None);
                        LockNode::new(spec.lock_path, &name, czxid, None, spec.retry)
                    }
                    // Found again at once (the search took its round trips): no pause.
                    None if retries.failed().is_some() => continue,
                    None => return Err(Error::zookeeper("create", &create_path, err)),
                }
            }
            Err(ZkError::Throttled) => {
                drop((listed, beside));
                // Refused unrun: nothing was created.
                cleanup.remains = Remains::Nothing;
                if retries.pause().await {
                    continue;
                }
                return Err(Error::zookeeper("create", &create_path, ZkError::Throttled));
            }
            Err(err) => {
                cleanup.remains = Remains::Nothing;
                return Err(Error::zookeeper("create", &create_path, err));
            }
        };
        cleanup.remains = match node.sequence {
            Some(sequence) if spec.level_with.is_none() => Remains::Sequential(sequence),
            // A level node, or one found again after a lost reply: named otherwise.
            _ => Remains::Created(node.path.clone()),
        };
        if let Some(level) = spec.level_with {
            Box::pin(stands_beside(spec.client, spec.retry, level, beside)).await?;
        }
        let proof = alone_proof(&spec.opening, node.sequence, node.czxid);
        let look = match proof {
            Proof::Held => FirstLook::Alone,
            Proof::NotTried | Proof::Missed => first_look(&node, listed, spec.lock_path)?,
        };
        return Ok((node, look, proof));
    }
}

/// The reply to a listing sent with our create.
type Listed = std::result::Result<Vec<String>, ZkError>;

/// The replies to a create and what went with it.
struct CreateReplies {
    created: std::result::Result<(Stat, CreateSequence), ZkError>,
    listed: Option<Listed>,
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
    retry: RetryPolicy,
    level: Level<'_>,
    beside: Option<std::result::Result<Option<Stat>, ZkError>>,
) -> Result<()> {
    let found = match beside {
        Some(Ok(found)) => found,
        _ => retry_transient(retry, || client.check_stat(level.node)).await.map_err(Error::on("read", level.node))?,
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
    // Boxed, the request of a rarer acquire (a downgrade's read beside): every create's state
    // would carry its future.
    let beside = spec.level_with.map(|level| Box::pin(spec.client.check_stat(level.node)));
    let created = create.await;
    let listed = match list {
        Some(list) => Some(list.await),
        None => None,
    };
    let beside = match beside {
        Some(beside) => Some(beside.await),
        None => None,
    };
    CreateReplies { created, listed, beside }
}

/// What the replies sent with our create tell of the queue.
fn first_look(node: &LockNode, listed: Option<Listed>, lock_path: &str) -> Result<FirstLook> {
    Ok(match listed {
        Some(Ok(children)) if children.iter().any(|child| child == node.name()) => FirstLook::Listing(children),
        // (`NoNode`: the lock path went, and our node with it; the listing below says so.)
        Some(Err(err)) if !is_transient(&err) && err != ZkError::NoNode => {
            return Err(Error::zookeeper("list", lock_path, err))
        }
        // No listing, a lost one, or one that (after a ConnectionLoss) ran before the create:
        // list.
        _ => FirstLook::Nothing,
    })
}

/// Lists the children of `lock_path`, retrying what is transient as `retry` says.
pub(crate) async fn list_children(client: &Client, retry: RetryPolicy, lock_path: &str) -> Result<Vec<String>> {
    retry_transient(retry, || client.list_children(lock_path)).await.map_err(Error::on("list", lock_path))
}

/// Creates the lock path and its missing parents: containers, as Curator makes them (the server
/// deletes them once empty), but persistent for a kazoo-schema lock, as kazoo's `ensure_path`
/// makes them: kazoo ensures a lock's path once per lock object, and its next create under a
/// reaped container would fail with `NoNodeError`.
async fn create_parents(
    client: &Client,
    retry: RetryPolicy,
    lock_path: &str,
    schema: Schema,
    acls: Acls<'_>,
) -> Result<()> {
    let mode = match schema.protection {
        Protection::Curator => CreateMode::Container,
        Protection::Kazoo => CreateMode::Persistent,
    };
    let options = mode.with_acls(acls);
    retry_transient(retry, || client.mkdir(lock_path, &options))
        .await
        .map_err(Error::on("create parents of", lock_path))
}

/// Finds the node created with `prefix` under `lock_path` by this session, if any: its name and
/// czxid.
///
/// After a lost reply the client may have reconnected to a server that has not applied our
/// create yet; a listing there would miss the node, and we would create a second one and wait
/// behind the first for ever. A `sync` first brings that server up to date with the leader.
pub(crate) async fn find_ours(
    client: &Client,
    retry: RetryPolicy,
    lock_path: &str,
    prefix: &str,
) -> Result<Option<(String, i64)>> {
    match retry_transient(retry, || client.sync(lock_path)).await {
        Ok(()) | Err(ZkError::NoNode) => {}
        Err(err) => return Err(Error::zookeeper("sync", lock_path, err)),
    }
    let children = match retry_transient(retry, || client.list_children(lock_path)).await {
        Err(ZkError::NoNode) => return Ok(None),
        other => other.map_err(Error::on("list", lock_path))?,
    };
    let Some(name) = children.into_iter().find(|child| child.starts_with(prefix)) else {
        return Ok(None);
    };
    let czxid = czxid_if_ours(client, retry, &child_path(lock_path, &name)).await?;
    Ok(czxid.map(|czxid| (name, czxid)))
}

/// The czxid of the node at `path` if this session owns it (an ephemeral node of ours), `None`
/// when it is gone or another session's: how a create whose reply was lost, or that found the
/// name taken, tells whether the node is ours.
pub(crate) async fn czxid_if_ours(client: &Client, retry: RetryPolicy, path: &str) -> Result<Option<i64>> {
    let stat = retry_transient(retry, || client.check_stat(path)).await.map_err(Error::on("stat", path))?;
    Ok(stat.filter(|stat| stat.ephemeral_owner == client.session_id().0).map(|stat| stat.czxid))
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
    /// The node exists, created with our prefix under the lock path and given this sequence
    /// number: the usual create's, whose path is only written out if it must be deleted (an
    /// acquire that holds copies nothing for its cleanup).
    Sequential(i64),
}

/// Deletes a half-acquired node: awaited on timeout and error, spawned when dropped.
///
/// Armed before the create is sent, so a dropped acquire future leaves no node behind.
///
/// It borrows what names the node: only a cleanup that is dropped with work left copies it,
/// for the task it spawns (an acquire that holds pays for no copy).
#[derive(Debug)]
pub(crate) struct NodeCleanup<'a> {
    client: &'a Client,
    /// The acquire's pacing, never giving up: a cleanup that gave up would leave the node.
    retry: RetryPolicy,
    lock_path: &'a str,
    prefix: &'a str,
    pub(crate) remains: Remains,
}

impl<'a> NodeCleanup<'a> {
    pub(crate) fn new(client: &'a Client, retry: RetryPolicy, lock_path: &'a str, prefix: &'a str) -> Self {
        NodeCleanup { client, retry: retry.without_bound(), lock_path, prefix, remains: Remains::Nothing }
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
            // Boxed: a delete, perhaps after a search by prefix, is a large state machine that
            // only an acquire that did not hold runs, and every acquire's would carry it.
            within(grace, Box::pin(self.run())).await;
        }
        outcome
    }

    /// Deletes what may exist of our node. Failures are logged: a session that ended took the
    /// node with it.
    ///
    /// Cancel safe: what remains is cleared only once the work is done, so a dropped `run` is
    /// finished by `Drop`.
    pub(crate) async fn run(&mut self) {
        delete_remains_or_warn(self.client, self.retry, self.lock_path, self.prefix, &self.remains).await;
        self.remains = Remains::Nothing;
    }
}

impl Drop for NodeCleanup<'_> {
    fn drop(&mut self) {
        let remains = std::mem::replace(&mut self.remains, Remains::Nothing);
        if remains == Remains::Nothing {
            return;
        }
        // The spawned future owns plain data, not a NodeCleanup: a runtime that is shutting down
        // drops it unpolled, and that must not spawn again.
        let (client, retry, lock_path, prefix) =
            (self.client.clone(), self.retry, self.lock_path.to_owned(), self.prefix.to_owned());
        let pending = background::Pending::begin(client.session_timeout());
        background::spawn(async move {
            let _pending = pending;
            delete_remains_or_warn(&client, retry, &lock_path, &prefix, &remains).await;
        });
    }
}

/// [`delete_remains`] for a cleanup, which has no caller to tell: a failure is logged (a session
/// that ended took the node with it).
async fn delete_remains_or_warn(client: &Client, retry: RetryPolicy, lock_path: &str, prefix: &str, remains: &Remains) {
    if let Err(err) = delete_remains(client, retry, lock_path, prefix, remains).await {
        tracing::warn!(%lock_path, error = %err.with_causes(), "could not delete an abandoned lock node");
    }
}

/// Deletes our node `prefix…` under `lock_path`: at `node` when its create was confirmed, else
/// wherever a create of ours may have put it. Returns once ZooKeeper confirmed: it never gives
/// up while the session lives, whatever `retry`'s bound.
pub(crate) async fn delete_ours(
    client: &Client,
    retry: RetryPolicy,
    lock_path: &str,
    prefix: &str,
    node: Option<&str>,
) -> Result<()> {
    let remains = match node {
        Some(path) => Remains::Created(path.to_owned()),
        None => Remains::MaybeCreated,
    };
    delete_remains(client, retry, lock_path, prefix, &remains).await
}

async fn delete_remains(
    client: &Client,
    retry: RetryPolicy,
    lock_path: &str,
    prefix: &str,
    remains: &Remains,
) -> Result<()> {
    let retry = retry.without_bound();
    let outcome = async {
        let path = match remains {
            Remains::Nothing => return Ok(()),
            Remains::Created(path) => path.clone(),
            Remains::Sequential(sequence) => sequential_name(&child_path(lock_path, prefix), *sequence),
            Remains::MaybeCreated => match find_ours(client, retry, lock_path, prefix).await? {
                Some((name, _)) => child_path(lock_path, &name),
                None => return Ok(()),
            },
        };
        delete_node(client, retry, &path).await.map(drop)
    };
    match outcome.await {
        // The session's end deleted the node.
        Err(Error::SessionExpired | Error::SessionClosed) => Ok(()),
        outcome => outcome,
    }
}
