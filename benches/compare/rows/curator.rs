//! The Curator row: `interop/CuratorBench.java`, compiled once, run against the same server.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::peers::{Launcher, Peer};

const CURATOR_JAR: &str = "/usr/share/java/curator-recipes.jar";
const SLF4J_NOP_JAR: &str = "/usr/share/java/slf4j-nop.jar";

/// Curator's `InterProcessMutex` and `LeaderLatch` on the JVM, or why they are skipped.
pub fn peer() -> Peer {
    Peer::new(
        "Curator 5.4 InterProcessMutex",
        "Curator 5.4 LeaderLatch, close + a new latch",
        "JVM",
        "curator",
        compile(),
    )
    .running_tasks()
}

/// Compiles `interop/CuratorBench.java` against Debian's Curator.
fn compile() -> Result<Launcher, String> {
    if !Path::new(CURATOR_JAR).is_file() {
        return Err("Curator not installed (apt-get install -y libcurator-recipes-java)".into());
    }
    let classes = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("curator-bench-classes");
    std::fs::create_dir_all(&classes).map_err(|e| e.to_string())?;
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("interop/CuratorBench.java");
    let status = Command::new("javac")
        .args(["-d".as_ref(), classes.as_os_str(), "-cp".as_ref(), CURATOR_JAR.as_ref(), source.as_os_str()])
        .status()
        .map_err(|e| format!("javac: {e}"))?;
    if !status.success() {
        return Err("javac failed".into());
    }
    let classpath = format!("{}:{CURATOR_JAR}:{SLF4J_NOP_JAR}", classes.display());
    Ok(Launcher::new("java", ["-XX:+UseSerialGC", "-cp", &classpath, "CuratorBench"]))
}
