//! Running real Curator (Java) and kazoo (Python) participants beside zklock, and checking the
//! log they all append to.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Where Debian's `libcurator-recipes-java` puts Curator (its manifest names the rest).
const CURATOR_JAR: &str = "/usr/share/java/curator-recipes.jar";
const SLF4J_NOP_JAR: &str = "/usr/share/java/slf4j-nop.jar";

/// Compiles `interop/CuratorLocker.java` once per test binary; returns the classpath to run it.
pub fn curator_classpath() -> String {
    static CLASSES: OnceLock<PathBuf> = OnceLock::new();
    let classes = CLASSES.get_or_init(|| {
        assert!(
            Path::new(CURATOR_JAR).is_file(),
            "Curator is missing: run scripts/install-deps (apt-get install -y libcurator-recipes-java)"
        );
        let classes = std::env::temp_dir().join(format!("zklock-interop-classes-{}", std::process::id()));
        std::fs::create_dir_all(&classes).unwrap();
        let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("interop/CuratorLocker.java");
        let status = Command::new("javac")
            .args(["-d".as_ref(), classes.as_os_str(), "-cp".as_ref(), CURATOR_JAR.as_ref(), source.as_os_str()])
            .status()
            .expect("run javac (install a JDK: apt-get install -y default-jdk-headless)");
        assert!(status.success(), "javac failed");
        classes
    });
    format!("{}:{CURATOR_JAR}:{SLF4J_NOP_JAR}", classes.display())
}

/// A peer process, killed if it is still running when dropped.
pub struct Peer {
    name: String,
    child: Child,
}

impl Peer {
    /// Starts a Curator participant: `mode` is `mutex`, `read` or `write`.
    pub fn curator(
        name: &str,
        connect: &str,
        path: &str,
        mode: &str,
        iterations: u32,
        hold_ms: u64,
        log: &Path,
    ) -> Peer {
        let child = Command::new("java")
            .args(["-Xshare:auto", "-XX:+UseSerialGC", "-cp", &curator_classpath(), "CuratorLocker"])
            .args([connect, path, mode, &iterations.to_string(), &hold_ms.to_string()])
            .arg(log)
            .arg(name)
            .stdin(Stdio::null())
            .spawn()
            .expect("start java");
        Peer { name: name.to_owned(), child }
    }

    /// Starts a kazoo participant (Debian's `python3-kazoo`, run by `/usr/bin/python3`), with
    /// kazoo's `extra_lock_patterns`.
    pub fn kazoo(
        name: &str,
        connect: &str,
        path: &str,
        iterations: u32,
        hold_ms: u64,
        log: &Path,
        extra_patterns: &[&str],
    ) -> Peer {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("interop/kazoo_locker.py");
        let child = Command::new("/usr/bin/python3")
            .arg(script)
            .args([connect, path, &iterations.to_string(), &hold_ms.to_string()])
            .arg(log)
            .arg(name)
            .args(extra_patterns)
            .stdin(Stdio::null())
            .spawn()
            .expect("start /usr/bin/python3 (install python3-kazoo: scripts/install-deps)");
        Peer { name: name.to_owned(), child }
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
