//! zklock's leader election and the real Apache Curator 5.4 (Debian's libcurator-recipes-java) in
//! one election: Curator `LeaderLatch`es with zklock `LeaderLatch`es on one path, Curator
//! `LeaderSelector`s with zklock `LeaderSelector`s on another. The test forces every turn (only
//! the leader is told to give up), checks from a log that every leader appends to that there was
//! never more than one leader at a time, and that zklock and Curator name the same leader and
//! the same queue.

use crate::common;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::interop::{curator_classpath, temp_log, READY_TIMEOUT};
use common::{connect, eventually, unique_path};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};
use tokio::task::JoinHandle;
use zklock::election::Leadership;
use zklock::hold::Hold;
use zklock::queue::QueueNode;
use zklock::{LeaderLatch, LeaderSelector};
use zookeeper_client::Client;

/// Terms each participant leads: it queues again after each, and leaves after the last.
const ROUNDS: usize = 3;
/// Bounds a whole test: the JVMs' start (up to [`READY_TIMEOUT`]) and every turn.
const TEST_TIMEOUT: Duration = Duration::from_secs(90);
/// How long a Curator process may take to answer a line or to exit once told to leave.
const PEER_TIMEOUT: Duration = Duration::from_secs(20);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zklock_and_curator_leader_latches_take_turns_one_leader_at_a_time() {
    tokio::time::timeout(TEST_TIMEOUT, take_turns(Kind::Latch)).await.expect("the election did not finish in time");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zklock_and_curator_leader_selectors_take_turns_one_leader_at_a_time() {
    tokio::time::timeout(TEST_TIMEOUT, take_turns(Kind::Selector)).await.expect("the election did not finish in time");
}

#[derive(Clone, Copy, Debug)]
enum Kind {
    Latch,
    Selector,
}

/// Two Curator and two zklock participants join one election alternately (so every handoff
/// crosses libraries), then each leads [`ROUNDS`] terms. At each term, once the queue is
/// settled, zklock's `leader()` and `participants()` and every Curator process's `getLeader()` /
/// `getParticipants()` must name the participant that logged its start, and agree on the queue.
async fn take_turns(kind: Kind) {
    let path = unique_path(&format!("curator-leader-{kind:?}"));
    let log = temp_log(&format!("curator-leader-{kind:?}"));
    let mut parties = vec![
        Party::curator("curator-1", &path, kind, &log),
        Party::zklock("zklock-1", &path, kind, &log),
        Party::curator("curator-2", &path, kind, &log),
        Party::zklock("zklock-2", &path, kind, &log),
    ];
    let deadline = Instant::now() + READY_TIMEOUT;
    tokio::task::block_in_place(|| parties.iter_mut().for_each(|party| party.wait_ready(deadline)));

    let client = connect().await;
    let observer = Observer::new(&client, &path, kind);
    for (joined, party) in parties.iter_mut().enumerate() {
        party.send(Line::Join);
        let queued = joined + 1;
        eventually(&format!("{} is queued", party.name), || async { observer.participants().await.len() == queued })
            .await;
    }
    let order: Vec<String> = parties.iter().map(|party| party.name.clone()).collect();
    assert_eq!(observer.ids().await, order, "the queue is the join order");

    let mut terms_led: HashMap<String, usize> = HashMap::new();
    let mut queued = parties.len();
    let mut curator_views = 0;
    for turn in 0..ROUNDS * parties.len() {
        eventually(&format!("term {turn} begins"), || async { terms(&log).get(turn).is_some_and(|t| !t.ended) }).await;
        let term = terms(&log).swap_remove(turn);
        // FIFO across libraries: the queue turns round, each participant queueing again at its end.
        assert_eq!(term.leader, order[turn % order.len()], "term {turn}: {:?}", terms(&log));
        // The previous leader queues again (or leaves) on its own: wait for it before comparing views.
        eventually(&format!("{queued} participants are queued"), || async {
            observer.participants().await.len() == queued
        })
        .await;
        curator_views += check_views(&client, &observer, &mut parties, &term).await;

        let led = terms_led.entry(term.leader.clone()).or_default();
        *led += 1;
        let line = if *led < ROUNDS {
            Line::Yield
        } else {
            queued -= 1;
            Line::Leave
        };
        parties.iter_mut().find(|party| party.name == term.leader).unwrap().send(line);
        eventually(&format!("term {turn} ends"), || async { terms(&log)[turn].ended }).await;
    }

    for party in parties {
        party.finish().await;
    }
    let terms = terms(&log);
    assert_eq!(terms.len(), ROUNDS * order.len(), "{terms:?}");
    let crossings = terms.windows(2).filter(|pair| is_zklock(&pair[0].leader) != is_zklock(&pair[1].leader)).count();
    assert_eq!(crossings, terms.len() - 1, "every handoff crosses libraries: {terms:?}");
    eprintln!(
        "{kind:?}: {} terms, one leader at a time, {crossings} handoffs between zklock and Curator, \
         {curator_views} Curator views (getLeader, getParticipants) equal to zklock's, queue {order:?}, epochs {:?}",
        terms.len(),
        terms.iter().map(|term| term.epoch).collect::<Vec<_>>()
    );
    let _ = std::fs::remove_file(&log);
}

/// While `term` is running and the queue is settled: zklock's view (leader, queue order, and
/// the leader node's czxid, which must be the epoch the leader logged) and every Curator
/// process's view name the same leader and queue. Returns how many Curator views it compared.
async fn check_views(client: &Client, observer: &Observer, parties: &mut [Party], term: &Term) -> usize {
    let queue = observer.participants().await;
    let ids: Vec<String> = queue.iter().map(QueueNode::id).collect();
    let leader = observer.leader().await.unwrap_or_else(|| panic!("zklock sees no leader during {term:?}"));
    assert_eq!(leader.id(), term.leader, "zklock's leader() during {term:?}");
    assert!(queue[0] == leader, "zklock's queue {queue:?} during {term:?}");
    let node = client.check_stat(&leader.node_path).await.unwrap().expect("the leader's node exists");
    assert_eq!(node.czxid, term.epoch, "the leader node's czxid is the epoch {} logged", term.leader);
    let mut compared = 0;
    for party in parties.iter_mut() {
        if let Some(view) = party.curator_view() {
            assert_eq!(view, format!("{} {}", term.leader, ids.join(",")), "{}'s view during {term:?}", party.name);
            compared += 1;
        }
    }
    compared
}

fn is_zklock(name: &str) -> bool {
    name.starts_with("zklock")
}

/// One term of leadership in the shared log.
#[derive(Debug)]
struct Term {
    leader: String,
    epoch: i64,
    ended: bool,
}

/// Reads the log's terms; panics when two overlap or an epoch goes back (see [`parse_terms`]).
fn terms(log: &Path) -> Vec<Term> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    parse_terms(&text).unwrap_or_else(|err| panic!("{err}\n{text}"))
}

/// The terms of a log, checking that a term began only once the one before had ended and that
/// epochs grew from term to term: exactly one leader at a time, fenced in order.
fn parse_terms(text: &str) -> Result<Vec<Term>, String> {
    let mut terms: Vec<Term> = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let [leader, "lead", epoch, event] = line.split(' ').collect::<Vec<_>>()[..] else {
            return Err(format!("bad log line {number}: {line:?}"));
        };
        let epoch: i64 = epoch.parse().map_err(|_| format!("bad epoch on line {number}: {line:?}"))?;
        let open = terms.last_mut().filter(|term| !term.ended);
        match (event, open) {
            ("begin", None) => {
                if let Some(last) = terms.last().filter(|last| epoch <= last.epoch) {
                    return Err(format!("line {number}: epoch {epoch} after {last:?}"));
                }
                terms.push(Term { leader: leader.to_owned(), epoch, ended: false });
            }
            ("begin", Some(open)) => return Err(format!("line {number}: {leader} leads while {open:?} leads")),
            ("end", Some(open)) if open.leader == leader && open.epoch == epoch => open.ended = true,
            _ => return Err(format!("line {number}: {line:?} ends no running term")),
        }
    }
    Ok(terms)
}

#[test]
fn the_log_check_rejects_two_leaders_at_once_and_epochs_going_back() {
    let count = |text: &str| parse_terms(text).map(|terms| terms.len());
    assert_eq!(count("a lead 5 begin\na lead 5 end\nb lead 7 begin\n"), Ok(2));
    assert!(count("a lead 5 begin\nb lead 7 begin\n").is_err(), "b began while a led");
    assert!(count("a lead 5 begin\nb lead 5 end\n").is_err(), "b ended a's term");
    assert!(count("a lead 5 begin\na lead 5 end\nb lead 4 begin\n").is_err(), "the epoch went back");
}

/// A zklock handle that reads the election without joining it.
enum Observer {
    Latch(LeaderLatch),
    Selector(LeaderSelector),
}

impl Observer {
    fn new(client: &Client, path: &str, kind: Kind) -> Observer {
        match kind {
            Kind::Latch => Observer::Latch(LeaderLatch::new(client, path, "observer").unwrap()),
            Kind::Selector => Observer::Selector(LeaderSelector::new(client, path, "observer").unwrap()),
        }
    }

    async fn participants(&self) -> Vec<QueueNode> {
        match self {
            Observer::Latch(latch) => latch.participants().await,
            Observer::Selector(selector) => selector.participants().await,
        }
        .unwrap()
    }

    async fn ids(&self) -> Vec<String> {
        self.participants().await.iter().map(QueueNode::id).collect()
    }

    async fn leader(&self) -> Option<QueueNode> {
        match self {
            Observer::Latch(latch) => latch.leader().await,
            Observer::Selector(selector) => selector.leader().await,
        }
        .unwrap()
    }
}

/// What the test tells a participant (a line on a Curator process's stdin).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Line {
    Join,
    Yield,
    Leave,
}

impl Line {
    fn text(self) -> &'static str {
        match self {
            Line::Join => "join",
            Line::Yield => "yield",
            Line::Leave => "leave",
        }
    }
}

/// A participant of the election, run by Curator in a JVM or by zklock in a task.
struct Party {
    name: String,
    runner: Runner,
    /// Told to leave: a Curator process has exited (or is exiting) and answers no more.
    left: bool,
}

enum Runner {
    /// An `interop/CuratorLeader.java` process, killed if still running when dropped.
    Curator {
        child: Child,
        stdin: ChildStdin,
        stdout: Receiver<String>,
    },
    Zklock {
        lines: UnboundedSender<Line>,
        task: JoinHandle<()>,
    },
}

impl Party {
    fn curator(name: &str, path: &str, kind: Kind, log: &Path) -> Party {
        let mode = match kind {
            Kind::Latch => "latch",
            Kind::Selector => "selector",
        };
        let mut child = Command::new("java")
            .args(["-Xshare:auto", "-XX:+UseSerialGC", "-cp", &curator_classpath(), "CuratorLeader"])
            .args([&common::server().connect_string(), path, mode])
            .arg(log)
            .arg(name)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start java");
        let (lines, stdout) = mpsc::channel();
        let reader = BufReader::new(child.stdout.take().unwrap());
        // A thread, so that a process that never speaks costs a bounded wait, not a blocked read.
        std::thread::spawn(move || reader.lines().map_while(Result::ok).try_for_each(|line| lines.send(line)));
        let stdin = child.stdin.take().unwrap();
        Party { name: name.to_owned(), runner: Runner::Curator { child, stdin, stdout }, left: false }
    }

    fn zklock(name: &str, path: &str, kind: Kind, log: &Path) -> Party {
        let (lines, commands) = unbounded_channel();
        let (name, path, log) = (name.to_owned(), path.to_owned(), log.to_owned());
        let task = match kind {
            Kind::Latch => tokio::spawn(zklock_latch(name.clone(), path, log, commands)),
            Kind::Selector => tokio::spawn(zklock_selector(name.clone(), path, log, commands)),
        };
        Party { name, runner: Runner::Zklock { lines, task }, left: false }
    }

    /// Waits until a Curator process is connected (a zklock task needs no wait: it connects
    /// before it reads its first line).
    fn wait_ready(&mut self, deadline: Instant) {
        if matches!(self.runner, Runner::Curator { .. }) {
            let line = self.next_line(deadline.saturating_duration_since(Instant::now()));
            assert_eq!(line, format!("ready {}", self.name));
        }
    }

    fn send(&mut self, line: Line) {
        self.left |= line == Line::Leave;
        let name = &self.name;
        match &mut self.runner {
            Runner::Curator { stdin, .. } => {
                writeln!(stdin, "{}", line.text()).unwrap_or_else(|err| panic!("{name} lost its stdin: {err}"))
            }
            Runner::Zklock { lines, .. } => lines.send(line).unwrap_or_else(|_| panic!("{name} has ended")),
        }
    }

    /// A Curator process's view of the election, as "LEADER ID,ID,..." (queue order); None for
    /// zklock and for a process that has left.
    fn curator_view(&mut self) -> Option<String> {
        let Runner::Curator { stdin, .. } = &mut self.runner else { return None };
        if self.left {
            return None;
        }
        writeln!(stdin, "view").unwrap();
        let line = tokio::task::block_in_place(|| self.next_line(PEER_TIMEOUT));
        let prefix = format!("view {} ", self.name);
        Some(line.strip_prefix(&prefix).unwrap_or_else(|| panic!("{}: unexpected {line:?}", self.name)).to_owned())
    }

    fn next_line(&mut self, timeout: Duration) -> String {
        let Runner::Curator { child, stdout, .. } = &mut self.runner else { unreachable!("zklock has no stdout") };
        match stdout.recv_timeout(timeout) {
            Ok(line) => line,
            Err(RecvTimeoutError::Timeout) => panic!("{} said nothing within {timeout:?}", self.name),
            Err(RecvTimeoutError::Disconnected) => panic!("{} exited: {}", self.name, child.wait().unwrap()),
        }
    }

    /// Once it has left the election: a Curator process says so and exits 0, a zklock task ends.
    async fn finish(mut self) {
        if let Runner::Zklock { task, .. } = &mut self.runner {
            return task.await.unwrap_or_else(|err| panic!("{}: {err}", self.name));
        }
        tokio::task::block_in_place(|| {
            assert_eq!(self.next_line(PEER_TIMEOUT), format!("left {}", self.name));
            let Runner::Curator { child, .. } = &mut self.runner else { unreachable!() };
            let started = Instant::now();
            let status = loop {
                if let Some(status) = child.try_wait().unwrap() {
                    break status;
                }
                assert!(started.elapsed() < PEER_TIMEOUT, "{} still running after it left", self.name);
                std::thread::sleep(Duration::from_millis(20));
            };
            assert!(status.success(), "{} exited with {status}", self.name);
        });
    }
}

impl Drop for Party {
    fn drop(&mut self) {
        match &mut self.runner {
            Runner::Curator { child, .. } => {
                let _ = child.kill();
                let _ = child.wait();
            }
            Runner::Zklock { task, .. } => task.abort(),
        }
    }
}

/// Appends one `NAME lead EPOCH begin|end` line, as the Curator processes do (one O_APPEND write).
fn log_term(log: &Path, name: &str, leadership: &Leadership, event: &str) {
    let mut file = std::fs::OpenOptions::new().create(true).append(true).open(log).unwrap();
    file.write_all(format!("{name} lead {} {event}\n", leadership.fencing_token()).as_bytes()).unwrap();
}

/// A zklock participant with a `LeaderLatch`: one latch per term, as the Curator process.
async fn zklock_latch(name: String, path: String, log: PathBuf, mut lines: UnboundedReceiver<Line>) {
    let client = connect().await;
    assert_eq!(lines.recv().await, Some(Line::Join));
    loop {
        let latch = LeaderLatch::new(&client, &path, &name).unwrap();
        latch.start().await.unwrap();
        let leadership = latch.await_leadership().await.unwrap();
        log_term(&log, &name, &leadership, "begin");
        let line = lines.recv().await.unwrap_or(Line::Leave);
        log_term(&log, &name, &leadership, "end");
        latch.close().await.unwrap();
        if line == Line::Leave {
            return;
        }
    }
}

/// A zklock participant with a `LeaderSelector` that queues again after each term; its
/// leadership closure leads until told to yield (returns) or to leave (waits to be closed).
async fn zklock_selector(name: String, path: String, log: PathBuf, mut lines: UnboundedReceiver<Line>) {
    let client = connect().await;
    let selector = LeaderSelector::builder(&client, &path, &name).auto_requeue(true).build().unwrap();
    assert_eq!(lines.recv().await, Some(Line::Join));
    let lines = Arc::new(tokio::sync::Mutex::new(lines));
    let (left, mut has_left) = unbounded_channel();
    selector
        .start(move |leadership: Leadership| {
            let (lines, log, name, left) = (lines.clone(), log.clone(), name.clone(), left.clone());
            async move {
                log_term(&log, &name, &leadership, "begin");
                let line = lines.lock().await.recv().await.unwrap_or(Line::Leave);
                log_term(&log, &name, &leadership, "end");
                if line == Line::Leave {
                    // Returning would queue again: hold on until close() drops this future.
                    let _ = left.send(());
                    std::future::pending::<()>().await;
                }
            }
        })
        .await
        .unwrap();
    has_left.recv().await;
    selector.close().await.unwrap();
}
