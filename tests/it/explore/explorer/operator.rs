//! The operations that are not a task's: the operator deleting queue nodes (one, a waiter with
//! the node it waits for in one transaction, a whole queue as `deleteall` does), revocation
//! requests answered by their holders, and the faults (expiry, cut, heal, a `Session` made
//! from an expired client, a server restart).

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use zklock::hold::Hold;
use zklock::session::ConnectionState;
use zklock::Session;
use zklock_testcontainers::{expire_session, Proxy};
use zookeeper_client::SessionState;

use super::ops::{Deletion, Lock, ACTORS};
use super::world::{connect_through, Actor, Held, Locks, On, SessionView, SESSION_TIMEOUT};
use super::World;
use crate::common::children;

/// How long clients may take to be back (or told their session expired) after a restart: the
/// session timeout, past which the server expires them, and a second to hear it.
const BACK_WITHIN: Duration = Duration::from_secs(SESSION_TIMEOUT.as_secs() + 1);

/// How long the observer may take to answer after a restart: its own session timeout (20 s,
/// `common::connect_to`) and a second. Its client paces its reconnects by doubling pauses up to
/// what is left of that timeout, so after a restart that took a few seconds under load its next
/// try may come seconds after the server is back: no property of the explorer's clients, whose
/// 4 s sessions cap their pauses at `BACK_WITHIN`.
const OBSERVER_BACK_WITHIN: Duration = Duration::from_secs(21);

/// How long a holder asked to let go may take to hear it.
const REVOCATION_HEARD: Duration = Duration::from_secs(2);

impl World<'_> {
    /// The nodes of `lock`'s holds under way (not re-entries), or of an election's terms, with
    /// who holds each.
    fn holder_nodes(&self, lock: Lock) -> Vec<(usize, usize, u64, String)> {
        let mut nodes = Vec::new();
        for actor in &self.actors {
            if let Some((term, _)) = Lock::ELECTIONS
                .contains(&lock)
                .then(|| actor.seat(lock).term.lock().unwrap().clone())
                .flatten()
                .filter(|(term, _)| term.is_held())
            {
                nodes.push((actor.index, 0, 0, term.node_path().to_owned()));
            }
            for (slot_index, slot) in actor.slots.iter().enumerate() {
                for hold in slot.state.lock().unwrap().holds.iter().filter(|hold| hold.lock == lock && !hold.reentry) {
                    for part in hold.held.parts() {
                        nodes.push((actor.index, slot_index, hold.id, part.node));
                    }
                }
            }
        }
        nodes
    }

    pub async fn delete(&self, lock: Lock, how: Deletion, pick: usize) {
        let (nodes, behind) = match how {
            Deletion::Holder => {
                let holders = self.holder_nodes(lock);
                if holders.is_empty() {
                    return;
                }
                (vec![holders[pick % holders.len()].3.clone()], Vec::new())
            }
            _ => match self.waiter_nodes(lock, how, pick).await {
                Some(nodes) => nodes,
                None => return,
            },
        };
        let mut transaction = self.observer.new_multi_writer();
        for node in &nodes {
            transaction.add_delete(node, None).unwrap();
        }
        let sent = Instant::now();
        if transaction.commit().await.is_ok() {
            let done = Instant::now();
            let mut record = self.record.lock().unwrap();
            record.deletions += 1;
            record.deleted_behind.extend(behind);
            for node in nodes.into_iter().filter(|node| !node.ends_with("/locks") && !node.ends_with("/leases")) {
                record.deleted.insert(node, (sent, done));
            }
        }
    }

    /// A waiter of `lock`'s queue with the node it waits for, as `how` deletes them; and those
    /// of them deleted with the node they wait behind (a waiter with its predecessor, every
    /// waiter of a whole queue).
    async fn waiter_nodes(&self, lock: Lock, how: Deletion, pick: usize) -> Option<(Vec<String>, Vec<String>)> {
        let dirs = self.paths.queues(lock);
        let dir = &dirs[pick % dirs.len()];
        let listed = children(&self.observer, dir).await;
        let waiters = waiting(&listed);
        if waiters.is_empty() {
            return None;
        }
        let (waiter, blocker) = &waiters[pick % waiters.len()];
        let (waiter, blocker) = (format!("{dir}/{waiter}"), format!("{dir}/{blocker}"));
        Some(match how {
            Deletion::Waiter => (vec![waiter], Vec::new()),
            Deletion::WaiterWithPredecessor => (vec![blocker, waiter.clone()], vec![waiter]),
            _ => (
                listed.iter().rev().map(|child| format!("{dir}/{child}")).chain([dir.clone()]).collect(),
                waiters.iter().map(|(waiter, _)| format!("{dir}/{waiter}")).collect(),
            ),
        })
    }

    /// Asks a holder of `lock` to let go; the holder releases once it hears it, as a
    /// cooperative holder does.
    pub async fn revoke(&self, lock: Lock, pick: usize) {
        let holders = self.holder_nodes(lock);
        if matches!(lock, Lock::Multi | Lock::Latch | Lock::Selector) || holders.is_empty() {
            return;
        }
        let (actor, slot, id, node) = holders[pick % holders.len()].clone();
        if zklock::revoke(&self.observer, &node).await.is_err() {
            return;
        }
        self.record.lock().unwrap().revoked.insert(node.clone(), Instant::now());
        let state = Arc::clone(&self.actors[actor].slots[slot].state);
        let record = Arc::clone(&self.record);
        tokio::spawn(async move {
            let found =
                state.lock().unwrap().holds.iter().find(|hold| hold.id == id).map(|hold| Arc::clone(&hold.held));
            let Some(held) = found else { return };
            let heard = tokio::time::timeout(REVOCATION_HEARD, held.revocation_requested()).await.is_ok();
            let believed = held.parts().iter().all(|part| part.believed);
            let cut_now = record.lock().unwrap().cut.get(&actor).copied().unwrap_or(false);
            let cut = cut_now || state.lock().unwrap().cut_seen;
            if !heard && believed && !cut {
                let what = format!("actor {actor} task {slot}: the revocation of {node} was not heard");
                record.lock().unwrap().violations.push(what);
            }
            // Let go of it as its holder: out of the task's holds, released by whoever owns it last.
            let taken = {
                let mut state = state.lock().unwrap();
                let at = state.holds.iter().position(|hold| hold.id == id);
                at.map(|at| state.holds.remove(at))
            };
            drop(taken);
            let nodes = super::slot::releasing(&held, &record);
            if Held::release_shared(held).await.is_some() {
                super::slot::released_all(&nodes, &record);
            }
        });
    }

    pub async fn expire(&self, actor: &Actor, cut_ms: u64) {
        let client = actor.client();
        self.saw_cut(actor);
        if expire_session(&client, &actor.proxy).await.is_ok() {
            if let On::Session(view) = &actor.on {
                view.lock().unwrap().expired.insert(client.session_id().0);
            }
            let mut record = self.record.lock().unwrap();
            record.expiries += 1;
            record.expired.insert(actor.index, Instant::now());
        }
        if cut_ms > 0 {
            self.cut(actor, cut_ms);
        }
    }

    /// Makes the `Session` actor's session anew with `Session::from_client`, from a client whose
    /// session was expired first (behind a proxy of its own, so that the actor's connection is
    /// not cut): it must say `Lost` from the start and connect the next session through the
    /// actor's proxy (issue 29, item 6). The actor's lock objects are made anew on it; its
    /// tasks' holds stay on the sessions they were taken on.
    pub async fn session_anew_from_expired_client(&self) {
        let actor = &self.actors[ACTORS - 1];
        let On::Session(view) = &actor.on else { return };
        let Ok(aside) = Proxy::start(self.server.address()) else { return };
        let Ok(Ok(client)) =
            tokio::time::timeout(Duration::from_secs(2), connect_through(&aside.connect_string())).await
        else {
            return;
        };
        if expire_session(&client, &aside).await.is_err() {
            return;
        }
        let expired = client.session_id().0;
        let through = actor.proxy.connect_string();
        let session = Session::from_client(client, move || {
            let through = through.clone();
            async move { connect_through(&through).await }
        })
        .expect("in a runtime");
        let told = *session.subscribe().borrow();
        let mut record = self.record.lock().unwrap();
        if told != ConnectionState::Lost {
            record.violations.push(format!("a Session made from a client whose session had expired says {told:?}"));
        }
        record.expiries += 1;
        drop(record);
        *actor.locks.lock().unwrap() = Arc::new(Locks::new(&session, &self.paths, actor.index));
        *view.lock().unwrap() = SessionView::new(session, HashSet::from([expired]));
    }

    /// Restarts the server (stopped, then started again at once on its port with its data):
    /// every connection drops, as if every proxy were cut at once, and a session that is not
    /// back within its timeout expires. Each actor's client is watched across it: an expiry is
    /// recorded when its client learns it, as the explorer's own are, so the checks hold the
    /// holds on it to the same bound. Returns once the observer answers again and every actor
    /// not cut is connected again or knows its session expired.
    pub async fn restart(&self) {
        let watchers: Vec<_> = self
            .actors
            .iter()
            .filter(|actor| !matches!(actor.client().state(), SessionState::Expired | SessionState::Closed))
            .map(|actor| {
                self.saw_cut(actor);
                let cut = self.record.lock().unwrap().cut.get(&actor.index).copied().unwrap_or(false);
                (cut, tokio::spawn(self.watch_across_restart(actor)))
            })
            .collect();
        if let Err(err) = self.server.restart().await {
            let what = format!("the server did not come back from a restart: {err}");
            self.record.lock().unwrap().violations.push(what);
            return;
        }
        self.record.lock().unwrap().restarts += 1;
        // Each watcher has been timing its client since before the restart.
        let mut late = 0;
        for (_, watcher) in watchers.into_iter().filter(|(cut, _)| !cut) {
            late += usize::from(!watcher.await.unwrap_or(false));
        }
        if late > 0 {
            let what = format!("{late} of a restarted server's clients were not back or told within {BACK_WITHIN:?}");
            self.record.lock().unwrap().violations.push(what);
        }
        let observer_back = async {
            while self.observer.check_stat("/").await.is_err() {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        };
        if tokio::time::timeout(OBSERVER_BACK_WITHIN, observer_back).await.is_err() {
            let what = format!("the observer did not answer within {OBSERVER_BACK_WITHIN:?} of a restart");
            self.record.lock().unwrap().violations.push(what);
        }
    }

    /// Waits (within `BACK_WITHIN`) until `actor`'s client is connected again, or learns its
    /// session expired: then records the expiry, as of now. Says whether it was in time.
    fn watch_across_restart(&self, actor: &Actor) -> impl std::future::Future<Output = bool> + Send + 'static {
        let client = actor.client();
        let mut states = client.state_watcher();
        let session = match &actor.on {
            On::Session(view) => Some(Arc::clone(view)),
            On::Client(_) => None,
        };
        let (record, index) = (Arc::clone(&self.record), actor.index);
        async move {
            let told = async {
                loop {
                    match states.changed().await {
                        SessionState::SyncConnected | SessionState::ConnectedReadOnly => return,
                        SessionState::Expired | SessionState::Closed | SessionState::AuthFailed => break,
                        _ => {}
                    }
                }
                if let Some(view) = session {
                    view.lock().unwrap().expired.insert(client.session_id().0);
                }
                let mut record = record.lock().unwrap();
                record.restart_expiries += 1;
                record.expired.insert(index, Instant::now());
            };
            tokio::time::timeout(BACK_WITHIN, told).await.is_ok()
        }
    }

    /// Cuts `actor`'s proxy, and heals it after `ms` unless a later cut or heal came first.
    pub fn cut(&self, actor: &Actor, ms: u64) {
        actor.proxy.cut();
        self.saw_cut(actor);
        let epoch = {
            let mut record = self.record.lock().unwrap();
            record.cut.insert(actor.index, true);
            let epoch = record.cut_epoch.entry(actor.index).or_default();
            *epoch += 1;
            *epoch
        };
        let (record, proxy, index) = (Arc::clone(&self.record), Arc::clone(&actor.proxy), actor.index);
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(ms)).await;
            let mut record = record.lock().unwrap();
            if record.cut_epoch.get(&index) == Some(&epoch) {
                proxy.heal();
                record.cut.insert(index, false);
            }
        });
    }

    pub fn heal(&self, actor: &Actor) {
        actor.proxy.heal();
        let mut record = self.record.lock().unwrap();
        record.cut.insert(actor.index, false);
        *record.cut_epoch.entry(actor.index).or_default() += 1;
    }

    /// Every task of `actor` met a cut connection during what it does now.
    fn saw_cut(&self, actor: &Actor) {
        for slot in &actor.slots {
            slot.state.lock().unwrap().cut_seen = true;
        }
    }
}

/// The nodes of a queue that wait, each with the node ahead of it that keeps it waiting: the
/// one just ahead, or for a reader the nearest writer ahead (a downgrade's read node, level with
/// its write node, waits for nothing).
fn waiting(listed: &[String]) -> Vec<(String, String)> {
    let key = |child: &String| child[child.len().saturating_sub(10)..].to_owned();
    let mut queue: Vec<&String> = listed.iter().filter(|child| child.len() >= 10).collect();
    queue.sort_by_key(|child| key(child));
    let writer = |child: &&&String| child.contains("__WRIT__");
    let mut waiting = Vec::new();
    for (index, child) in queue.iter().enumerate().skip(1) {
        if queue.iter().filter(|other| key(other) == key(child)).count() > 1 {
            continue;
        }
        let blocker =
            if child.contains("__READ__") { queue[..index].iter().rev().find(writer) } else { Some(&queue[index - 1]) };
        if let Some(blocker) = blocker {
            waiting.push(((*child).clone(), (*blocker).clone()));
        }
    }
    waiting
}
