//! zklock as a shell job: Ctrl-Z on a terminal (or SIGTSTP) stops it with its command and gives
//! the shell its prompt back, `fg` (or SIGCONT) continues both while the lock is still held.

use crate::common;
use crate::support;

use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{children, connect, server, unique_path};
use support::{until, zklock, Group, Pty};
use zookeeper_client::Client;

/// How long any one thing the test waits for may take.
const BOUND: Duration = Duration::from_secs(30);

/// An interactive bash on a terminal of its own, as a user's: the session leader, with job
/// control. Killed, with the zklock it ran, when dropped.
struct Shell {
    bash: Child,
    master: std::fs::File,
    screen: Arc<Mutex<String>>,
    zklock: Option<libc::pid_t>,
}

impl Shell {
    fn start() -> Shell {
        let pty = Pty::open();
        let mut command = Command::new("bash");
        command.args(["--norc", "--noprofile", "-i"]).env("PS1", "prompt> ").env("HISTFILE", "/dev/null");
        for (name, _) in std::env::vars() {
            if name.starts_with("ZKLOCK_") || name == "ZK_CONNECT" || name == "RUST_LOG" {
                command.env_remove(name);
            }
        }
        command.stdin(pty.stdio()).stdout(pty.stdio()).stderr(pty.stdio());
        // SAFETY: setsid and ioctl are async-signal-safe; the pty's slave is the child's stdin.
        unsafe {
            command.pre_exec(|| {
                if libc::setsid() < 0 || libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let bash = command.spawn().unwrap();
        drop(command);
        let Pty { master, slave } = pty;
        drop(slave);
        let screen = Arc::new(Mutex::new(String::new()));
        let mut reader = master.try_clone().unwrap();
        let written = screen.clone();
        std::thread::spawn(move || {
            let mut buffer = [0; 4096];
            while let Ok(read @ 1..) = reader.read(&mut buffer) {
                written.lock().unwrap().push_str(&String::from_utf8_lossy(&buffer[..read]));
            }
        });
        Shell { bash, master, screen, zklock: None }
    }

    /// Types `bytes` on the terminal's keyboard.
    fn press(&mut self, bytes: &[u8]) {
        self.master.write_all(bytes).unwrap();
    }

    fn type_line(&mut self, line: &str) {
        self.press(format!("{line}\n").as_bytes());
    }

    /// Types a zklock line on `path` (a 20 s session) in front of `command`.
    fn run_under_zklock(&mut self, zk: &str, path: &str, command: &str) {
        let zklock = env!("CARGO_BIN_EXE_zklock");
        self.type_line(&format!("{zklock} --zk {zk} --session-timeout 20s {path} -- {command}"));
    }

    /// Waits until the shell answers a line typed (it prompts again: zklock stopped or ended);
    /// the byte after the answer.
    fn answers(&mut self) -> usize {
        self.type_line("echo shell=$((6*7))");
        self.wait_for("shell=42", 0)
    }

    /// Ctrl-Z: waits until the command is `stopped` and zklock too, the shell prompts again and
    /// the lock on `path` is still held; then `fg`, until zklock and the command are
    /// `continued`. A client, and the byte after the shell's answer.
    async fn ctrl_z_and_fg(
        &mut self,
        zklock: libc::pid_t,
        path: &str,
        stopped: (&str, impl Fn() -> bool),
        continued: (&str, impl Fn() -> bool),
    ) -> (Client, usize) {
        self.press(b"\x1a");
        until(stopped.0, stopped.1);
        until("zklock stopped with its command", || state(zklock) == 'T');
        let prompted = self.answers();
        let client = connect().await;
        assert_eq!(children(&client, path).await.len(), 1, "held while stopped");
        self.type_line("fg");
        until("zklock continued", || state(zklock) != 'T');
        until(continued.0, continued.1);
        (client, prompted)
    }

    /// Waits until `zklock` ended, and for the shell to say it exited 0 (after byte `from`).
    fn saw_it_end_with_0(&mut self, zklock: libc::pid_t, from: usize) {
        until("zklock ended", || state(zklock) == '?');
        self.type_line("echo exited=$?");
        self.wait_for("exited=0", from);
    }

    /// Waits for `what` on the screen after byte `from`; the byte after it.
    fn wait_for(&self, what: &str, from: usize) -> usize {
        let started = Instant::now();
        loop {
            let screen = self.screen.lock().unwrap().clone();
            if let Some(at) = screen.get(from..).and_then(|after| after.find(what)) {
                return from + at + what.len();
            }
            assert!(started.elapsed() < BOUND, "no {what:?} after byte {from} on the terminal:\n{screen}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Shell {
    fn drop(&mut self) {
        // SAFETY: kill(2) on the zklock this shell ran (its watchdog then kills the command)
        // and on our own child.
        unsafe {
            if let Some(zklock) = self.zklock {
                libc::kill(zklock, libc::SIGKILL);
            }
            libc::kill(self.bash.id() as libc::pid_t, libc::SIGKILL);
        }
        let _ = self.bash.wait();
    }
}

/// The state letter of `pid` in `/proc/PID/stat` ('T' when stopped by a signal).
fn state(pid: libc::pid_t) -> char {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    stat.rfind(')').and_then(|end| stat[end + 1..].trim_start().chars().next()).unwrap_or('?')
}

/// Whether `pid` is stopped, or held up by a stop: asleep in the kernel (state D) with a terminal
/// stop pending, as a shell is in vfork when the stop reached its child before the child's exec
/// (it cannot stop or run until the child is continued).
fn stopped_or_held_up(pid: libc::pid_t) -> bool {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| status.lines().find_map(|line| line.strip_prefix(name)).unwrap_or_default().trim();
    let pending = |name: &str| u64::from_str_radix(field(name), 16).unwrap_or(0);
    let terminal_stops = (1 << (libc::SIGTSTP - 1)) | (1 << (libc::SIGTTIN - 1)) | (1 << (libc::SIGTTOU - 1));
    state(pid) == 'T' || (state(pid) == 'D' && (pending("SigPnd:") | pending("ShdPnd:")) & terminal_stops != 0)
}

/// A directory for the job of the test on `path`, with `job.sh`: a command that writes its pid
/// (as /proc shows it: in its PID namespace, `$$` is another number) to `pids`, then prints `tick` (and adds a line to `ticks`) until `done` exists,
/// and ends with 0 if it does (1 after a minute).
fn job_dir(path: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("zklock-{}", path.replace('/', "_")));
    std::fs::create_dir_all(&dir).unwrap();
    let job = "read -r pid rest < /proc/self/stat; echo \"$pid\" > \"$1/pids\"; i=0\n\
        while [ ! -e \"$1/done\" ] && [ $i -lt 600 ]; do\n\
          echo tick; echo . >> \"$1/ticks\"; sleep 0.1; i=$((i+1))\n\
        done\n\
        [ -e \"$1/done\" ]\n";
    std::fs::write(dir.join("job.sh"), job).unwrap();
    dir
}

/// The command's pid and zklock's (its parent is the watchdog, whose parent is zklock), once the
/// job wrote its own.
fn job_pids(pids: &std::path::Path) -> (libc::pid_t, libc::pid_t) {
    until("the job's pid written", || std::fs::read_to_string(pids).is_ok_and(|text| text.ends_with('\n')));
    let command = std::fs::read_to_string(pids).unwrap().trim().parse().unwrap();
    (command, parent(parent(command)))
}

/// The parent of `pid`, from `/proc/PID/stat`.
fn parent(pid: libc::pid_t) -> libc::pid_t {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    stat[stat.rfind(')').unwrap() + 1..].split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Ctrl-Z stops the command and zklock together, and the shell prompts again (before, zklock
/// ran on, so the shell waited for it with the command stopped and the lock held); `fg`
/// continues both, with the lock still held after a short stop, and the command ends with 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_z_stops_zklock_with_its_command_and_fg_continues_both() {
    let zk = server().connect_string();
    let path = unique_path("job-control-ctrl-z");
    let dir = job_dir(&path);
    let (pids, done, script) = (dir.join("pids"), dir.join("done"), dir.join("job.sh"));
    let mut shell = Shell::start();
    shell.wait_for("prompt> ", 0);
    shell.run_under_zklock(&zk, &path, &format!("sh {} {}", script.display(), dir.display()));
    shell.wait_for("tick", 0);
    let (command, zklock) = job_pids(&pids);
    shell.zklock = Some(zklock);

    let stopped = ("the command stopped (or held up by the stop)", || stopped_or_held_up(command));
    let continued = ("the command continued", || state(command) != 'T');
    let (client, prompted) = shell.ctrl_z_and_fg(zklock, &path, stopped, continued).await;
    shell.wait_for("tick", prompted);
    assert_eq!(children(&client, &path).await.len(), 1, "held after a short stop");
    std::fs::write(&done, "").unwrap();
    shell.saw_it_end_with_0(zklock, prompted);
    assert!(children(&client, &path).await.is_empty(), "released");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A directory for the job of the test on `path`, with `spawn`: a command that writes its pid to
/// `pids`, then vforks a child that opens the FIFO `fifo` for reading before it execs `true`.
/// The command waits in the kernel (state D) until the child execs, which it does once
/// something opens the FIFO for writing: a stop that reaches both (Ctrl-Z, `kill -TSTP`) stops
/// the child and leaves the command unable to stop or to run, as a shell is at each of its
/// vforks (dash's, for every command it runs) if the stop comes before the child's exec.
/// Built with `cc`, the linker the tests were linked with.
fn spawning_job_dir(path: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("zklock-{}", path.replace('/', "_")));
    std::fs::create_dir_all(&dir).unwrap();
    nix::unistd::mkfifo(&dir.join("fifo"), nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let source = r#"
        #include <fcntl.h>
        #include <stdio.h>
        #include <sys/wait.h>
        #include <unistd.h>
        int main(int argc, char **argv) {
            char path[4096];
            snprintf(path, sizeof path, "%s/pids", argv[1]);
            FILE *pids = fopen(path, "w");
            fprintf(pids, "%d\n", getpid());
            fclose(pids);
            snprintf(path, sizeof path, "%s/fifo", argv[1]);
            pid_t child = vfork();
            if (child == 0) {
                open(path, O_RDONLY);
                execl("/bin/true", "true", (char *)0);
                _exit(127);
            }
            int status;
            if (child < 0 || waitpid(child, &status, 0) < 0) return 1;
            return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
        }
    "#;
    std::fs::write(dir.join("spawn.c"), source).unwrap();
    let built = Command::new("cc").arg("-o").arg(dir.join("spawn")).arg(dir.join("spawn.c")).status().unwrap();
    assert!(built.success(), "cc: {built}");
    dir
}

/// The one child of `pid`, once it has one.
fn only_child(pid: libc::pid_t) -> libc::pid_t {
    let children = || std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default();
    until("the command's child started", || !children().trim().is_empty());
    children().trim().parse().unwrap()
}

/// Lets the spawned child of a `spawning_job_dir` job exec: opens the FIFO for writing.
fn let_the_child_exec(dir: &std::path::Path) -> std::fs::File {
    std::fs::OpenOptions::new().write(true).open(dir.join("fifo")).unwrap()
}

/// Ctrl-Z while the command is inside a vfork (its child not yet exec'ed) stops zklock too: the
/// child stops, the command cannot until the child execs, and the shell prompts again, as it
/// would for the command run without zklock. Before, the watchdog waited for the command's
/// own stop, which never came: zklock ran on and the terminal stayed the job's (a Ctrl-Z at
/// one of dash's vforks: 3 runs in 11 of the test above under load).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_z_while_the_command_is_inside_a_vfork_stops_zklock_too() {
    let zk = server().connect_string();
    let path = unique_path("job-control-ctrl-z-vfork");
    let dir = spawning_job_dir(&path);
    let mut shell = Shell::start();
    shell.wait_for("prompt> ", 0);
    shell.run_under_zklock(&zk, &path, &format!("{} {}", dir.join("spawn").display(), dir.display()));
    let (command, zklock) = job_pids(&dir.join("pids"));
    shell.zklock = Some(zklock);
    let child = only_child(command);
    until("the command inside its vfork", || state(command) == 'D');

    let stopped = ("the child stopped", || state(child) == 'T');
    let continued = ("the child continued", || state(child) != 'T');
    let (client, prompted) = shell.ctrl_z_and_fg(zklock, &path, stopped, continued).await;
    drop(let_the_child_exec(&dir));
    shell.saw_it_end_with_0(zklock, prompted);
    assert!(children(&client, &path).await.is_empty(), "released");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The same for SIGTSTP sent to zklock, which passes it on to the command's group.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigtstp_while_the_command_is_inside_a_vfork_stops_zklock_too() {
    let zk = server().connect_string();
    let path = unique_path("job-control-sigtstp-vfork");
    let dir = spawning_job_dir(&path);
    let mut job = Group::spawn(zklock(&zk).arg(&path).arg("--").arg(dir.join("spawn")).arg(&dir).stdout(Stdio::null()));
    let (command, zklock) = job_pids(&dir.join("pids"));
    let child = only_child(command);
    until("the command inside its vfork", || state(command) == 'D');
    job.signal_job(libc::SIGTSTP);
    until("the child stopped", || state(child) == 'T');
    until("zklock stopped with its command", || state(zklock) == 'T');
    // Past the stop limit (a quarter of the 4 s session) and the watchdog's look after it: a
    // command held up by the stop counts as stopped, and is not killed for zklock's stop. (A
    // wait on the clock: the time is what is tested.)
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!((state(command), state(child)), ('D', 'T'), "the command held up, not killed");
    job.signal_job(libc::SIGCONT);
    until("zklock continued", || state(zklock) != 'T');
    until("the child continued", || state(child) != 'T');
    drop(let_the_child_exec(&dir));
    assert_eq!(job.wait(BOUND).code(), Some(0));
    let _ = std::fs::remove_dir_all(&dir);
}

/// SIGTSTP sent to zklock itself (no terminal: `kill -TSTP` to the job) is passed on to the
/// command, and zklock stops once the command has; SIGCONT to zklock continues both. Before,
/// zklock stopped alone and the command ran on, unwatched.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigtstp_to_zklock_stops_its_command_too_and_sigcont_continues_both() {
    sigtstp_stops_both_and_sigcont_continues_both(true);
}

/// The same without a PID namespace, the default (the watchdog is then no init, and must not
/// stop or die of what zklock passes on).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigtstp_and_sigcont_work_without_a_pid_namespace_too() {
    sigtstp_stops_both_and_sigcont_continues_both(false);
}

fn sigtstp_stops_both_and_sigcont_continues_both(namespace: bool) {
    let zk = server().connect_string();
    let path = unique_path(&format!("job-control-sigtstp-{namespace}"));
    let dir = job_dir(&path);
    let script = dir.join("job.sh");
    let mut zklock = zklock(&zk);
    if namespace {
        zklock.arg("--pid-namespace");
    }
    let mut job = Group::spawn(zklock.arg(&path).arg("--").arg("sh").arg(&script).arg(&dir).stdout(Stdio::null()));
    let (command, zklock) = job_pids(&dir.join("pids"));
    job.signal_job(libc::SIGTSTP);
    until("the command stopped (or held up by the stop)", || stopped_or_held_up(command));
    until("zklock stopped with its command", || state(zklock) == 'T');
    job.signal_job(libc::SIGCONT);
    until("zklock continued", || state(zklock) != 'T');
    until("the command continued", || state(command) != 'T');
    std::fs::write(dir.join("done"), "").unwrap();
    assert_eq!(job.wait(BOUND).code(), Some(0));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A job stopped longer than the session timeout has lost the lock: continued, zklock kills the
/// command without letting it run again and exits 76, as on any loss.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_stopped_past_its_session_loses_the_lock_and_its_command_never_runs_again() {
    let zk = server().connect_string();
    let path = unique_path("job-control-long-stop");
    let dir = job_dir(&path);
    let script = dir.join("job.sh");
    let mut job = Group::spawn(
        zklock(&zk).arg(&path).arg("--").arg("sh").arg(&script).arg(&dir).stdout(Stdio::null()).stderr(Stdio::piped()),
    );
    let (command, zklock) = job_pids(&dir.join("pids"));
    job.signal_job(libc::SIGTSTP);
    until("zklock stopped with its command", || stopped_or_held_up(command) && state(zklock) == 'T');
    let ticks = std::fs::read_to_string(dir.join("ticks")).unwrap();
    let client = connect().await;
    common::wait_for_children(&client, &path, 0).await;
    job.signal_job(libc::SIGCONT);
    assert_eq!(job.wait(BOUND).code(), Some(support::LOST));
    assert_eq!(state(command), '?', "the command is gone");
    assert_eq!(std::fs::read_to_string(dir.join("ticks")).unwrap(), ticks, "the command never ran again");
    let stderr = job.stderr();
    assert!(stderr.contains("lost"), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}
