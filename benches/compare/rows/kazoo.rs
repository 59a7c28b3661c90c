//! The kazoo row: `interop/kazoo_bench.py`, run by Debian's `/usr/bin/python3` (which has
//! `python3-kazoo`) against the same server.

use std::path::Path;
use std::process::Command;

use crate::peers::{Launcher, Peer};

/// Debian's interpreter, not the first `python3` on `PATH`: a pyenv or venv one has no
/// `python3-kazoo`.
const PYTHON: &str = "/usr/bin/python3";

/// kazoo's `Lock` and `Election` in Python, or why they are skipped.
pub fn peer() -> Peer {
    Peer::new("kazoo 2.8 Lock", "kazoo 2.8 Election, leader function returns", "Python", "kazoo", find())
}

/// Checks that `/usr/bin/python3` can import kazoo.
fn find() -> Result<Launcher, String> {
    let install = "apt-get install -y python3-kazoo";
    if !Path::new(PYTHON).is_file() {
        return Err(format!("no {PYTHON} ({install})"));
    }
    let output =
        Command::new(PYTHON).args(["-c", "import kazoo.client"]).output().map_err(|e| format!("{PYTHON}: {e}"))?;
    if !output.status.success() {
        return Err(format!("kazoo not installed for {PYTHON} ({install})"));
    }
    Ok(Launcher::new(PYTHON, [Path::new(env!("CARGO_MANIFEST_DIR")).join("interop/kazoo_bench.py")]))
}
