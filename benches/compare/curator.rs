//! The Curator row: `interop/CuratorBench.java`, compiled once, run against the same server.

use std::path::{Path, PathBuf};
use std::process::Command;

const CURATOR_JAR: &str = "/usr/share/java/curator-recipes.jar";
const SLF4J_NOP_JAR: &str = "/usr/share/java/slf4j-nop.jar";

/// A compiled Curator benchmark, or why there is none.
pub struct Curator {
    classpath: String,
}

impl Curator {
    pub fn compile() -> Result<Curator, String> {
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
        Ok(Curator { classpath: format!("{}:{CURATOR_JAR}:{SLF4J_NOP_JAR}", classes.display()) })
    }

    /// Runs one scenario and returns the numbers of its output line after the tag.
    pub fn run(&self, connect: &str, path: &str, args: &[&str]) -> Result<Vec<i64>, String> {
        let output = Command::new("java")
            .args(["-XX:+UseSerialGC", "-cp", &self.classpath, "CuratorBench", connect, path])
            .args(args)
            .output()
            .map_err(|e| format!("java: {e}"))?;
        if !output.status.success() {
            return Err(format!("CuratorBench failed: {}", String::from_utf8_lossy(&output.stderr)));
        }
        let text = String::from_utf8_lossy(&output.stdout);
        Ok(text.split_whitespace().filter_map(|word| word.parse().ok()).collect())
    }
}
