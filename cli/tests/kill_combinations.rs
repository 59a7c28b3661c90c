//! No SIGKILL of zklock's own processes (zklock, its watchdog), in any combination, leaves
//! anything of the command running once the lock can pass to another: the command, its
//! grandchild, and a daemon it double-forked out of its process group and session are all dead
//! before a second zklock on the same path runs its command. Without a PID namespace (forced
//! here, as on a kernel that has none), the weaker promise of the man page is checked.

#[path = "../../tests/common/mod.rs"]
mod common;
mod support;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::{connect, server, unique_path, wait_for_children};
use support::{read, zklock, Group};

/// How long any one thing the test waits for may take.
const BOUND: Duration = Duration::from_secs(30);

/// Which of zklock's processes the operator kills, all at once.
#[derive(Clone, Copy, Debug)]
enum Kill {
    Zklock,
    Watchdog,
    Both,
    /// `pkill -9 zklock`: every process named zklock-something (of this test's tree).
    ByName,
    /// `pkill -9 -f zklock`: every process with zklock in its command line (of this test's tree).
    ByCommandLine,
}

/// The files of one test's command tree: `pids` (each process of the tree writes its pid as
/// /proc shows it) and `beats` (each appends its letter every 50 ms; the second holder's
/// command writes "B start" and "B end").
struct Tree {
    dir: PathBuf,
}

impl Tree {
    fn new(path: &str) -> Tree {
        // No "zklock" in the tree's command lines, so that only zklock's own processes match a
        // pkill by command line.
        let dir = std::env::temp_dir().join(format!("kill-tree-{}", path.replace('/', "_").replace("zklock", "zk")));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Tree { dir }
    }

    fn pids_file(&self) -> PathBuf {
        self.dir.join("pids")
    }

    fn beats_file(&self) -> PathBuf {
        self.dir.join("beats")
    }

    /// The command: a loop of its own, a grandchild in its group, and a daemon double-forked
    /// into a session of its own (out of the group: only a PID namespace or a subreaper can
    /// find it).
    fn command(&self) -> String {
        let (pids, beats) = (self.pids_file(), self.beats_file());
        let (pids, beats) = (pids.display(), beats.display());
        let beat = |letter: &str| {
            format!(
                "read -r pid rest < /proc/self/stat; echo $pid >> {pids}; \
                 while :; do echo {letter} >> {beats}; sleep 0.05; done"
            )
        };
        format!(
            "trap '' TERM HUP; ( {grandchild} ) & ( setsid sh -c '{daemon}' & ); {own}",
            grandchild = beat("g"),
            daemon = beat("d"),
            own = beat("c"),
        )
    }

    /// The second holder's command, which marks where it ran among the first tree's beats.
    fn second_command(&self) -> String {
        let beats = self.beats_file();
        let beats = beats.display();
        format!("echo 'B start' >> {beats}; sleep 0.3; echo 'B end' >> {beats}")
    }

    /// The pids of the tree, once all three wrote theirs and beat.
    fn pids(&self) -> Vec<libc::pid_t> {
        until("the command's tree runs", || {
            let beats = read(&self.beats_file());
            read(&self.pids_file()).lines().count() == 3 && ["c", "g", "d"].iter().all(|letter| beats.contains(letter))
        });
        read(&self.pids_file()).lines().map(|pid| pid.trim().parse().unwrap()).collect()
    }
}

impl Drop for Tree {
    /// A zklock that lets its command outlive it must not leave it running after the test: the
    /// processes that wrote their pids, if they are still ours (their command line names our
    /// directory).
    fn drop(&mut self) {
        let ours = self.dir.display().to_string();
        for pid in read(&self.pids_file()).lines().filter_map(|pid| pid.trim().parse::<libc::pid_t>().ok()) {
            if command_line(pid).contains(&ours) {
                // SAFETY: kill(2) on a process of this test's tree.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                }
            }
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Waits until `condition` holds.
fn until(what: &str, condition: impl Fn() -> bool) {
    let started = Instant::now();
    while !condition() {
        assert!(started.elapsed() < BOUND, "not {what} after {BOUND:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn command_line(pid: libc::pid_t) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|bytes| String::from_utf8_lossy(&bytes).replace('\0', " "))
        .unwrap_or_default()
}

/// "pid (comm) state ppid ...": the name, the state letter and the parent.
fn stat(pid: libc::pid_t) -> Option<(String, char, libc::pid_t)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (open, close) = (stat.find('(')?, stat.rfind(')')?);
    let mut rest = stat[close + 1..].split_whitespace();
    let state = rest.next()?.chars().next()?;
    Some((stat[open + 1..close].to_owned(), state, rest.next()?.parse().ok()?))
}

/// Gone, or a zombie nobody reaped yet (dead all the same).
fn dead(pid: libc::pid_t) -> bool {
    stat(pid).is_none_or(|(_, state, _)| state == 'Z')
}

/// Every process whose ancestors include `root` (and `root`).
fn tree_of(root: libc::pid_t) -> Vec<libc::pid_t> {
    let all: Vec<libc::pid_t> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    all.into_iter()
        .filter(|&pid| {
            let mut at = pid;
            for _ in 0..64 {
                if at == root {
                    return true;
                }
                match stat(at) {
                    Some((_, _, parent)) if parent > 1 => at = parent,
                    _ => return false,
                }
            }
            false
        })
        .collect()
}

/// The watchdog: zklock's child.
fn watchdog_of(zklock: libc::pid_t) -> libc::pid_t {
    let find = || {
        tree_of(zklock)
            .into_iter()
            .find(|&pid| stat(pid).is_some_and(|(name, _, parent)| parent == zklock && name == "zklock-watchdog"))
    };
    until("the watchdog runs", || find().is_some());
    find().unwrap()
}

/// The pids `kill` names, chosen before any is killed, as pkill does.
fn victims(kill: Kill, zklock: libc::pid_t, watchdog: libc::pid_t) -> Vec<libc::pid_t> {
    match kill {
        Kill::Zklock => vec![zklock],
        Kill::Watchdog => vec![watchdog],
        Kill::Both => vec![zklock, watchdog],
        Kill::ByName => tree_of(zklock)
            .into_iter()
            .filter(|&pid| stat(pid).is_some_and(|(name, ..)| name.contains("zklock")))
            .collect(),
        Kill::ByCommandLine => {
            tree_of(zklock).into_iter().filter(|&pid| command_line(pid).contains("zklock")).collect()
        }
    }
}

/// Runs the command tree under a first zklock with a second waiting on the path, kills `kill`
/// of the first's processes with SIGKILL, and checks that the whole tree is dead (`full`), or
/// only the command itself (without a namespace, zklock and its watchdog killed together), and
/// that nothing of it beat after the second holder's command started.
async fn killed(kill: Kill, namespace: bool, full: bool) {
    let path = unique_path(&format!("kill-{kill:?}-{namespace}"));
    let zk = server().connect_string();
    let tree = Tree::new(&path);
    let mut first = zklock(&zk);
    first.args([&path, "--", "sh", "-c", &tree.command()]);
    let mut second = zklock(&zk);
    second.args([&path, "--", "sh", "-c", &tree.second_command()]);
    if !namespace {
        first.env("ZKLOCK_NO_PID_NAMESPACE", "1");
    }
    let first = Group::spawn(&mut first);
    let pids = tree.pids();
    let namespace_of = |pid: &str| std::fs::read_link(format!("/proc/{pid}/ns/pid")).unwrap();
    let isolated = namespace_of(&pids[0].to_string()) != namespace_of("self");
    assert_eq!(isolated, namespace, "the command runs in a PID namespace of its own");
    let zklock_pid = first.0.id() as libc::pid_t;
    let watchdog = watchdog_of(zklock_pid);
    let mut second = Group::spawn(&mut second);
    let client = connect().await;
    wait_for_children(&client, &path, 2).await;
    let victims = victims(kill, zklock_pid, watchdog);
    assert!(!victims.is_empty(), "{kill:?} names no process");
    for &pid in &victims {
        // SAFETY: kill(2) on zklock or its watchdog, of this test.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
        }
    }
    if let Kill::Watchdog = kill {
        let mut first = first;
        assert_eq!(first.wait(BOUND).code(), Some(128 + libc::SIGKILL), "as if the command was killed");
        assert!(second.wait(BOUND).success(), "the second holder ran");
        return assert_tree_dead(&tree, &pids, kill, full);
    }
    assert!(second.wait(BOUND).success(), "the second holder ran");
    assert_tree_dead(&tree, &pids, kill, full);
    drop(first);
}

/// Nothing of the first tree beat after the second holder's command started, and (`full`) all
/// of it is dead, or at least the command itself.
fn assert_tree_dead(tree: &Tree, pids: &[libc::pid_t], kill: Kill, full: bool) {
    let text = read(&tree.beats_file());
    let lines: Vec<&str> = text.lines().collect();
    let b_start = lines.iter().position(|line| *line == "B start").expect("the second holder's command ran");
    let survivors: Vec<libc::pid_t> = pids.iter().copied().filter(|&pid| !dead(pid)).collect();
    if full {
        let late: Vec<&&str> = lines[b_start..].iter().filter(|line| !line.starts_with('B')).collect();
        assert!(late.is_empty(), "{kill:?}: the first tree beat beside the second holder: {late:?}");
        assert!(survivors.is_empty(), "{kill:?}: alive after the lock passed on: {survivors:?} of {pids:?}");
    } else {
        assert!(!lines[b_start..].contains(&"c"), "{kill:?}: the command itself beat beside the second holder");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zklock_killed_alone_takes_the_whole_tree_along() {
    killed(Kill::Zklock, true, true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_watchdog_killed_alone_takes_the_whole_tree_along() {
    killed(Kill::Watchdog, true, true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zklock_and_its_watchdog_killed_at_once_take_the_whole_tree_along() {
    killed(Kill::Both, true, true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pkill_by_name_takes_the_whole_tree_along() {
    killed(Kill::ByName, true, true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pkill_by_command_line_takes_the_whole_tree_along() {
    killed(Kill::ByCommandLine, true, true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_namespace_zklock_killed_alone_takes_the_whole_tree_along() {
    killed(Kill::Zklock, false, true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_namespace_the_watchdog_killed_alone_takes_the_whole_tree_along() {
    killed(Kill::Watchdog, false, true).await;
}

/// The weaker promise: the command dies with its watchdog, what it left in the background may
/// not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_namespace_both_killed_at_once_take_at_least_the_command_along() {
    killed(Kill::Both, false, false).await;
}

/// What the command sees: in its namespace it is pid 2 (the watchdog is 1), while /proc, not
/// remounted, shows the host's processes, and /proc/self is the command itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_command_sees_its_namespace_pid_and_the_hosts_proc() {
    let path = unique_path("kill-pids-seen");
    let tree = Tree::new(&path);
    let seen = tree.dir.join("seen");
    let script = format!("read -r pid rest < /proc/self/stat; echo \"$$ $PPID $pid\" > {0}", seen.display());
    let mut run = Group::spawn(zklock(&server().connect_string()).args([&path, "--", "sh", "-c", &script]));
    assert!(run.wait(BOUND).success());
    let text = read(&seen);
    let words: Vec<&str> = text.split_whitespace().collect();
    assert_eq!(words[..2], ["2", "1"], "{text}");
    assert_ne!(words[2], "2", "/proc/self is the host's view: {text}");
}

/// A zklock run by a zklock's command (here the command itself, pid 2 of the outer namespace)
/// runs where /proc numbers processes as the host does: it must still find (and kill) only its
/// own children, not the host's children of pid 2 (the kernel's threads), and both end with the
/// inner command's status.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_zklock_run_by_a_zklocks_command_ends_with_its_commands_status() {
    let outer = unique_path("kill-nested-outer");
    let inner = unique_path("kill-nested-inner");
    let zk = server().connect_string();
    let zklock_bin = env!("CARGO_BIN_EXE_zklock");
    let nested = format!("exec {zklock_bin} --zk {zk} --session-timeout 4s {inner} -- sh -c 'exit 3'");
    let mut run = Group::spawn(zklock(&zk).args([&outer, "--", "sh", "-c", &nested]));
    assert_eq!(run.wait(BOUND).code(), Some(3));
}
