//! The invariants, checked against the server after every settled step:
//! - nobody believes it holds a node that is gone, unless it began before the node went and
//!   cannot know yet (not watching it; a watched node is told within a second of its deletion,
//!   or of its client's reconnection when the deletion came while it was cut off: the client
//!   reconnects on its own schedule; an expired session's holds once the client saw the
//!   expiry);
//! - nobody's hold began on a node the operator had deleted (a ghost), or on a node that had
//!   been asked back (a revocation passed on). Forgiven, and counted: a pass within a
//!   notification of the delete being sent, and one lock's hold proven by its own reply that
//!   began before the delete's reply plus a notification (its proof may have been answered
//!   before the delete applied: the server's order is not seen from here), unless its node was
//!   deleted with the node it waited behind;
//! - among holds believed and standing on the server: one holder per exclusive lock, a writer
//!   alone but for its own downgrade, at most `MAX_LEASES` leases;
//! - fencing tokens strictly rise from holder to holder on every exclusive lock;
//! - no acquire runs past its patience (and what the tasks saw themselves);
//! - a `Session`'s `subscribe()` channel, read late (only at the checks), counts every expiry the explorer
//!   caused in `Reconnected`'s `expiries`, and says `Lost` while its client's session is expired
//!   and only then (within a second);
//! - the deadlock property (`deadlocks.rs`): every ring `find_deadlocks` reports is a ring of
//!   the model's wait-for graph (`wait_for.rs`), and every ring of the model that stood for two
//!   checks is reported; a waiting acquire's queue view follows its queue (`view.rs`);
//! - elections as holds: one leader at a time (a term believed on a node that stands), epochs
//!   rising, no term on a node deleted before it began, and every leader's fenced write
//!   (`Leadership::commit`) accepted in epoch order: none of a stale leader after a newer one's.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::{Duration, Instant};

use zklock::hold::Hold;
use zklock::session::ConnectionState;
use zookeeper_client::SessionState;

use super::ops::{ACTORS, SLOTS};
use super::world::{On, MAX_LEASES};
use super::World;
use crate::common::NOTIFICATION_WINDOW;

/// How long a holder whose node is watched may go on believing in a node that was deleted, or
/// in a session that expired: far above a notification's delay (`tests/it/handoff_window.rs`).
const TOLD_BOUND: Duration = Duration::from_secs(1);

/// When a term's node is watched: its election sets the watch once it has lasted a second.
const TERM_WATCHED: Duration = Duration::from_secs(1);

/// One node of one hold standing now, as its holder sees it.
struct Seen {
    who: (usize, usize),
    began: Instant,
    watched: Option<Instant>,
    node: String,
    believed: bool,
}

/// The directory a node is in: the resource it stands for.
fn dir(node: &str) -> &str {
    node.rsplit_once('/').map_or("", |(dir, _)| dir)
}

/// What earlier checks saw that later ones compare with.
#[derive(Default)]
pub struct Memory {
    /// Exclusive resource -> (began, token) of each hold begun there.
    tokens: BTreeMap<String, Vec<(Instant, i64)>>,
    /// Passes within the notification window of their node's deletion, forgiven.
    pub passes_forgiven: u64,
    /// One lock's holds begun while their node's delete was under way (within a notification
    /// of its reply), forgiven: their proof may have come first.
    pub holds_forgiven: u64,
    /// Nodes each task has held: one it holds again is a re-entry (its earlier guard may be on
    /// its way out, released from outside the task, as the new one re-enters).
    held_by: HashSet<((usize, usize), String)>,
    /// Election path -> the highest epoch a fenced write was accepted with.
    fenced: HashMap<String, i64>,
    /// Rings `find_deadlocks` reported, certain ones, and those forgiven (`deadlocks.rs`).
    pub rings: u64,
    pub rings_certain: u64,
    pub rings_forgiven: u64,
    /// The model's rings that stood through the last check's look, and the actors then read
    /// whole.
    pub standing: Vec<super::wait_for::Ring>,
    pub untagged: HashSet<usize>,
    /// Node -> the listing its queue view disagreed with, what the view said, and since when.
    pub views_off: HashMap<String, (Vec<String>, usize, Instant)>,
}

impl World<'_> {
    pub async fn check(&self, memory: &mut Memory) -> Vec<String> {
        let mut violations = std::mem::take(&mut self.record.lock().unwrap().violations);
        self.check_begun(memory, &mut violations);
        self.check_session(&mut violations);
        let seen = self.seen(&mut violations);
        let mut exists = HashMap::new();
        for part in &seen {
            if !exists.contains_key(&part.node) {
                let found = self.observer.check_stat(&part.node).await.ok().flatten().is_some();
                exists.insert(part.node.clone(), found);
            }
        }
        self.fenced_writes(memory, &exists, &mut violations).await;
        self.check_told(&seen, &exists, &mut violations);
        let standing: Vec<&Seen> = seen.iter().filter(|part| part.believed && exists[&part.node]).collect();
        violations.extend(exclusion(&standing));
        self.check_deadlocks(memory, &mut violations).await;
        violations
    }

    /// Nobody believes in a node that is gone for longer than it can take to be told.
    fn check_told(&self, seen: &[Seen], exists: &HashMap<String, bool>, violations: &mut Vec<String>) {
        let now = Instant::now();
        let record = self.record.lock().unwrap();
        for part in seen.iter().filter(|part| part.believed && !exists[&part.node]) {
            let who = format!("actor {} task {}", part.who.0, part.who.1);
            let deleted = record.deleted.get(&part.node).copied();
            let expired = record.expired.get(&part.who.0).filter(|at| **at >= part.began);
            // Told once its client can hear: a deletion during a cut is heard after the reconnect.
            let connected = record.connected.get(&part.who.0).copied().flatten();
            let told_by = match (deleted, expired) {
                (Some((_, done)), _) => {
                    part.watched.zip(connected).map(|(watched, connected)| done.max(watched).max(connected))
                }
                (None, Some(at)) => Some(*at),
                (None, None) if record.cut.values().any(|cut| *cut) => None,
                (None, None) => {
                    violations.push(format!("{who} holds {}, which went with no deletion or expiry", part.node));
                    None
                }
            };
            if told_by.is_some_and(|since| now > since + TOLD_BOUND) {
                violations.push(format!("{who} still believes it holds {}, gone for over {TOLD_BOUND:?}", part.node));
            }
        }
    }

    /// Every leader that believes it leads, on a node that stood at this check's look, writes
    /// through its term's fence: the server accepts it only while the leader's node exists, and
    /// must never accept a lower epoch after a higher one (a stale leader writing after the
    /// next). A term whose node was already gone writes nothing: its refused write would tell
    /// it of the loss, and `check_told` must see whether the election tells it by itself.
    async fn fenced_writes(&self, memory: &mut Memory, exists: &HashMap<String, bool>, violations: &mut Vec<String>) {
        for actor in &self.actors {
            for seat in &actor.seats {
                let Some((term, _)) = seat.term.lock().unwrap().clone().filter(|(term, _)| term.is_held()) else {
                    continue;
                };
                if exists.get(term.node_path()) == Some(&false) {
                    continue;
                }
                let path = self.paths.election(seat.election);
                let mut write = term.multi_writer();
                write.add_check_version(&path, -1).unwrap();
                if term.commit(write).await.is_ok() {
                    let highest = memory.fenced.entry(path.clone()).or_insert(term.fencing_token());
                    if term.fencing_token() < *highest {
                        violations.push(format!(
                            "actor {}: a fenced write of {:?}'s leader with epoch {} accepted after one with epoch {highest}",
                            actor.index,
                            seat.election,
                            term.fencing_token()
                        ));
                    }
                    *highest = (*highest).max(term.fencing_token());
                }
            }
        }
    }

    /// The holds begun since the last check: none on a node deleted or asked back before it
    /// (a pass within a notification of the deletion, and a queue's hold racing the delete,
    /// excepted), tokens rising.
    fn check_begun(&self, memory: &mut Memory, violations: &mut Vec<String>) {
        let mut record = self.record.lock().unwrap();
        let started = std::mem::take(&mut record.started);
        for part in started.into_iter().filter(|part| memory.held_by.insert((part.who, part.node.clone()))) {
            if part.reentry {
                continue;
            }
            let who = format!("actor {} task {}", part.who.0, part.who.1);
            if let Some((sent, done)) = record.deleted.get(&part.node).filter(|(sent, _)| part.began >= *sent) {
                let after = part.began.duration_since(*sent);
                if part.passed_on && after < NOTIFICATION_WINDOW {
                    memory.passes_forgiven += 1;
                } else if part.proven_now
                    && !record.deleted_behind.contains(&part.node)
                    && part.began < *done + NOTIFICATION_WINDOW
                {
                    // Its proof (a listing, or the read of its node once its predecessor went)
                    // may have been answered before the delete applied, somewhere between
                    // `sent` and `done`, and its reply seen within a notification's delay of
                    // that: the server's order is not seen from here, so this is a hold lost
                    // at once (which `check_told` holds to being told), not a ghost. Never for
                    // a node deleted with the node it waited behind (no order lets it hold
                    // first), nor a multi-lock's part (its proof is older than its wait).
                    memory.holds_forgiven += 1;
                } else {
                    violations.push(format!(
                        "{who} began to hold {} {after:?} after its delete was sent (a ghost)",
                        part.node
                    ));
                }
            }
            if let Some(asked) = record.revoked.get(&part.node).filter(|asked| part.began > **asked) {
                let after = part.began.duration_since(*asked);
                violations.push(format!("{who} took {} {after:?} after it was asked back", part.node));
            }
            let exclusive = !dir(&part.node).ends_with("/leases") || dir(&part.node).contains("semaphore-mutex");
            if !exclusive || part.node.contains("__READ__") {
                continue;
            }
            let earlier = memory.tokens.entry(dir(&part.node).to_owned()).or_default();
            if let Some(highest) =
                earlier.iter().filter(|(began, _)| *began < part.began).map(|(_, token)| *token).max()
            {
                if part.token <= highest {
                    violations.push(format!(
                        "{who} holds {} with token {}, not above an earlier {highest}",
                        part.node, part.token
                    ));
                }
            }
            earlier.push((part.began, part.token));
        }
    }

    /// What a subscriber to the `Session` actor's `subscribe()` channel that reads only now learns: a count
    /// of the sessions lost that is not below those the explorer expired (it cannot tell a loss
    /// from a plain suspension otherwise, having missed `Lost`), never going down; and a state
    /// that agrees with the client's on whether the session is lost, within `TOLD_BOUND`.
    fn check_session(&self, violations: &mut Vec<String>) {
        let On::Session(view) = &self.actors[ACTORS - 1].on else { return };
        let mut view = view.lock().unwrap();
        let state = *view.late_reader.borrow_and_update();
        let lost_before = |current: i64| view.expired.iter().filter(|id| **id != current).count() as u64;
        match state {
            ConnectionState::Reconnected { session_id, expiries } => {
                let lost = lost_before(session_id);
                if expiries < lost {
                    violations.push(format!(
                        "a late reader of the Session's subscribe() channel saw Reconnected {{ expiries: {expiries} }} after {lost} of its sessions expired"
                    ));
                }
                if expiries < view.expiries_seen {
                    violations
                        .push(format!("the Session's expiries went down from {} to {expiries}", view.expiries_seen));
                }
                view.expiries_seen = expiries;
            }
            ConnectionState::Connected { session_id } if lost_before(session_id) > 0 => violations
                .push(format!("the Session says Connected after {} of its sessions expired", lost_before(session_id))),
            _ => {}
        }
        let expired = matches!(view.session.client().state(), SessionState::Expired);
        if expired == (state == ConnectionState::Lost) {
            view.at_odds_since = None;
        } else if view.at_odds_since.get_or_insert_with(Instant::now).elapsed() > TOLD_BOUND {
            violations.push(format!(
                "the Session says {state:?} while its client's session is {}, for over {TOLD_BOUND:?}",
                if expired { "expired" } else { "live" }
            ));
        }
    }

    /// Every node of every hold, and acquires past their patience.
    fn seen(&self, violations: &mut Vec<String>) -> Vec<Seen> {
        let mut seen = Vec::new();
        for actor in &self.actors {
            for (index, slot) in actor.slots.iter().enumerate() {
                let state = slot.state.lock().unwrap();
                if let Some(busy) = &state.busy {
                    let late = busy.bound.is_some_and(|bound| busy.since.elapsed() > bound);
                    if late && !(state.cut_seen && busy.excusable) {
                        violations.push(format!(
                            "actor {} task {index}: {} has not answered within its patience",
                            actor.index, busy.what
                        ));
                    }
                }
                for hold in &state.holds {
                    for part in hold.held.parts() {
                        seen.push(Seen {
                            who: (actor.index, index),
                            began: hold.began,
                            watched: hold.watched,
                            node: part.node,
                            believed: part.believed,
                        });
                    }
                }
            }
            for (index, seat) in actor.seats.iter().enumerate() {
                if let Some((term, began)) = &*seat.term.lock().unwrap() {
                    seen.push(Seen {
                        who: (actor.index, SLOTS + index),
                        began: *began,
                        watched: Some(*began + TERM_WATCHED),
                        node: term.node_path().to_owned(),
                        believed: term.is_held(),
                    });
                }
            }
        }
        seen
    }
}

/// The rules among holds that stand: by directory, one node (a mutex, the multi-lock's paths, a
/// semaphore mutex's lease), a writer alone but for its own task's readers, or `MAX_LEASES`.
fn exclusion(standing: &[&Seen]) -> Vec<String> {
    let mut by_dir: BTreeMap<&str, Vec<&Seen>> = BTreeMap::new();
    for part in standing {
        by_dir.entry(dir(&part.node)).or_default().push(part);
    }
    let mut violations = Vec::new();
    for (dir, parts) in by_dir {
        let nodes: HashSet<&str> = parts.iter().map(|part| part.node.as_str()).collect();
        let writers: Vec<&&Seen> = parts.iter().filter(|part| part.node.contains("__WRIT__")).collect();
        let readers: Vec<&&Seen> = parts.iter().filter(|part| part.node.contains("__READ__")).collect();
        let broken = if !writers.is_empty() || !readers.is_empty() {
            let writer_nodes: HashSet<&str> = writers.iter().map(|part| part.node.as_str()).collect();
            writer_nodes.len() > 1 || writers.iter().any(|writer| readers.iter().any(|reader| reader.who != writer.who))
        } else if dir.ends_with("/leases") && !dir.contains("semaphore-mutex") {
            nodes.len() > MAX_LEASES
        } else {
            nodes.len() > 1
        };
        if broken {
            let holders: Vec<String> =
                parts.iter().map(|part| format!("actor {} task {} on {}", part.who.0, part.who.1, part.node)).collect();
            violations.push(format!("{dir}: held at once by {}", holders.join(", ")));
        }
    }
    violations
}
