//! The leader recipes as locks under test: joining the election is queueing, a term of
//! leadership is a hold, its epoch the fencing token, leaving the election the release.

use std::future::Future;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};
use zklock::election::Leadership;
use zklock::hold::Hold;
use zklock::queue::QueueNode;
use zklock::{Error, LeaderLatch, LeaderSelector, LossPolicy, LossReason, NodeSchema, Result};
use zookeeper_client::Client;

use crate::contract::lock::{Held, LockUnderTest, WithLossPolicy};
use crate::contract::support::PROMPTLY;

/// Who may join an election on `path`: each acquire joins as a new participant of its own.
pub struct Candidate<E> {
    client: Client,
    path: String,
    policy: LossPolicy,
    election: PhantomData<fn() -> E>,
}

/// A leader latch: each acquire makes, starts and awaits a new `LeaderLatch`.
pub type Latch = Candidate<LeaderLatch>;

/// A leader selector: each acquire starts a new `LeaderSelector` whose closure hands its term out.
pub type Selector = Candidate<SelectorRun>;
/// The same in kazoo's layout (a kazoo `Election`'s nodes).
pub type KazooSelector = Candidate<SelectorRun<true>>;

/// One participant's membership of an election, as each recipe offers it.
pub trait Election: Sized + Send + Sync + 'static {
    /// Makes a participant named `id` and enters it: returns once its node is queued.
    fn join(client: &Client, path: &str, id: &str, policy: LossPolicy) -> impl Future<Output = Result<Self>> + Send;
    /// Waits for leadership, for at most `timeout` when one is given.
    fn term(&mut self, timeout: Option<Duration>) -> impl Future<Output = Result<Option<Leadership>>> + Send + '_;
    fn leader(&self) -> impl Future<Output = Result<Option<QueueNode>>> + Send + '_;
    /// Leaves the election (ending the term, if one is held).
    fn leave(self) -> impl Future<Output = Result<()>> + Send;
}

/// A term of leadership, with the participant that holds it.
pub struct Term<E> {
    election: E,
    leadership: Leadership,
}

impl<E: Election> Held for Term<E> {
    fn release(self) -> impl Future<Output = Result<()>> + Send {
        self.election.leave()
    }
    fn is_held(&self) -> bool {
        self.leadership.is_held()
    }
    /// A term given up is not lost: pending then, as a released lock's `lost()`.
    async fn lost(&self) -> LossReason {
        match self.leadership.ended().await.loss() {
            Some(reason) => reason,
            None => std::future::pending().await,
        }
    }
    fn fencing_token(&self) -> i64 {
        self.leadership.fencing_token()
    }
    fn node_paths(&self) -> Vec<String> {
        vec![self.leadership.node_path().to_owned()]
    }
    /// Leaving reports only what ended the election by itself, the session's expiry: after any
    /// other loss the participant lives on (a latch queued again, a selector waits for requeue)
    /// and leaves cleanly.
    fn release_reports_loss(released: &Result<()>, reason: LossReason) -> bool {
        match reason {
            LossReason::SessionExpired => matches!(released, Err(Error::SessionExpired)),
            _ => released.is_ok(),
        }
    }
}

/// An id no other participant of this test binary has: `leader()` names the leader by id.
fn fresh_id() -> String {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    format!("candidate-{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed))
}

impl<E: Election> Candidate<E> {
    fn new(client: &Client, path: &str, policy: LossPolicy) -> Self {
        Candidate { client: client.clone(), path: path.to_owned(), policy, election: PhantomData }
    }

    async fn join(&self) -> Result<(E, String)> {
        let id = fresh_id();
        let election = E::join(&self.client, &self.path, &id, self.policy).await?;
        Ok((election, id))
    }

    /// The term if `election` got one; otherwise it leaves, so that no node stays behind.
    async fn term_or_leave(mut election: E, timeout: Option<Duration>) -> Result<Option<Term<E>>> {
        match election.term(timeout).await {
            Ok(Some(leadership)) => Ok(Some(Term { election, leadership })),
            Ok(None) => election.leave().await.map(|()| None),
            Err(err) => {
                let _ = election.leave().await;
                Err(err)
            }
        }
    }
}

impl<E: Election> LockUnderTest for Candidate<E> {
    type Held = Term<E>;

    fn make(client: &Client, path: &str) -> Self {
        Candidate::new(client, path, LossPolicy::default())
    }

    async fn acquire(&self) -> Result<Term<E>> {
        let (election, _) = self.join().await?;
        Ok(Self::term_or_leave(election, None).await?.expect("an unbounded wait has no timeout"))
    }

    /// The deadline covers joining too, as a lock's covers its create.
    async fn acquire_timeout(&self, timeout: Duration) -> Result<Option<Term<E>>> {
        let deadline = tokio::time::Instant::now() + timeout;
        let (election, _) = self.join().await?;
        Self::term_or_leave(election, Some(deadline.saturating_duration_since(tokio::time::Instant::now()))).await
    }

    /// The recipes have no try: join, ask the server once who leads (as a lock's try lists
    /// once), and leave unless it is us. A short timeout instead would race the recipe's own
    /// first look at the queue and fail a free lock.
    async fn try_acquire(&self) -> Result<Option<Term<E>>> {
        let (election, id) = self.join().await?;
        let ours = matches!(election.leader().await, Ok(Some(leader)) if leader.id() == id);
        if !ours {
            return election.leave().await.map(|()| None);
        }
        let term = Self::term_or_leave(election, Some(PROMPTLY)).await?;
        assert!(term.is_some(), "the server names {id} leader, its recipe did not see it within {PROMPTLY:?}");
        Ok(term)
    }
}

impl<E: Election> WithLossPolicy for Candidate<E> {
    fn with_loss_policy(client: &Client, path: &str, policy: LossPolicy) -> Self {
        Candidate::new(client, path, policy)
    }
}

impl Election for LeaderLatch {
    async fn join(client: &Client, path: &str, id: &str, policy: LossPolicy) -> Result<Self> {
        let latch =
            LeaderLatch::builder(client, path, id).options(zklock::LockOptions::new().loss_policy(policy)).build()?;
        latch.start().await?;
        Ok(latch)
    }

    async fn term(&mut self, timeout: Option<Duration>) -> Result<Option<Leadership>> {
        match timeout {
            Some(timeout) => self.await_leadership_timeout(timeout).await,
            None => self.await_leadership().await.map(Some),
        }
    }

    fn leader(&self) -> impl Future<Output = Result<Option<QueueNode>>> + Send + '_ {
        LeaderLatch::leader(self)
    }

    async fn leave(self) -> Result<()> {
        self.close().await
    }
}

/// A started `LeaderSelector` whose closure sends each term out with a way to end it, then
/// leads until told to end (or until the selector cancels it); in kazoo's layout when `KAZOO`.
pub struct SelectorRun<const KAZOO: bool = false> {
    selector: LeaderSelector,
    terms: mpsc::UnboundedReceiver<(Leadership, oneshot::Sender<()>)>,
    /// Ends the current term; dropped, it ends it too.
    end: Option<oneshot::Sender<()>>,
}

impl<const KAZOO: bool> Election for SelectorRun<KAZOO> {
    async fn join(client: &Client, path: &str, id: &str, policy: LossPolicy) -> Result<Self> {
        let schema = if KAZOO { NodeSchema::Kazoo } else { NodeSchema::Curator };
        let selector = LeaderSelector::builder(client, path, id)
            .node_schema(schema)
            .options(zklock::LockOptions::new().loss_policy(policy))
            .build()?;
        let (sender, terms) = mpsc::unbounded_channel();
        selector
            .start(move |leadership| {
                let sender = sender.clone();
                async move {
                    let (end, ended) = oneshot::channel();
                    if sender.send((leadership, end)).is_ok() {
                        let _ = ended.await;
                    }
                }
            })
            .await?;
        Ok(SelectorRun { selector, terms, end: None })
    }

    async fn term(&mut self, timeout: Option<Duration>) -> Result<Option<Leadership>> {
        let next = match timeout {
            Some(timeout) => match tokio::time::timeout(timeout, self.terms.recv()).await {
                Ok(next) => next,
                Err(_elapsed) => return Ok(None),
            },
            None => self.terms.recv().await,
        };
        match next {
            Some((leadership, end)) => {
                self.end = Some(end);
                Ok(Some(leadership))
            }
            // The selector ended by itself, and dropped the closure: close says why.
            None => Err(self.selector.close().await.err().unwrap_or(Error::ElectionClosed)),
        }
    }

    fn leader(&self) -> impl Future<Output = Result<Option<QueueNode>>> + Send + '_ {
        self.selector.leader()
    }

    async fn leave(self) -> Result<()> {
        if let Some(end) = self.end {
            let _ = end.send(());
        }
        self.selector.close().await
    }
}
