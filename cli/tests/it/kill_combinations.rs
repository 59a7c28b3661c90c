//! What the watchdog promises. With `--pid-namespace`, no SIGKILL of zklock's own processes
//! (zklock, its watchdog), in any combination, leaves anything of the command running once the
//! lock can pass to another: the command, its grandchild, and a daemon it double-forked out of
//! its process group and session are all dead before a second zklock on the same path runs its
//! command. By default (no namespace), the command sees the pids everyone sees, and the weaker
//! promise of the man page is checked; a stopped zklock has its command killed in either mode.

use crate::common;
use crate::support;

use std::path::PathBuf;
use std::time::Duration;

use common::{connect, server, unique_path, wait_for_children};
use support::{read, until, zklock, Group};

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
    if namespace {
        first.arg("--pid-namespace");
    }
    first.args([&path, "--", "sh", "-c", &tree.command()]);
    let mut second = zklock(&zk);
    second.args([&path, "--", "sh", "-c", &tree.second_command()]);
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

/// What the command sees with --pid-namespace: in its namespace it is pid 2 (the watchdog is
/// 1), while /proc, not remounted, shows the host's processes, and /proc/self is the command
/// itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_pid_namespace_the_command_sees_its_namespace_pid_and_the_hosts_proc() {
    let path = unique_path("kill-pids-seen");
    let tree = Tree::new(&path);
    let seen = tree.dir.join("seen");
    let script = format!("read -r pid rest < /proc/self/stat; echo \"$$ $PPID $pid\" > {0}", seen.display());
    let mut run =
        Group::spawn(zklock(&server().connect_string()).args(["--pid-namespace", &path, "--", "sh", "-c", &script]));
    assert!(run.wait(BOUND).success());
    let text = read(&seen);
    let words: Vec<&str> = text.split_whitespace().collect();
    assert_eq!(words[..2], ["2", "1"], "{text}");
    assert_ne!(words[2], "2", "/proc/self is the host's view: {text}");
}

/// A zklock run by a --pid-namespace zklock's command (here the command itself, pid 2 of the
/// outer namespace)
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
    let mut run = Group::spawn(zklock(&zk).args(["--pid-namespace", &outer, "--", "sh", "-c", &nested]));
    assert_eq!(run.wait(BOUND).code(), Some(3));
}

/// By default the command sees the pids everyone sees, as under flock(1): `$$` is the pid /proc
/// (and `ps`) gives it, its parent is the watchdog, and `/proc/$$` is its own entry. (With the
/// PID namespace that was the default as root, `$$` was 2, and `/proc/2` the kernel's kthreadd.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_command_sees_the_pids_everyone_sees() {
    let path = unique_path("kill-pids-host");
    let tree = Tree::new(&path);
    let seen = tree.dir.join("seen");
    let script = format!(
        "read -r pid rest < /proc/self/stat; read -r name < /proc/$$/comm; echo \"$$ $pid $PPID $name\" > {0}",
        seen.display()
    );
    let mut run = Group::spawn(zklock(&server().connect_string()).args([&path, "--", "sh", "-c", &script]));
    assert!(run.wait(BOUND).success());
    let text = read(&seen);
    let words: Vec<&str> = text.split_whitespace().collect();
    assert_eq!(words[0], words[1], "$$ is the pid /proc gives the command: {text}");
    assert_eq!(words[3], "sh", "/proc/$$ is the command's own entry: {text}");
    let parent: libc::pid_t = words[2].parse().unwrap();
    assert!(
        stat(parent).is_none_or(|(name, ..)| name == "zklock-watchdog"),
        "$PPID is the watchdog (or gone, the test being late): {text}"
    );
}

/// A pidfile written by the command names it for everyone (a `kill $(cat pidfile)` from outside
/// reaches it), and one written outside names that process for the command (its `kill -0` and
/// `kill -USR1` reach it): both ways, as a deploy job's `kill -HUP $(cat web.pid)` and a
/// single-instance guard's `kill -0 $(cat $PIDFILE)` need.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pidfiles_name_the_same_process_inside_the_command_and_out() {
    let path = unique_path("kill-pidfiles");
    let tree = Tree::new(&path);
    let dir = tree.dir.display().to_string();
    let outside_script = format!(
        "trap 'echo got >> {dir}/outside.got' USR1; echo $$ > {dir}/outside.pid; \
         while [ ! -e {dir}/done ]; do sleep 0.05; done"
    );
    let mut outside = Group::spawn(std::os::unix::process::CommandExt::process_group(
        std::process::Command::new("sh").args(["-c", &outside_script]),
        0,
    ));
    until("the outside process wrote its pidfile", || !read(&tree.dir.join("outside.pid")).is_empty());
    let inside_script = format!(
        "trap 'echo got >> {dir}/inside.got' USR1; echo $$ > {dir}/inside.pid; \
         kill -0 $(cat {dir}/outside.pid) && echo alive >> {dir}/inside.saw; \
         kill -USR1 $(cat {dir}/outside.pid) && echo sent >> {dir}/inside.saw; \
         while [ ! -e {dir}/done ]; do sleep 0.05; done"
    );
    let mut run = Group::spawn(zklock(&server().connect_string()).args([&path, "--", "sh", "-c", &inside_script]));
    until("the command read the outside pidfile", || read(&tree.dir.join("inside.saw")).lines().count() == 2);
    assert_eq!(read(&tree.dir.join("inside.saw")), "alive\nsent\n", "kill -0 and kill -USR1 of the outside pid");
    until("the outside process got the command's signal", || read(&tree.dir.join("outside.got")).contains("got"));
    let inside: libc::pid_t = read(&tree.dir.join("inside.pid")).trim().parse().unwrap();
    assert_eq!(stat(inside).map(|(name, ..)| name), Some("sh".to_owned()), "the pidfile names the command");
    // SAFETY: kill(2) on the command of this test's zklock, as its pidfile names it.
    unsafe {
        libc::kill(inside, libc::SIGUSR1);
    }
    until("the command got the signal sent to its pidfile's pid", || {
        read(&tree.dir.join("inside.got")).contains("got")
    });
    std::fs::write(tree.dir.join("done"), "").unwrap();
    assert!(run.wait(BOUND).success());
    assert!(outside.wait(BOUND).success());
}

/// --pid-namespace promises what only a namespace gives: refused (77) where the kernel gives
/// none (here: root without CAP_SYS_ADMIN, as in a container's default profile), before the lock
/// is taken, and the command never runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pid_namespace_without_the_privilege_is_refused_before_the_lock_is_taken() {
    let path = unique_path("kill-namespace-refused");
    let tree = Tree::new(&path);
    let ran = tree.dir.join("ran");
    let zk = server().connect_string();
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let mut zklock_run = match root {
        true => {
            let mut setpriv = support::bare_zklock_free(std::process::Command::new("setpriv"));
            setpriv.args(["--bounding-set=-sys_admin", "--inh-caps=-sys_admin", env!("CARGO_BIN_EXE_zklock")]);
            setpriv
        }
        false => support::bare_zklock(),
    };
    zklock_run.args(["--zk", &zk, "--pid-namespace", &path, "--", "touch"]).arg(&ran);
    let output = zklock_run.output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(77), "{stderr}");
    assert!(stderr.contains("--pid-namespace") && stderr.contains("CAP_SYS_ADMIN"), "{stderr}");
    assert!(!ran.exists(), "the command ran");
    let client = connect().await;
    let nodes = client.list_children(&path).await.unwrap_or_default();
    assert!(nodes.is_empty(), "no lock node was left or taken: {nodes:?}");
}

/// zklock stopped (SIGSTOP: an operator, a debugger; not a terminal's stop) sends no
/// heartbeat, and its session expires while the command runs on. The watchdog kills the
/// command's whole tree before the second holder runs its command, and zklock, continued, says
/// so and exits 76. (Before, the command ran for the whole second hold.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_zklock_has_its_command_killed_before_another_can_hold() {
    stopped(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_zklock_has_its_command_killed_in_a_pid_namespace_too() {
    stopped(true).await;
}

async fn stopped(namespace: bool) {
    let path = unique_path(&format!("kill-stopped-{namespace}"));
    let zk = server().connect_string();
    let tree = Tree::new(&path);
    let mut first = zklock(&zk);
    if namespace {
        first.arg("--pid-namespace");
    }
    first.args([&path, "--", "sh", "-c", &tree.command()]).stderr(std::process::Stdio::piped());
    let mut first = Group::spawn(&mut first);
    let pids = tree.pids();
    let mut second = Group::spawn(zklock(&zk).args([&path, "--", "sh", "-c", &tree.second_command()]));
    let client = connect().await;
    wait_for_children(&client, &path, 2).await;
    let zklock_pid = first.0.id() as libc::pid_t;
    // SAFETY: kill(2) on this test's zklock.
    unsafe {
        libc::kill(zklock_pid, libc::SIGSTOP);
    }
    assert!(second.wait(BOUND).success(), "the second holder ran");
    assert_tree_dead(&tree, &pids, Kill::Zklock, true);
    // SAFETY: kill(2) on this test's zklock.
    unsafe {
        libc::kill(zklock_pid, libc::SIGCONT);
    }
    assert_eq!(first.wait(BOUND).code(), Some(76), "a stopped zklock's run ends as a loss");
    let stderr = first.stderr();
    assert!(stderr.contains("zklock was stopped for over 1s"), "{stderr}");
}
