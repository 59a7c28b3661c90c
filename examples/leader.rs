//! Leader election: three services in one process (each with its own ZooKeeper session), first
//! with a `LeaderLatch`, then with a `LeaderSelector` that takes turns.
//!
//! Run it with `scripts/example leader` (or `cargo run --example leader`, with
//! `ZK_CONNECT=host:port` to use your own ZooKeeper). It takes a few seconds.
//!
//! The latch: `a` leads first and writes to a store that refuses tokens lower than the highest it
//! has seen (the token is a fencing token). Its node is deleted under it: `lost()` stops its work
//! at once, its latch joins the queue again, and `b` then `c` lead and step down. `a` leads again
//! with a higher token. `c`'s subscription tells each change of where it stands (queued, leading
//! with its token, left) as it happens, without polling. Then a leader's session expires: the latch cannot join again, and a new
//! client with a new latch leads; a latch built on a `Session` does that by itself. The selector: each leader's closure leads for a moment and
//! returns, and `auto_requeue` puts it back in the queue, so leadership goes round; the third
//! leader's node is deleted mid-term, and its closure's future, which watches `ended()`, is
//! dropped at once.

mod support;

use std::net::ToSocketAddrs;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{watch, Notify};
use tokio::task::JoinHandle;
use zklock::election::{ElectionState, Leadership};
use zklock::hold::Hold;
use zklock::Client;
use zklock::{LeaderLatch, LeaderSelector, Session};
use zklock_testcontainers::{expire_session, Proxy};

const LATCH_PATH: &str = "/examples/election/report-writer";
const EXPIRY_PATH: &str = "/examples/election/expiring";
const SELECTOR_PATH: &str = "/examples/election/rotating-duty";
const NAMES: [&str; 3] = ["a", "b", "c"];

/// What the leader writes to: it remembers the highest token it has seen and refuses lower ones,
/// so a leader that lost leadership without noticing cannot overwrite its successor's work.
#[derive(Default)]
struct FencedStore {
    highest_token: AtomicI64,
}

impl FencedStore {
    fn write(&self, token: i64, value: &str) -> Result<(), String> {
        let highest = self.highest_token.fetch_max(token, Ordering::SeqCst);
        if token < highest {
            return Err(format!("refused {value:?}: token {token} is older than {highest}"));
        }
        println!("    store accepted {value:?} (token {token})");
        Ok(())
    }
}

/// The leader's work: a few writes, each fenced by the leadership's token.
async fn lead(name: &str, leadership: &Leadership, store: &FencedStore, wrote: &Notify) {
    for step in 1..=3 {
        if let Err(refusal) = store.write(leadership.fencing_token(), &format!("{name}: report part {step}")) {
            println!("    {refusal}");
            return;
        }
        wrote.notify_one();
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (connect, _server) = support::zookeeper().await?;
    // Bounded: an example that waits for ever helps nobody.
    tokio::time::timeout(Duration::from_secs(60), async {
        latch(&connect).await?;
        expiry(&connect).await?;
        selector(&connect).await
    })
    .await??;
    Ok(())
}

async fn latch(connect: &str) -> Result<(), Box<dyn std::error::Error>> {
    println!("-- LeaderLatch on {LATCH_PATH}");
    let store = Arc::new(FencedStore::default());
    let wrote = Arc::new(Notify::new());
    let (mut latches, mut reporters) = (Vec::new(), Vec::new());
    for name in NAMES {
        let client = Client::connect(connect).await?;
        let latch = Arc::new(LeaderLatch::new(&client, LATCH_PATH, name)?);
        if name == "c" {
            reporters.push(report_states(name, latch.subscribe()));
        }
        latch.start().await?; // one after the other: `a` is first in the queue
        latches.push(latch);
    }
    let mut services = Vec::new();
    for (name, latch) in NAMES.into_iter().zip(&latches) {
        let (latch, store, wrote) = (Arc::clone(latch), Arc::clone(&store), Arc::clone(&wrote));
        services.push(tokio::spawn(async move {
            let mut terms = 0;
            loop {
                let leadership = latch.await_leadership().await?;
                println!("{name} leads, token {}", leadership.fencing_token());
                tokio::select! {
                    end = leadership.ended() => println!("{name}: {end}; stops its work"),
                    () = lead(name, &leadership, &store, &wrote) => terms += 1,
                }
                if terms == 1 {
                    println!("{name} steps down");
                    latch.close().await?;
                    return Ok::<_, zklock::Error>(());
                }
            }
        }));
    }

    // `a` leads; delete its node under it, as an operator (or an expired session) would.
    wrote.notified().await;
    let admin = Client::connect(connect).await?;
    let leader = latches[0].leader().await?.ok_or("nobody leads")?;
    let first_token = latches[0].leadership().ok_or("a does not lead")?.fencing_token();
    println!("admin deletes {}'s node {}", leader.id(), leader.node_path);
    admin.delete(&leader.node_path, None).await?;

    for service in services {
        service.await??;
    }
    for reporter in reporters {
        reporter.await?;
    }
    // A leader that ignored lost() and writes late with its old token is refused.
    if let Err(refusal) = store.write(first_token, "a: late write from its first term") {
        println!("    {refusal}");
    }
    Ok(())
}

/// Prints what `name`'s subscription tells until it has left: a service reacting to leadership
/// without polling (Curator's `LeaderLatchListener`).
fn report_states(name: &'static str, mut states: watch::Receiver<ElectionState>) -> JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            let state = states.borrow_and_update().clone();
            match state {
                ElectionState::Queued => println!("    ({name}'s subscription: queued)"),
                ElectionState::Leading(term) => {
                    println!("    ({name}'s subscription: leading, token {})", term.fencing_token())
                }
                ElectionState::Left => return println!("    ({name}'s subscription: left)"),
                _ => {}
            }
            if states.changed().await.is_err() {
                return;
            }
        }
    })
}

async fn expiry(connect: &str) -> Result<(), Box<dyn std::error::Error>> {
    println!("-- A leader whose session expires, on {EXPIRY_PATH}");
    let first_server = connect.split(',').next().unwrap_or_default().to_socket_addrs()?.next().ok_or("no address")?;
    // Through a proxy, so that the harness can expire the session at once.
    let proxy = Proxy::start(first_server)?;
    let client = Client::connect(&proxy.connect_string()).await?;
    let latch = LeaderLatch::new(&client, EXPIRY_PATH, "d")?;
    latch.start().await?;
    let leadership = latch.await_leadership().await?;
    println!("d leads, token {}", leadership.fencing_token());
    expire_session(&client, &proxy).await?;
    println!("d's session expired; lost() says: {}", leadership.ended().await);
    match latch.await_leadership().await {
        Err(zklock::Error::SessionExpired) => println!("await_leadership() returns Error::SessionExpired"),
        other => return Err(format!("expected SessionExpired, got {other:?}").into()),
    }
    // A session cannot be renewed: a new client, and a new latch on it.
    let client = Client::connect(connect).await?;
    let latch = LeaderLatch::new(&client, EXPIRY_PATH, "d")?;
    latch.start().await?;
    let leadership = latch.await_leadership().await?;
    println!("d leads again with a new client and latch, token {}", leadership.fencing_token());
    latch.close().await?;

    // Or the latch is built on a Session, which connects the new client itself, and joins
    // again, as Curator's does.
    let client = Client::connect(&proxy.connect_string()).await?;
    let fresh_session = connect.to_owned();
    let session = Session::from_client(client.clone(), move || {
        let fresh_session = fresh_session.clone();
        async move { Client::connect(&fresh_session).await }
    })?;
    let latch = LeaderLatch::new(&session, EXPIRY_PATH, "e")?;
    latch.start().await?;
    let first = latch.await_leadership().await?;
    println!("e (built on a Session) leads, token {}", first.fencing_token());
    expire_session(&client, &proxy).await?;
    println!("e's session expired; lost() says: {}", first.ended().await);
    let second = latch.await_leadership().await?;
    println!("e rejoined on a new session by itself and leads again, token {}", second.fencing_token());
    latch.close().await?;
    Ok(())
}

/// Says so when the leader's work is dropped before it finished.
struct Unfinished(Option<String>);

impl Drop for Unfinished {
    fn drop(&mut self) {
        if let Some(message) = self.0.take() {
            println!("{message}");
        }
    }
}

async fn selector(connect: &str) -> Result<(), Box<dyn std::error::Error>> {
    println!("-- LeaderSelector with auto_requeue on {SELECTOR_PATH}");
    let terms = Arc::new(AtomicUsize::new(0));
    let (third_term, enough) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
    let mut selectors = Vec::new();
    for name in NAMES {
        let client = Client::connect(connect).await?;
        let selector = LeaderSelector::builder(&client, SELECTOR_PATH, name).auto_requeue(true).build()?;
        let (terms, third_term, enough) = (Arc::clone(&terms), Arc::clone(&third_term), Arc::clone(&enough));
        // Leadership lasts as long as the closure's future; it is dropped if leadership is lost.
        selector
            .start(move |leadership: Leadership| {
                let (terms, third_term, enough) = (Arc::clone(&terms), Arc::clone(&third_term), Arc::clone(&enough));
                async move {
                    let term = terms.fetch_add(1, Ordering::SeqCst) + 1;
                    println!(
                        "{name} leads (term {term}, token {}, node {})",
                        leadership.fencing_token(),
                        leadership.node_path()
                    );
                    let mut unfinished = Unfinished(Some(format!("{name}'s work was dropped mid-term")));
                    let work = if term == 3 {
                        third_term.notify_one(); // its node is about to be deleted
                        Duration::from_secs(20)
                    } else {
                        Duration::from_millis(200)
                    };
                    tokio::select! {
                        () = tokio::time::sleep(work) => {}
                        // Watching its own term sets the watch on its node at once, so that a
                        // deletion is seen within a round trip (otherwise after a second); the
                        // selector drops this future the moment it is.
                        _ = leadership.ended() => return,
                    }
                    unfinished.0 = None;
                    println!("{name} gives leadership up and queues again");
                    if term == 6 {
                        enough.notify_one();
                    }
                }
            })
            .await?;
        selectors.push(selector);
    }
    third_term.notified().await;
    let leader = selectors[0].leader().await?.ok_or("nobody leads")?;
    println!("admin deletes {}'s node", leader.id());
    Client::connect(connect).await?.delete(&leader.node_path, None).await?;
    enough.notified().await;
    for selector in &selectors {
        selector.close().await?;
    }
    println!("all selectors closed after {} terms", terms.load(Ordering::SeqCst));
    Ok(())
}
