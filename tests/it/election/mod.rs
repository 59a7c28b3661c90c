//! What the leader election tests share: participants on sessions of their own, the queue as
//! the server has it, and a selector whose closure hands each term out and leads until its future
//! is dropped.
#![allow(dead_code)] // each test binary uses its own subset

use std::future::Future;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};
use zklock::election::Leadership;
use zklock::{LeaderLatch, LeaderSelector};
use zklock_testcontainers::Proxy;
use zookeeper_client::Client;

use crate::common::{children, connect, connect_through, server, wait_for_children};

/// Generous bound for "promptly": a hang exceeds it, a slow machine does not.
pub const PROMPTLY: Duration = Duration::from_secs(10);

/// A started latch named `id` on its own session.
pub async fn started_latch(path: &str, id: &str) -> (Client, LeaderLatch) {
    let client = connect().await;
    let latch = LeaderLatch::new(&client, path, id).unwrap();
    latch.start().await.unwrap();
    (client, latch)
}

/// A session through a proxy, for `expire_session`.
pub async fn expirable_session() -> (Proxy, Client) {
    let proxy = Proxy::start(server().address()).unwrap();
    let client = connect_through(&proxy, Duration::from_secs(20)).await;
    (proxy, client)
}

/// A leader `a` on a session through a proxy of its own (a short session timeout, to be cut
/// off), and `b` started behind it on a session of its own, watched by `observer`.
pub struct LeaderToCutOff {
    pub proxy: Proxy,
    pub client: Client,
    pub a: LeaderLatch,
    pub a_term: Leadership,
    pub observer: Client,
    pub b: LeaderLatch,
}

/// `LeaderToCutOff`'s session timeout.
pub const CUT_OFF_SESSION: Duration = Duration::from_secs(4);

pub async fn leader_to_cut_off(path: &str) -> LeaderToCutOff {
    let proxy = Proxy::start(server().address()).unwrap();
    let client = connect_through(&proxy, CUT_OFF_SESSION).await;
    let a = LeaderLatch::new(&client, path, "a").unwrap();
    a.start().await.unwrap();
    let a_term = leads(&a).await;
    let (observer, b) = started_latch(path, "b").await;
    LeaderToCutOff { proxy, client, a, a_term, observer, b }
}

impl LeaderToCutOff {
    /// Cuts `a` off and closes it: `close()` must return Ok within a few session timeouts.
    pub async fn cut_off_and_close(&self) {
        self.proxy.cut();
        let closed =
            tokio::time::timeout(3 * CUT_OFF_SESSION, self.a.close()).await.expect("close() waited past the session");
        assert!(closed.is_ok(), "{closed:?}");
    }
}

pub async fn leads(latch: &LeaderLatch) -> Leadership {
    tokio::time::timeout(PROMPTLY, latch.await_leadership()).await.expect("no leadership").unwrap()
}

/// The full paths of the children of `path` in queue order: by sequence number, the text after
/// the last `-` (names start with a random uuid).
pub async fn nodes(client: &Client, path: &str) -> Vec<String> {
    let mut names = children(client, path).await;
    names.sort_by(|a, b| a.rsplit('-').next().cmp(&b.rsplit('-').next()));
    names.into_iter().map(|name| format!("{path}/{name}")).collect()
}

/// Latches `a`, `b` and `c` on sessions of their own, started in that order: `a` leads (its term
/// is returned), `b` and `c` queue behind it.
pub async fn a_leads_b_and_c_queue(path: &str) -> ([(Client, LeaderLatch); 3], Leadership) {
    let a = started_latch(path, "a").await;
    let a_term = leads(&a.1).await;
    let (b, c) = (started_latch(path, "b").await, started_latch(path, "c").await);
    ([a, b, c], a_term)
}

/// A term of a selector's leadership as the test sees it: the leadership, and a receiver that
/// resolves (with an error) once the leader's future has been dropped.
pub struct SelectorTerm {
    pub leadership: Leadership,
    pub future_dropped: oneshot::Receiver<()>,
}

impl SelectorTerm {
    /// Waits (bounded) until the leader's future is dropped.
    pub async fn expect_cancelled(self) -> Leadership {
        let outcome = tokio::time::timeout(PROMPTLY, self.future_dropped).await.expect("the lead future still runs");
        assert!(outcome.is_err(), "the guard is only ever dropped");
        self.leadership
    }
}

/// A lead closure whose future never ends by itself: it hands its term out and waits. Only
/// cancellation can drop the guard it holds.
pub fn lead_until_cancelled(
    terms: mpsc::UnboundedSender<SelectorTerm>,
) -> impl FnMut(Leadership) -> std::pin::Pin<Box<dyn Future<Output = ()> + Send>> + Send + 'static {
    move |leadership| {
        let terms = terms.clone();
        Box::pin(async move {
            let (guard, future_dropped) = oneshot::channel::<()>();
            let _ = terms.send(SelectorTerm { leadership, future_dropped });
            std::future::pending::<()>().await;
            drop(guard);
        })
    }
}

/// A started selector named `id` on `client`, and the terms its closure hands out.
pub async fn started_selector(
    client: &Client,
    path: &str,
    id: &str,
    auto_requeue: bool,
) -> (LeaderSelector, mpsc::UnboundedReceiver<SelectorTerm>) {
    let selector = LeaderSelector::builder(client, path, id).auto_requeue(auto_requeue).build().unwrap();
    let (sender, terms) = mpsc::unbounded_channel();
    selector.start(lead_until_cancelled(sender)).await.unwrap();
    (selector, terms)
}

pub async fn next_term(terms: &mut mpsc::UnboundedReceiver<SelectorTerm>) -> SelectorTerm {
    tokio::time::timeout(PROMPTLY, terms.recv()).await.expect("no leadership").expect("the selector ended")
}

/// A started selector on a session of its own.
pub struct Contender {
    pub client: Client,
    pub selector: LeaderSelector,
    pub terms: mpsc::UnboundedReceiver<SelectorTerm>,
}

/// A contender named `id`, alone, without auto-requeue, and its first term.
pub async fn lone_leader(path: &str, id: &str) -> (Contender, SelectorTerm) {
    let client = connect().await;
    let (selector, mut terms) = started_selector(&client, path, id, false).await;
    let term = next_term(&mut terms).await;
    (Contender { client, selector, terms }, term)
}

/// Two contenders named `leader` and `follower`, each with this auto-requeue: the leader leads
/// (its first term is returned), the follower is queued behind it.
pub async fn leader_and_follower(path: &str, auto_requeue: bool) -> (Contender, SelectorTerm, Contender) {
    let mut contenders = Vec::new();
    for id in ["leader", "follower"] {
        let client = connect().await;
        let (selector, terms) = started_selector(&client, path, id, auto_requeue).await;
        contenders.push(Contender { client, selector, terms });
    }
    let [mut leader, follower] = <[Contender; 2]>::try_from(contenders).ok().unwrap();
    let term = next_term(&mut leader.terms).await;
    wait_for_children(&leader.client, path, 2).await;
    (leader, term, follower)
}
