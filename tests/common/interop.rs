//! Running real Curator (Java) and kazoo (Python) participants beside zklock, and checking the
//! log they all append to.

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use tokio::sync::Barrier;

use zklock::hold::Hold;

/// Where Debian's `libcurator-recipes-java` puts Curator (its manifest names the rest).
const CURATOR_JAR: &str = "/usr/share/java/curator-recipes.jar";
const SLF4J_NOP_JAR: &str = "/usr/share/java/slf4j-nop.jar";

/// Compiles the Curator participants (`interop/CuratorLocker.java`, `interop/CuratorLeader.java`)
/// once per test binary; returns the classpath to run them.
pub fn curator_classpath() -> String {
    static CLASSES: OnceLock<PathBuf> = OnceLock::new();
    let classes = CLASSES.get_or_init(|| {
        assert!(
            Path::new(CURATOR_JAR).is_file(),
            "Curator is missing: run scripts/install-deps (apt-get install -y libcurator-recipes-java)"
        );
        let classes = std::env::temp_dir().join(format!("zklock-interop-classes-{}", std::process::id()));
        std::fs::create_dir_all(&classes).unwrap();
        let interop = Path::new(env!("CARGO_MANIFEST_DIR")).join("interop");
        let status = Command::new("javac")
            .args(["-d".as_ref(), classes.as_os_str(), "-cp".as_ref(), CURATOR_JAR.as_ref()])
            .args(["CuratorLocker.java", "CuratorLeader.java"].map(|source| interop.join(source)))
            .status()
            .expect("run javac (install a JDK: apt-get install -y default-jdk-headless)");
        assert!(status.success(), "javac failed");
        classes
    });
    format!("{}:{CURATOR_JAR}:{SLF4J_NOP_JAR}", classes.display())
}

/// How long a peer may take to start, connect and report ready: a JVM starting beside others on
/// two busy cores takes seconds.
pub const READY_TIMEOUT: Duration = Duration::from_secs(30);

/// A peer process, killed if it is still running when dropped. It prints `ready NAME` once
/// connected with its lock built, then waits for a line on stdin before its first acquire.
pub struct Peer {
    name: String,
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: Receiver<String>,
}

impl Peer {
    /// Starts a Curator participant on the shared server: `mode` is one of
    /// `interop/CuratorLocker.java`'s.
    pub fn curator(name: &str, path: &str, mode: &str, iterations: u32, hold_ms: u64, log: &Path) -> Peer {
        let mut java = Command::new("java");
        java.args(["-Xshare:auto", "-XX:+UseSerialGC", "-cp", &curator_classpath(), "CuratorLocker"])
            .args([&super::server().connect_string(), path, mode, &iterations.to_string(), &hold_ms.to_string()])
            .arg(log)
            .arg(name);
        Peer::spawn(name, java, "start java")
    }

    /// Starts a kazoo participant on the shared server (Debian's `python3-kazoo`, run by `/usr/bin/python3`): `mode`
    /// is `mutex` (a `Lock` with kazoo's `extra_lock_patterns`), `read`, `write` or `lease:N`.
    pub fn kazoo(
        name: &str,
        path: &str,
        mode: &str,
        iterations: u32,
        hold_ms: u64,
        log: &Path,
        extra_patterns: &[&str],
    ) -> Peer {
        let mut python = Command::new("/usr/bin/python3");
        python
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("interop/kazoo_locker.py"))
            .args([&super::server().connect_string(), path, mode, &iterations.to_string(), &hold_ms.to_string()])
            .arg(log)
            .arg(name)
            .args(extra_patterns);
        Peer::spawn(name, python, "start /usr/bin/python3 (install python3-kazoo: scripts/install-deps)")
    }

    fn spawn(name: &str, mut command: Command, what: &str) -> Peer {
        let mut child = command.stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().expect(what);
        let (lines, stdout) = mpsc::channel();
        let reader = BufReader::new(child.stdout.take().unwrap());
        // A thread, so that a peer that never speaks costs a bounded wait, not a blocked read.
        std::thread::spawn(move || reader.lines().map_while(Result::ok).try_for_each(|line| lines.send(line)));
        Peer { name: name.to_owned(), stdin: child.stdin.take(), child, stdout }
    }

    /// Waits until the peer reports ready; panics naming it if it does not by `deadline`.
    fn wait_ready(&mut self, deadline: Instant) {
        let ready = format!("ready {}", self.name);
        loop {
            match self.stdout.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(line) if line == ready => return,
                Ok(line) => eprintln!("{}: {line}", self.name),
                Err(RecvTimeoutError::Timeout) => {
                    panic!("{} did not report ready within {READY_TIMEOUT:?}", self.name)
                }
                Err(RecvTimeoutError::Disconnected) => {
                    panic!("{} exited before it was ready: {}", self.name, self.child.wait().unwrap())
                }
            }
        }
    }

    /// Lets the peer start its rounds.
    fn go(&mut self) {
        let mut stdin = self.stdin.take().expect("a peer starts once");
        writeln!(stdin, "go").unwrap_or_else(|err| panic!("{} lost its stdin: {err}", self.name));
    }

    /// Starts a peer that has no other party to wait for, once it is ready.
    pub async fn start(&mut self) {
        StartLine::new(0).open(std::slice::from_mut(self)).await;
    }

    /// The name it logs under.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether the peer has exited.
    pub fn has_exited(&mut self) -> bool {
        self.child.try_wait().unwrap().is_some()
    }

    /// Waits for the peer to exit successfully, for at most `timeout`.
    pub fn wait_success(mut self, timeout: Duration) {
        let started = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                assert!(status.success(), "{} exited with {status}", self.name);
                return;
            }
            assert!(started.elapsed() < timeout, "{} still running after {timeout:?}", self.name);
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Where every party of a test waits until all of them are ready, so that they contend from
/// the first round instead of taking turns by arrival.
pub struct StartLine {
    zklock: Barrier,
}

impl StartLine {
    /// A start line for `zklock_parties` tasks (each calls [`StartLine::ready`]) and the peers
    /// given to [`StartLine::open`].
    pub fn new(zklock_parties: usize) -> Arc<StartLine> {
        Arc::new(StartLine { zklock: Barrier::new(zklock_parties + 1) })
    }

    /// A zklock party, connected with its lock built, waits here for the start.
    pub async fn ready(&self) {
        self.zklock.wait().await;
    }

    /// Waits until every peer has reported ready and every zklock party is at the line, then
    /// starts them all. Panics, naming who, when one is not ready within [`READY_TIMEOUT`].
    pub async fn open(&self, peers: &mut [Peer]) {
        let deadline = Instant::now() + READY_TIMEOUT;
        tokio::task::block_in_place(|| peers.iter_mut().for_each(|peer| peer.wait_ready(deadline)));
        tokio::time::timeout_at(deadline.into(), self.zklock.wait())
            .await
            .unwrap_or_else(|_| panic!("the zklock parties were not connected within {READY_TIMEOUT:?}"));
        peers.iter_mut().for_each(Peer::go);
    }
}

/// A fresh log file for one test.
pub fn temp_log(name: &str) -> PathBuf {
    let log = std::env::temp_dir().join(format!("zklock-{name}-{}.log", std::process::id()));
    let _ = std::fs::remove_file(&log);
    log
}

/// What a zklock holder does in the shared log: enter, hold for `hold`, exit.
pub async fn logged_section(log: &Path, name: &str, mode: &str, hold: Duration) {
    append(log, "enter", name, mode);
    tokio::time::sleep(hold).await;
    append(log, "exit", name, mode);
}

/// Waits for the zklock tasks, then for every peer to exit successfully within `timeout`.
pub async fn finish(tasks: Vec<tokio::task::JoinHandle<()>>, peers: impl IntoIterator<Item = Peer>, timeout: Duration) {
    for task in tasks {
        task.await.unwrap();
    }
    for peer in peers {
        tokio::task::block_in_place(|| peer.wait_success(timeout));
    }
}

/// Appends one `enter`/`exit` line, as the peers do (one O_APPEND write each).
pub fn append(log: &Path, event: &str, name: &str, mode: &str) {
    let mut file = std::fs::OpenOptions::new().create(true).append(true).open(log).unwrap();
    file.write_all(format!("{event} {name} {mode}\n").as_bytes()).unwrap();
}

/// One line of the shared log: (line number, entering?, who, mode).
type Event<'a> = (usize, bool, &'a str, &'a str);

/// Parses the shared log, and checks that every participant entered as often as expected.
fn events<'a>(text: &'a str, expected_entries: &[(&str, u32)]) -> Vec<Event<'a>> {
    let events: Vec<Event> = text
        .lines()
        .enumerate()
        .map(|(number, line)| match line.split(' ').collect::<Vec<_>>()[..] {
            ["enter", name, mode] => (number, true, name, mode),
            ["exit", name, mode] => (number, false, name, mode),
            _ => panic!("bad log line {number}: {line:?}"),
        })
        .collect();
    for (name, count) in expected_entries {
        let entered = events.iter().filter(|(_, enter, who, _)| *enter && who == name).count();
        assert_eq!(entered, *count as usize, "entries of {name}");
    }
    events
}

/// Checks a log of `lease` entries: never more than `max_leases` holders at once, and every
/// participant entered as often as expected. Returns the most holders seen at once.
pub fn check_leases(log: &Path, max_leases: usize, expected_entries: &[(&str, u32)]) -> usize {
    let text = std::fs::read_to_string(log).unwrap();
    let mut holders: HashMap<&str, usize> = HashMap::new();
    let mut most = 0;
    for (number, enter, name, _) in events(&text, expected_entries) {
        let count = holders.entry(name).or_default();
        if enter {
            *count += 1;
            let held: usize = holders.values().sum();
            assert!(held <= max_leases, "line {number}: {held} leases held at once\n{text}");
            most = most.max(held);
        } else {
            *count = count.checked_sub(1).unwrap_or_else(|| panic!("line {number}: {name} exits without entering"));
        }
    }
    most
}

/// Checks the shared log: writers (and mutex holders) were alone, readers only shared with
/// readers, and every participant entered as often as expected. Returns the number of times
/// readers held together, to show that sharing happened.
pub fn check_log(log: &Path, expected_entries: &[(&str, u32)]) -> u32 {
    let text = std::fs::read_to_string(log).unwrap();
    let mut holders: HashMap<&str, &str> = HashMap::new();
    let mut shared_reads = 0;
    for (number, enter, name, mode) in events(&text, expected_entries) {
        if enter {
            let exclusive = mode != "read";
            assert!(
                holders.is_empty() || (!exclusive && holders.values().all(|m| *m == "read")),
                "line {number}: {name} ({mode}) entered while {holders:?} held\n{text}"
            );
            if !holders.is_empty() {
                shared_reads += 1;
            }
            holders.insert(name, mode);
        } else {
            assert!(holders.remove(name).is_some(), "line {number}: {name} exits without entering");
        }
    }
    shared_reads
}

/// How holds passed between zklock and the peers' library, read from the shared log.
#[derive(Debug)]
pub struct Turns {
    /// Entries by a peer right after an entry by zklock.
    pub zklock_to_peer: usize,
    /// Entries by zklock right after an entry by a peer.
    pub peer_to_zklock: usize,
    /// Entries made while a holder from the other library held (shared reads, leases).
    pub shared_across: usize,
}

/// Reads from the log how turns passed between zklock (participants named `zklock...`) and the
/// peers, and checks that the entries switched library at least `at_least` times each way: a log
/// of every zklock hold, then every peer hold, switches once and fails.
pub fn check_turns(log: &Path, at_least: usize) -> Turns {
    let text = std::fs::read_to_string(log).unwrap();
    let is_zklock = |name: &str| name.starts_with("zklock");
    let mut turns = Turns { zklock_to_peer: 0, peer_to_zklock: 0, shared_across: 0 };
    let mut holders: HashSet<&str> = HashSet::new();
    // Consecutive entries by one library, as (zklock?, how many), for the failure message.
    let mut runs: Vec<(bool, usize)> = Vec::new();
    for (_, enter, name, _) in events(&text, &[]) {
        if !enter {
            holders.remove(name);
            continue;
        }
        let zklock = is_zklock(name);
        match runs.last_mut() {
            Some((last, count)) if *last == zklock => *count += 1,
            Some((last, _)) => {
                *(if *last { &mut turns.zklock_to_peer } else { &mut turns.peer_to_zklock }) += 1;
                runs.push((zklock, 1));
            }
            None => runs.push((zklock, 1)),
        }
        if holders.iter().any(|holder| is_zklock(holder) != zklock) {
            turns.shared_across += 1;
        }
        holders.insert(name);
    }
    let runs: Vec<String> =
        runs.iter().map(|(zklock, count)| format!("{} x{count}", if *zklock { "zklock" } else { "peer" })).collect();
    assert!(
        turns.zklock_to_peer >= at_least && turns.peer_to_zklock >= at_least,
        "zklock and the peers switched fewer than {at_least} times each way: {turns:?}; entries in turn: {}",
        runs.join(", ")
    );
    turns
}

/// A zklock reader and a zklock writer of the read-write lock at `path` (`schema`'s layout, its
/// nodes named so) contend with `peers`, another library's reader and writer named
/// `{library}-reader` and `{library}-writer`, each side for `writes` rounds of writing and twice
/// as many of reading (writers queued between readers keep them apart, so readers take twice
/// the rounds: once the writers are done, readers share for sure). Then the log must show
/// readers overlapping only readers, every round, `switches` turns each way, and a zklock
/// reader holding beside the other library's.
pub async fn read_write_contention(
    path: &str,
    log: &Path,
    schema: zklock::NodeSchema,
    mut peers: [Peer; 2],
    (library, writes, timeout, switches): (&str, u32, Duration, usize),
) {
    let (reads, start) = (2 * writes, StartLine::new(2));
    let (writer_name, reader_name) =
        if schema == zklock::NodeSchema::Kazoo { ("__lock__", "__rlock__") } else { ("__WRIT__", "__READ__") };
    let mut rust = Vec::new();
    for (name, write) in [("zklock-reader", false), ("zklock-writer", true)] {
        let (path, log, start) = (path.to_owned(), log.to_owned(), start.clone());
        rust.push(tokio::spawn(async move {
            let client = super::connect().await;
            let lock = zklock::InterProcessReadWriteLock::builder(&client, &path).node_schema(schema).build().unwrap();
            let (side, mode, name_part) =
                if write { (lock.write_lock(), "write", writer_name) } else { (lock.read_lock(), "read", reader_name) };
            start.ready().await;
            for _ in 0..if write { writes } else { reads } {
                let guard = side.acquire_timeout(timeout).await.unwrap().expect("zklock starved");
                assert!(guard.node_path().contains(name_part), "{}", guard.node_path());
                logged_section(&log, name, mode, Duration::from_millis(if write { 5 } else { 20 })).await;
                guard.release().await.unwrap();
            }
        }));
    }
    start.open(&mut peers).await;
    finish(rust, peers, timeout).await;
    let (peer_reader, peer_writer) = (format!("{library}-reader"), format!("{library}-writer"));
    let expected = [
        (peer_reader.as_str(), reads),
        (peer_writer.as_str(), writes),
        ("zklock-reader", reads),
        ("zklock-writer", writes),
    ];
    let shared = check_log(log, &expected);
    let turns = check_turns(log, switches);
    eprintln!("readers held together {shared} times; {turns:?}");
    assert!(turns.shared_across > 0, "a zklock reader and a {library} reader never held together");
    let _ = std::fs::remove_file(log);
}
