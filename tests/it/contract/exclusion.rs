//! At most one holder (or readers only), across sessions and across processes, with fencing
//! tokens that increase in acquisition order under contention.

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Barrier;

use crate::common::{connect, connect_to, unique_path};
use crate::contract::lock::{Held, LockUnderTest};
use crate::contract::support::{expect_success, nodes, shared_dir, spawn_child, start_children, ChildOrders};

/// Parties and rounds of each contention test: enough that acquires meet a held lock, few
/// enough that the binary stays quick.
const PARTIES: usize = 4;
const ROUNDS: usize = 5;
/// How long a holder stays inside (awaited, so the runtime is free to run the others).
const INSIDE: Duration = Duration::from_millis(3);
/// Tasks sharing one participant in each session of the tasks contract, and in each process.
const TASKS: usize = 3;

/// Who is inside, replayed in the order things happened; it records every breach of the rules:
/// a writer (or exclusive holder) is alone; a reader is never beside a writer; an exclusive
/// holder's token is above every token before it; a reader's is above the last writer's.
#[derive(Debug, Default)]
pub struct Ledger {
    shared_inside: usize,
    exclusive_inside: usize,
    highest_token: i64,
    last_exclusive_token: i64,
    entries: usize,
    /// Acquires under way (begun, not yet entered).
    waiting: usize,
    /// Entries that others were waiting behind: proof that there was contention.
    contended: usize,
    breaches: Vec<String>,
}

impl Ledger {
    /// An acquire is about to start (its [`enter`](Self::enter) ends the wait).
    pub fn want(&mut self) {
        self.waiting += 1;
    }

    pub fn enter(&mut self, party: &str, shared: bool, token: i64) {
        self.entries += 1;
        self.waiting = self.waiting.saturating_sub(1);
        if self.waiting > 0 {
            self.contended += 1;
        }
        let (inside, floor) = if shared {
            (self.exclusive_inside, self.last_exclusive_token)
        } else {
            (self.exclusive_inside + self.shared_inside, self.highest_token)
        };
        if inside > 0 {
            self.breaches.push(format!("{party} entered beside {inside} holder(s)"));
        }
        if token <= floor {
            self.breaches.push(format!("{party} entered with token {token}, not above {floor}"));
        }
        self.highest_token = self.highest_token.max(token);
        if shared {
            self.shared_inside += 1;
        } else {
            self.exclusive_inside += 1;
            self.last_exclusive_token = token;
        }
    }

    pub fn exit(&mut self, shared: bool) {
        if shared {
            self.shared_inside -= 1;
        } else {
            self.exclusive_inside -= 1;
        }
    }

    /// Fails on any breach, or when not every acquisition was seen.
    pub fn check(&self, expected_entries: usize) {
        assert!(self.breaches.is_empty(), "exclusion broken: {:#?}", self.breaches);
        assert_eq!(self.entries, expected_entries, "acquisitions seen");
    }

    /// As [`check`](Self::check), and fails when no acquire ever waited behind another: such a
    /// run proves nothing.
    pub fn check_under_contention(&self, expected_entries: usize) {
        self.check(expected_entries);
        assert!(self.contended > 0, "no acquire ever waited behind another: the test proved nothing");
    }

    /// Replays a want/enter/exit log (see [`log_line`]).
    pub fn replay(log: &str) -> Ledger {
        let mut ledger = Ledger::default();
        for line in log.lines() {
            let fields: Vec<&str> = line.split(' ').collect();
            match fields[..] {
                ["enter", party, kind, token] => ledger.enter(party, kind == "shared", token.parse().unwrap()),
                ["exit", _, kind] => ledger.exit(kind == "shared"),
                ["want", _] => ledger.want(),
                _ => panic!("bad log line {line:?}"),
            }
        }
        ledger
    }
}

fn kind(shared: bool) -> &'static str {
    if shared {
        "shared"
    } else {
        "exclusive"
    }
}

/// Several sessions of one process take turns; every party is connected and ready before the
/// first acquire.
pub async fn across_sessions<L: LockUnderTest>() {
    let path = unique_path("contract-sessions");
    let ledger = Arc::new(Mutex::new(Ledger::default()));
    let ready = Arc::new(Barrier::new(PARTIES));
    let mut parties = Vec::new();
    for index in 0..PARTIES {
        let client = connect().await;
        let lock = L::party(&client, &path, index);
        let (ledger, ready) = (ledger.clone(), ready.clone());
        parties.push(tokio::spawn(async move {
            ready.wait().await;
            take_turns(&lock, &format!("party {index}"), &ledger).await;
            drop(client);
        }));
    }
    for party in parties {
        tokio::time::timeout(Duration::from_secs(60), party).await.expect("contention never ended").unwrap();
    }
    ledger.lock().unwrap().check_under_contention(PARTIES * ROUNDS);
    assert!(nodes::<L>(&connect().await, &path).await.is_empty(), "nodes left behind");
}

/// Several tasks share each session's participant (one lock object, as request handlers of a
/// service share it), in two sessions: tasks of one participant exclude each other as
/// participants do (and with local handoff, pass the hold between them).
pub async fn across_tasks<L: LockUnderTest>() {
    const SESSIONS: usize = 2;
    let path = unique_path("contract-tasks");
    let ledger = Arc::new(Mutex::new(Ledger::default()));
    let ready = Arc::new(Barrier::new(SESSIONS * TASKS));
    let mut tasks = Vec::new();
    let mut clients = Vec::new();
    for session in 0..SESSIONS {
        let client = connect().await;
        let lock = Arc::new(L::party(&client, &path, session));
        clients.push(client);
        for task in 0..TASKS {
            let (lock, ledger, ready) = (lock.clone(), ledger.clone(), ready.clone());
            tasks.push(tokio::spawn(async move {
                ready.wait().await;
                take_turns(&*lock, &format!("session {session} task {task}"), &ledger).await;
            }));
        }
    }
    for task in tasks {
        tokio::time::timeout(Duration::from_secs(60), task).await.expect("contention never ended").unwrap();
    }
    ledger.lock().unwrap().check_under_contention(SESSIONS * TASKS * ROUNDS);
    assert!(nodes::<L>(&connect().await, &path).await.is_empty(), "nodes left behind");
}

/// `ROUNDS` times: takes `lock`, stays inside for `INSIDE`, lets go, each step in `ledger`.
async fn take_turns<L: LockUnderTest>(lock: &L, name: &str, ledger: &Mutex<Ledger>) {
    for _ in 0..ROUNDS {
        ledger.lock().unwrap().want();
        let held = lock.acquire().await.unwrap();
        ledger.lock().unwrap().enter(name, lock.is_shared(), held.fencing_token());
        tokio::time::sleep(INSIDE).await;
        ledger.lock().unwrap().exit(lock.is_shared());
        held.release().await.unwrap();
    }
}

const LOG: &str = "log";

/// Several processes (this test binary again, one session each, its participant shared by a
/// few tasks) take turns; each appends `enter`/`exit` lines to one `O_APPEND` log, checked here
/// afterwards: overlap is seen outside the processes that hold.
pub async fn across_processes<L: LockUnderTest>(test_name: &str) {
    if let Some(orders) = ChildOrders::of_this_process() {
        return contend_as_child::<L>(orders).await;
    }
    let path = unique_path("contract-processes");
    let dir = shared_dir("contract-processes");
    let children: Vec<_> = (0..PARTIES).map(|party| spawn_child(test_name, "contend", &path, &dir, party)).collect();
    start_children(&dir, PARTIES).await;
    for (party, child) in children.into_iter().enumerate() {
        expect_success(child, &dir, party, Duration::from_secs(60)).await;
    }
    let log = std::fs::read_to_string(dir.join(LOG)).unwrap();
    Ledger::replay(&log).check_under_contention(PARTIES * TASKS * ROUNDS);
    assert!(nodes::<L>(&connect().await, &path).await.is_empty(), "nodes left behind");
    let _ = std::fs::remove_dir_all(&dir);
}

async fn contend_as_child<L: LockUnderTest>(orders: ChildOrders) {
    assert_eq!(orders.role, "contend");
    let client = connect_to(&orders.connect_string).await;
    let lock = Arc::new(L::party(&client, &orders.path, orders.party));
    let log = std::fs::OpenOptions::new().append(true).create(true).open(orders.dir.join(LOG)).unwrap();
    // One write per line: O_APPEND makes each land whole and in the order written.
    let log = Arc::new(Mutex::new(log));
    let append = move |line: String| log.lock().unwrap().write_all(line.as_bytes()).unwrap();
    std::fs::write(orders.ready_file(), b"").unwrap();
    orders.wait_for_go().await;
    let kind = kind(lock.is_shared());
    let tasks: Vec<_> = (0..TASKS)
        .map(|task| {
            let (lock, append) = (lock.clone(), append.clone());
            let party = format!("{}.{task}", orders.party);
            tokio::spawn(async move {
                for _ in 0..ROUNDS {
                    append(format!("want {party}\n"));
                    let held = lock.acquire().await.unwrap();
                    append(format!("enter {party} {kind} {}\n", held.fencing_token()));
                    tokio::time::sleep(INSIDE).await;
                    append(format!("exit {party} {kind}\n"));
                    held.release().await.unwrap();
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
}

#[test]
fn the_ledger_catches_overlap_and_stale_tokens() {
    let ledger = Ledger::replay("enter 0 exclusive 5\nenter 1 exclusive 6\nexit 0 exclusive\nexit 1 exclusive\n");
    assert_eq!(ledger.breaches.len(), 1, "{:?}", ledger.breaches);
    let ledger = Ledger::replay("enter 0 exclusive 5\nexit 0 exclusive\nenter 1 exclusive 4\nexit 1 exclusive\n");
    assert_eq!(ledger.breaches.len(), 1, "{:?}", ledger.breaches);
    let ledger = Ledger::replay("enter 0 shared 5\nenter 1 shared 4\nexit 0 shared\nexit 1 shared\n");
    assert!(ledger.breaches.is_empty(), "readers share: {:?}", ledger.breaches);
    let ledger = Ledger::replay("enter 0 shared 5\nenter 1 exclusive 6\nexit 0 shared\nexit 1 exclusive\n");
    assert_eq!(ledger.breaches.len(), 1, "{:?}", ledger.breaches);
}
