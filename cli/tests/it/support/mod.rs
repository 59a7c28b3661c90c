//! Running `zklock` as a user would in the command's tests: with no option inherited from the
//! test's environment, as a job of its own that no test leaves behind.
#![allow(dead_code)] // each test binary uses its own subset

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::common::eventually;

pub mod kazoo;

pub const TIMED_OUT: i32 = 75;
pub const LOST: i32 = 76;
pub const UNAVAILABLE: i32 = 69;
pub const USAGE: i32 = 64;
pub const NOT_ALLOWED: i32 = 77;
/// How `hold` and `elect` without a command end on SIGTERM, waiting or holding.
pub const TERMINATED: i32 = 128 + libc::SIGTERM;

/// `zklock` with no option set and none inherited from the test's environment.
pub fn bare_zklock() -> Command {
    bare_zklock_free(Command::new(env!("CARGO_BIN_EXE_zklock")))
}

/// `command` with no zklock option inherited from the test's environment, in a group of its own.
pub fn bare_zklock_free(command: Command) -> Command {
    let mut command = uninherited(command);
    // Its own process group, as a shell's job: a test can signal the job as a terminal does,
    // and kill zklock and its command together.
    command.process_group(0);
    command
}

/// `command` with no zklock option inherited from the test's environment, and SIGINT and SIGQUIT
/// as a terminal's job has them. Tests run in the background of a non-interactive shell
/// (`scripts/test &`, nohup, some CI runners) start with the two ignored, and a child inherits
/// an ignored signal: zklock then rightly leaves a Ctrl-C alone, as an ignored signal stays
/// ignored (cli/tests/it/ignored.rs), and the tests of Ctrl-C would fail on how they were run.
fn uninherited(mut command: Command) -> Command {
    for (name, _) in std::env::vars() {
        if name.starts_with("ZKLOCK_") || name == "ZK_CONNECT" || name == "RUST_LOG" {
            command.env_remove(name);
        }
    }
    // SAFETY: signal() is async-signal-safe, as pre_exec requires.
    unsafe {
        command.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            libc::signal(libc::SIGQUIT, libc::SIG_DFL);
            Ok(())
        });
    }
    command
}

/// `zklock --zk zk` as a terminal's foreground job: the leader of a session whose controlling
/// terminal is `pty`, its stderr, so that the interrupt character typed there sends SIGINT.
pub fn zklock_on_terminal(zk: &str, pty: &Pty) -> Command {
    let mut command = uninherited(Command::new(env!("CARGO_BIN_EXE_zklock")));
    command.arg("--zk").arg(zk).arg("--session-timeout").arg("4s");
    command.stdin(Stdio::null()).stdout(Stdio::null()).stderr(pty.stdio());
    // SAFETY: setsid and ioctl are async-signal-safe, as pre_exec requires.
    unsafe {
        command.pre_exec(|| {
            if libc::setsid() < 0 || libc::ioctl(libc::STDERR_FILENO, libc::TIOCSCTTY, 0) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    command
}

pub fn zklock(zk: &str) -> Command {
    let mut command = bare_zklock();
    command.arg("--zk").arg(zk).arg("--session-timeout").arg("4s");
    command
}

/// Kills a process group when dropped (zklock and its command), so no test leaves one behind.
pub struct Group(pub Child);

impl Group {
    pub fn spawn(command: &mut Command) -> Group {
        Group(command.spawn().unwrap())
    }

    /// Sends `signal` to zklock's group, as a terminal sends Ctrl-C to its foreground job.
    pub fn signal_job(&self, signal: libc::c_int) {
        // SAFETY: killpg on the group of a child we started and have not reaped.
        unsafe {
            libc::killpg(self.0.id() as libc::pid_t, signal);
        }
    }

    pub fn wait(&mut self, timeout: Duration) -> ExitStatus {
        wait_with_timeout(&mut self.0, timeout)
    }

    pub fn stderr(&mut self) -> String {
        let mut stderr = String::new();
        std::io::Read::read_to_string(self.0.stderr.as_mut().unwrap(), &mut stderr).unwrap();
        stderr
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        // SAFETY: killpg on the group of a child we started.
        unsafe {
            libc::killpg(self.0.id() as libc::pid_t, libc::SIGKILL);
        }
        let _ = self.0.wait();
    }
}

/// How long [`until`] waits for its condition.
pub const UNTIL_BOUND: Duration = Duration::from_secs(30);

/// Waits until `condition` holds, polling every 20 ms; panics after [`UNTIL_BOUND`].
pub fn until(what: &str, condition: impl Fn() -> bool) {
    let started = Instant::now();
    while !condition() {
        assert!(started.elapsed() < UNTIL_BOUND, "not {what} after {UNTIL_BOUND:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub fn wait_with_timeout(child: &mut Child, timeout: Duration) -> ExitStatus {
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(started.elapsed() < timeout, "zklock still running after {timeout:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Starts `zklock hold` with `options` and returns it with the node it printed.
pub fn hold(zk: &str, options: &[&str], path: &str) -> (Group, String) {
    let mut holder = Group::spawn(zklock(zk).arg("hold").args(options).arg(path).stdout(Stdio::piped()));
    let mut line = String::new();
    BufReader::new(holder.0.stdout.as_mut().unwrap()).read_line(&mut line).unwrap();
    let node = line.split_whitespace().next().unwrap_or_else(|| panic!("hold printed {line:?}")).to_owned();
    (holder, node)
}

pub async fn log_has(log: &Path, what: &str) {
    eventually(&format!("the log has {what:?}"), || async { read(log).contains(what) }).await;
}

pub fn read(log: &Path) -> String {
    std::fs::read_to_string(log).unwrap_or_default()
}

/// A pseudo-terminal: `master` for the test, `slave` for a child's stdin, stdout or stderr.
pub struct Pty {
    pub master: std::fs::File,
    pub slave: std::fs::File,
}

impl Pty {
    pub fn open() -> Pty {
        use std::os::fd::FromRawFd;
        // SAFETY: posix_openpt, grantpt, unlockpt and ptsname_r on a descriptor we own; the
        // slave's name is read into a local buffer, and each descriptor is owned once.
        unsafe {
            let master = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC);
            assert!(master >= 0, "posix_openpt: {}", std::io::Error::last_os_error());
            assert_eq!(libc::grantpt(master), 0);
            assert_eq!(libc::unlockpt(master), 0);
            let mut name = [0 as libc::c_char; 128];
            assert_eq!(libc::ptsname_r(master, name.as_mut_ptr(), name.len()), 0);
            let slave = libc::open(name.as_ptr(), libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC);
            assert!(slave >= 0, "open the pty's slave: {}", std::io::Error::last_os_error());
            Pty { master: std::fs::File::from_raw_fd(master), slave: std::fs::File::from_raw_fd(slave) }
        }
    }

    /// A pseudo-terminal `columns` wide (and 24 rows).
    pub fn of_width(columns: u16) -> Pty {
        use std::os::fd::AsRawFd;
        let pty = Pty::open();
        let size = libc::winsize { ws_row: 24, ws_col: columns, ws_xpixel: 0, ws_ypixel: 0 };
        // SAFETY: TIOCSWINSZ reads the winsize we pass.
        assert_eq!(unsafe { libc::ioctl(pty.master.as_raw_fd(), libc::TIOCSWINSZ, &size) }, 0);
        pty
    }

    /// The slave, for a child's standard stream.
    pub fn stdio(&self) -> Stdio {
        Stdio::from(self.slave.try_clone().unwrap())
    }

    /// Everything written to the terminal, once every child holding the slave has exited.
    pub fn output(self) -> String {
        drop(self.slave);
        let mut master = self.master;
        let mut bytes = Vec::new();
        // Linux says EIO on the master once the last slave is closed, after the last byte.
        let _ = std::io::Read::read_to_end(&mut master, &mut bytes);
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

/// The fields docs/cli.md documents for the document named `schema` (`zklock.list/1`): the rows
/// of the table under the heading that names it, as (path, type).
pub fn documented_fields(schema: &str) -> Vec<(String, String)> {
    let docs = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/cli.md")).unwrap();
    let heading = format!("schema `{schema}`");
    let section = docs.lines().skip_while(|line| !(line.starts_with("### ") && line.ends_with(&heading)));
    let rows = section.skip(1).skip_while(|line| line.is_empty()).take_while(|line| line.starts_with('|'));
    let fields: Vec<(String, String)> = rows
        .skip(2)
        .map(|row| {
            let cells: Vec<&str> = row.split('|').map(str::trim).collect();
            (cells[1].trim_matches('`').to_owned(), cells[2].to_owned())
        })
        .collect();
    assert!(!fields.is_empty(), "docs/cli.md has no table for {schema}");
    fields
}

/// Checks `documents` against docs/cli.md's table for `schema`: each names it in `schema`,
/// every documented field appears in one of them at least, each with its documented type, and
/// none has a field the table leaves out.
pub fn assert_documented(schema: &str, documents: &[serde_json::Value]) {
    let documented = documented_fields(schema);
    let mut seen = std::collections::BTreeMap::<String, Vec<&serde_json::Value>>::new();
    for document in documents {
        assert_eq!(document["schema"], schema, "{document}");
        fields_of(document, "", &mut seen);
    }
    for (path, kind) in &documented {
        let values = seen.get(path).unwrap_or_else(|| panic!("no {path} in {documents:?}"));
        for value in values {
            assert!(is_of(value, kind), "{path} is documented as {kind}, is {value}");
        }
    }
    for path in seen.keys() {
        assert!(documented.iter().any(|(documented, _)| documented == path), "{path} is not in docs/cli.md");
    }
}

/// Every field under `value`, by path (`queues[].nodes[].pid`), with each value it takes.
fn fields_of<'a>(
    value: &'a serde_json::Value,
    prefix: &str,
    seen: &mut std::collections::BTreeMap<String, Vec<&'a serde_json::Value>>,
) {
    let serde_json::Value::Object(object) = value else { return };
    for (name, field) in object {
        let path = if prefix.is_empty() { name.clone() } else { format!("{prefix}.{name}") };
        seen.entry(path.clone()).or_default().push(field);
        for element in field.as_array().into_iter().flatten() {
            fields_of(element, &format!("{path}[]"), seen);
        }
    }
}

/// Whether `value` is of the documented type `kind` (`integer or null`).
fn is_of(value: &serde_json::Value, kind: &str) -> bool {
    kind.split(" or ").any(|kind| match kind {
        "string" => value.is_string(),
        "integer" => value.is_i64() || value.is_u64(),
        "boolean" => value.is_boolean(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        "null" => value.is_null(),
        other => panic!("docs/cli.md names an unknown type {other}"),
    })
}

/// What a terminal `columns` wide shows after `output`: its rows, trailing blanks cut, and the
/// cursor's row and column. It prints, wraps at the last column (as xterm does: the character
/// after one in the last column starts the next row), takes `\r`, `\n` (the pty turns it into
/// `\r\n`) and backspace, and skips CSI escape sequences (colours).
pub fn screen(output: &str, columns: usize) -> (Vec<String>, (usize, usize)) {
    let mut rows: Vec<Vec<char>> = vec![Vec::new()];
    let (mut row, mut column, mut pending_wrap): (usize, usize, bool) = (0, 0, false);
    let mut chars = output.chars();
    while let Some(c) = chars.next() {
        match c {
            '\r' => (column, pending_wrap) = (0, false),
            '\n' => {
                (row, pending_wrap) = (row + 1, false);
                if rows.len() <= row {
                    rows.push(Vec::new());
                }
            }
            '\x08' => (column, pending_wrap) = (column.saturating_sub(1), false),
            '\x1b' => {
                if chars.next() == Some('[') {
                    for c in chars.by_ref() {
                        if ('@'..='~').contains(&c) {
                            break;
                        }
                    }
                }
            }
            c if c.is_control() => {}
            c => {
                if pending_wrap {
                    (row, column, pending_wrap) = (row + 1, 0, false);
                    if rows.len() <= row {
                        rows.push(Vec::new());
                    }
                }
                let line = &mut rows[row];
                if line.len() <= column {
                    line.resize(column + 1, ' ');
                }
                line[column] = c;
                if column + 1 == columns {
                    pending_wrap = true;
                } else {
                    column += 1;
                }
            }
        }
    }
    let rows = rows.into_iter().map(|line| line.into_iter().collect::<String>().trim_end().to_owned()).collect();
    (rows, (row, column))
}
