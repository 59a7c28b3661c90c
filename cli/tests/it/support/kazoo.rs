//! Real kazoo 2.8 participants (Debian's python3-kazoo, `interop/kazoo_holder.py`) for the
//! command's tests of kazoo's layouts.

use std::io::{BufRead, BufReader, Lines, Write};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{ChildStdin, ChildStdout, Command, Stdio};

use super::Group;

/// A kazoo process taking its steps (`write:PATH`, `read:PATH`), killed when dropped.
pub struct Kazoo {
    name: String,
    _group: Group,
    stdin: ChildStdin,
    stdout: Lines<BufReader<ChildStdout>>,
}

impl Kazoo {
    /// Starts it and waits until its first step holds (a blocking read of its stdout: the step
    /// must be free to take).
    pub fn start(zk: &str, name: &str, steps: &[&str]) -> Kazoo {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../interop/kazoo_holder.py");
        let mut command = Command::new("/usr/bin/python3");
        command.arg(script).args([zk, name]).args(steps).stdin(Stdio::piped()).stdout(Stdio::piped());
        let mut group = Group(command.process_group(0).spawn().expect("start /usr/bin/python3"));
        let stdin = group.0.stdin.take().unwrap();
        let stdout = BufReader::new(group.0.stdout.take().unwrap()).lines();
        let mut kazoo = Kazoo { name: name.to_owned(), _group: group, stdin, stdout };
        kazoo.wait_held();
        kazoo
    }

    /// Lets it take its next step (which may block: nothing is awaited).
    pub fn go(&mut self) {
        writeln!(self.stdin, "go").unwrap();
    }

    fn wait_held(&mut self) {
        let line = self.stdout.next().and_then(Result::ok);
        assert_eq!(line, Some(format!("held {}", self.name)), "kazoo {} did not take its lock", self.name);
    }
}
