//! The kazoo row: `interop/kazoo_bench.py`, run by Debian's `/usr/bin/python3` (which has
//! `python3-kazoo`) against the same server.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Debian's interpreter, not the first `python3` on `PATH`: a pyenv or venv one has no
/// `python3-kazoo`.
const PYTHON: &str = "/usr/bin/python3";

/// The kazoo benchmark program, or why there is none.
pub struct Kazoo {
    script: PathBuf,
}

impl Kazoo {
    /// Checks that `/usr/bin/python3` can import kazoo.
    pub fn find() -> Result<Kazoo, String> {
        let install = "apt-get install -y python3-kazoo";
        if !Path::new(PYTHON).is_file() {
            return Err(format!("no {PYTHON} ({install})"));
        }
        let output =
            Command::new(PYTHON).args(["-c", "import kazoo.client"]).output().map_err(|e| format!("{PYTHON}: {e}"))?;
        if !output.status.success() {
            return Err(format!("kazoo not installed for {PYTHON} ({install})"));
        }
        Ok(Kazoo { script: Path::new(env!("CARGO_MANIFEST_DIR")).join("interop/kazoo_bench.py") })
    }

    /// The command that runs a scenario on the lock at `path`; its arguments follow.
    pub fn command(&self, connect: &str, path: &str) -> Command {
        let mut command = Command::new(PYTHON);
        command.arg(&self.script).args([connect, path]);
        command
    }
}
