//! The line zklock draws on a terminal while it waits for a lock: where it stands and who holds,
//! redrawn as the wait goes on; nothing on a pipe or with --quiet.

use crate::common;
use crate::support;

use std::io::{Read as _, Write as _};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{server, unique_path};
use support::{zklock, zklock_on_terminal, Group, Pty};

/// Runs `zklock --timeout 2500ms [extra] PATH -- true` behind a holder, its stderr on a fresh
/// terminal, and returns what the terminal showed.
fn waits_on_a_terminal(zk: &str, path: &str, extra: &[&str]) -> String {
    let pty = Pty::open();
    let status =
        zklock(zk).args(extra).args(["--timeout", "2500ms", path, "--", "true"]).stderr(pty.stdio()).status().unwrap();
    assert_eq!(status.code(), Some(support::TIMED_OUT));
    pty.output()
}

#[test]
fn a_wait_on_a_terminal_shows_where_it_stands_and_quiet_or_a_pipe_shows_nothing() {
    let zk = server().connect_string();
    let path = unique_path("waiting-line");
    let (_holder, _node) = support::hold(&zk, &[], &path);

    let screen = waits_on_a_terminal(&zk, &path, &[]);
    assert!(screen.contains("zklock: waiting: 1 ahead · holder pid "), "{screen:?}");
    assert!(screen.contains("waited 2s"), "redrawn as the wait goes on: {screen:?}");
    let after = &screen[screen.rfind("waited").unwrap()..];
    let blank = after.split('\r').nth(1).unwrap_or_default();
    assert!(blank.len() > 40 && blank.trim().is_empty(), "the line is blanked once the wait ends: {screen:?}");
    assert!(after.contains("was still held by another"), "then the busy line, on a clean line: {screen:?}");
    assert!(!screen.contains('\x1b'), "no escape sequence: {screen:?}");

    let quiet = waits_on_a_terminal(&zk, &path, &["--quiet"]);
    assert!(!quiet.contains("waiting"), "{quiet:?}");

    let piped = zklock(&zk).args(["--timeout", "1s", &path, "--", "true"]).output().unwrap();
    assert_eq!(piped.status.code(), Some(support::TIMED_OUT));
    assert!(!String::from_utf8_lossy(&piped.stderr).contains("waiting:"), "{piped:?}");
}

/// A zklock waiting on a terminal of `columns`, the terminal's output read as it comes.
struct Waiting {
    zklock: Group,
    master: std::fs::File,
    output: Arc<Mutex<Vec<u8>>>,
    reader: Option<std::thread::JoinHandle<()>>,
    columns: usize,
}

impl Waiting {
    /// Starts `zklock [extra] PATH -- true` on a fresh terminal `columns` wide.
    fn start(zk: &str, path: &str, columns: u16, extra: &[&str], env: &[(&str, &str)]) -> Waiting {
        let pty = Pty::of_width(columns);
        let mut command = zklock_on_terminal(zk, &pty);
        command.args(extra).args([path, "--", "true"]).envs(env.iter().copied());
        let zklock = Group::spawn(&mut command);
        let Pty { master, slave } = pty;
        drop(slave);
        let output = Arc::new(Mutex::new(Vec::new()));
        let (mut from, into) = (master.try_clone().unwrap(), output.clone());
        let reader = std::thread::spawn(move || {
            let mut buffer = [0; 4096];
            // EIO once zklock, the last to hold the slave, has exited.
            while let Ok(read @ 1..) = from.read(&mut buffer) {
                into.lock().unwrap().extend_from_slice(&buffer[..read]);
            }
        });
        Waiting { zklock, master, output, reader: Some(reader), columns: columns.into() }
    }

    fn output(&self) -> String {
        String::from_utf8_lossy(&self.output.lock().unwrap()).into_owned()
    }

    /// Waits until the line has been drawn `times` times (or `what` is shown) in all.
    fn drawn(&self, times: usize) {
        self.shows("\rzklock: waiting", times);
    }

    fn shows(&self, what: &str, times: usize) {
        let started = Instant::now();
        while self.output().matches(what).count() < times {
            assert!(started.elapsed() < BOUND, "{what:?} not {times} times: {:?}", self.output());
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The rows the terminal shows now, and the cursor.
    fn screen(&self) -> (Vec<String>, (usize, usize)) {
        support::screen(&self.output(), self.columns)
    }

    /// Waits for zklock to exit; its exit code, and the screen it left.
    fn ended(mut self) -> (Option<i32>, Vec<String>, (usize, usize)) {
        let status = self.zklock.wait(BOUND);
        self.reader.take().unwrap().join().unwrap();
        let (rows, cursor) = self.screen();
        (status.code(), rows, cursor)
    }
}

const BOUND: Duration = Duration::from_secs(30);

fn shown(rows: &[String]) -> Vec<&String> {
    rows.iter().filter(|row| !row.is_empty()).collect()
}

/// On a terminal of 40 columns and of 200, the waiting line stands on one row, never wider than
/// the terminal, however often it is redrawn (it wrapped and stacked a copy a second), names the
/// holder zklock by pid and host, and is gone once the lock is had.
#[test]
fn the_waiting_line_fits_the_terminal_and_is_gone_once_the_lock_is_had() {
    let zk = server().connect_string();
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    for columns in [40, 200] {
        let path = unique_path("waiting-line-width");
        let (holder, _node) = support::hold(&zk, &[], &path);
        let waiting = Waiting::start(&zk, &path, columns, &[], &[]);
        waiting.drawn(4);
        let (rows, cursor) = waiting.screen();
        let line = shown(&rows);
        assert_eq!(line.len(), 1, "one line at {columns} columns: {rows:?}");
        assert!(line[0].chars().count() < usize::from(columns), "{rows:?}");
        assert_eq!(cursor.0, 0, "{rows:?}");
        assert!(line[0].starts_with("zklock: waiting: 1 ahead · holder"), "{rows:?}");
        if columns == 200 {
            let who = format!("holder pid {} on {} held", holder.0.id(), host.trim());
            assert!(line[0].contains(&who) && line[0].contains("waited"), "{who} in {rows:?}");
        }
        holder.signal_job(libc::SIGTERM);
        let (code, rows, _) = waiting.ended();
        assert_eq!(code, Some(0), "{rows:?}");
        assert!(shown(&rows).is_empty(), "the line is gone once the lock is had: {rows:?}");
    }
}

/// Ctrl-C typed while zklock waits ends it with 130 and leaves the line clear, the `^C` the
/// terminal echoed too, the cursor at its start: the shell's prompt starts on a clean line.
#[test]
fn ctrl_c_while_waiting_leaves_a_clean_line() {
    let zk = server().connect_string();
    let path = unique_path("waiting-line-ctrl-c");
    let (_holder, _node) = support::hold(&zk, &[], &path);
    let mut waiting = Waiting::start(&zk, &path, 80, &[], &[]);
    waiting.drawn(2);
    waiting.master.write_all(b"\x03").unwrap();
    let (code, rows, cursor) = waiting.ended();
    assert_eq!(code, Some(128 + libc::SIGINT), "{rows:?}");
    assert!(shown(&rows).is_empty(), "nothing left on the line: {rows:?}");
    assert_eq!(cursor.1, 0, "{rows:?}");
}

/// With -v, a log line written while zklock waits goes above the waiting line, whole, and the
/// line is drawn again after it (log lines were written onto it).
#[test]
fn with_v_a_log_line_goes_above_the_waiting_line() {
    let zk = server().connect_string();
    let path = unique_path("waiting-line-logs");
    let (holder, node) = support::hold(&zk, &[], &path);
    let env = [("RUST_LOG", "zklock=debug"), ("NO_COLOR", "1")];
    let waiting = Waiting::start(&zk, &path, 200, &["-v"], &env);
    waiting.drawn(2);
    // With its node deleted, the waiter logs that it queues again when the holder lets go.
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let client = common::connect().await;
        let (children, _) = client.get_children(&path).await.unwrap();
        let ours = children.into_iter().find(|child| !node.ends_with(child.as_str())).unwrap();
        client.delete(&format!("{path}/{ours}"), None).await.unwrap();
    });
    waiting.drawn(waiting.output().matches("\rzklock: waiting").count() + 1);
    holder.signal_job(libc::SIGTERM);
    let output = {
        waiting.shows("queueing again", 1);
        waiting.output()
    };
    let (code, rows, _) = waiting.ended();
    assert_eq!(code, Some(0), "{rows:?}");
    let log = rows.iter().find(|row| row.contains("queueing again")).unwrap();
    assert!(!log.contains("zklock: waiting"), "the log line is whole, on a row of its own: {rows:?}");
    let after = &output[output.find("queueing again").unwrap()..];
    let next = after.split_once("\r\n").map(|(_, next)| next).unwrap_or_default();
    assert!(next.starts_with("zklock: waiting"), "then the line again: {after:?}");
}

/// A holder whose node does not say who it is (not a zklock's) is named by its session id.
#[test]
fn a_holder_that_does_not_say_who_it_is_is_named_by_its_session() {
    let zk = server().connect_string();
    let path = unique_path("waiting-line-session");
    // Multi-threaded, so that the holder's session keeps its heartbeats while the test waits.
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (client, guard) = runtime.block_on(async {
        let client = common::connect().await;
        let lock = zklock::InterProcessReadWriteLock::new(&client, &path).unwrap().write_lock().clone();
        let guard = lock.acquire().await.unwrap();
        (client, guard)
    });
    let waiting = Waiting::start(&zk, &path, 200, &[], &[]);
    waiting.drawn(2);
    let (rows, _) = waiting.screen();
    let who = format!("holder {} held", client.session_id());
    assert!(shown(&rows).first().is_some_and(|line| line.contains(&who)), "{who} in {rows:?}");
    runtime.block_on(guard.release()).unwrap();
    let (code, rows, _) = waiting.ended();
    assert_eq!(code, Some(0), "{rows:?}");
}
