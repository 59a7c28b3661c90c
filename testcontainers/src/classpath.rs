use std::env;
use std::path::{Path, PathBuf};

use crate::HarnessError;

const DEBIAN_JAR: &str = "/usr/share/java/zookeeper.jar";
/// Debian's jar names its dependencies in its manifest, but no logging backend: log4j 1.2 is the
/// one the package itself configures.
const DEBIAN_LOGGING: [&str; 2] = ["/usr/share/java/slf4j-log4j12.jar", "/usr/share/java/log4j-1.2.jar"];

/// Returns the Java classpath of the ZooKeeper server, without the configuration directory.
///
/// Looks at `ZOOKEEPER_CLASSPATH`, then `ZOOKEEPER_HOME`, then Debian's `zookeeper` package.
///
/// # Errors
/// [`HarnessError::JarsNotFound`], whose message names the install command, when none is there.
pub(crate) fn discover_classpath() -> Result<String, HarnessError> {
    if let Some(classpath) = env::var_os("ZOOKEEPER_CLASSPATH").filter(|c| !c.is_empty()) {
        return Ok(classpath.to_string_lossy().into_owned());
    }
    if let Some(home) = env::var_os("ZOOKEEPER_HOME").filter(|h| !h.is_empty()) {
        return release_classpath(Path::new(&home));
    }
    if Path::new(DEBIAN_JAR).is_file() {
        let mut parts = vec![DEBIAN_JAR];
        parts.extend(DEBIAN_LOGGING.iter().copied().filter(|jar| Path::new(jar).is_file()));
        return Ok(parts.join(":"));
    }
    Err(HarnessError::JarsNotFound(format!(
        "set ZOOKEEPER_CLASSPATH or ZOOKEEPER_HOME, or install Debian's package: \
         `apt-get update && apt-get install -y zookeeper` (provides {DEBIAN_JAR})"
    )))
}

/// An Apache release keeps its own jar and its dependencies in `lib/`.
fn release_classpath(home: &Path) -> Result<String, HarnessError> {
    let lib = home.join("lib");
    let has_jars = |dir: &PathBuf| {
        std::fs::read_dir(dir)
            .map(|entries| entries.flatten().any(|e| e.path().extension().is_some_and(|x| x == "jar")))
            .unwrap_or(false)
    };
    if !has_jars(&lib) {
        return Err(HarnessError::JarsNotFound(format!("ZOOKEEPER_HOME={} has no jars in lib/", home.display())));
    }
    Ok(format!("{}/*:{}/*", lib.display(), home.display()))
}
