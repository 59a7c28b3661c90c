//! What a zklock participant writes into its node: who holds (pid and host), for a
//! semaphore's lease how many leases the semaphore has (Curator's layout stores that nowhere),
//! and the longest it holds (`--max-hold`). `zklock list` reads it back into fields.

use std::fmt;
use std::time::Duration;

use crate::output::duration::{human, parse_duration};

/// The data of a zklock participant's node:
/// `zklock pid PID on HOST[, one of N leases][ for at most DUR]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeData {
    pub pid: u32,
    pub host: String,
    /// A semaphore lease's number of leases.
    pub leases: Option<u32>,
    /// How long the participant holds at most (`--max-hold`), said as [`human`] says it.
    pub max_hold: Option<Duration>,
}

impl NodeData {
    /// This process, on this host.
    pub fn ours(leases: Option<u32>, max_hold: Option<Duration>) -> NodeData {
        NodeData { pid: host_pid(), host: hostname(), leases, max_hold }
    }

    /// A zklock participant's data; `None` for anyone else's (Curator's, kazoo's, an election id).
    pub fn parse(text: &str) -> Option<NodeData> {
        let (pid, rest) = text.strip_prefix("zklock pid ")?.split_once(" on ")?;
        let (rest, max_hold) = match rest.rsplit_once(" for at most ") {
            Some((rest, bound)) => (rest, Some(parse_duration(bound).ok()?)),
            None => (rest, None),
        };
        let (host, leases) = match rest.rsplit_once(", one of ") {
            Some((host, count)) => (host, Some(count.strip_suffix(" leases")?.parse().ok()?)),
            None => (rest, None),
        };
        Some(NodeData { pid: pid.parse().ok()?, host: host.to_owned(), leases, max_hold })
    }
}

impl fmt::Display for NodeData {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "zklock pid {} on {}", self.pid, self.host)?;
        if let Some(leases) = self.leases {
            write!(f, ", one of {leases} leases")?;
        }
        match self.max_hold {
            Some(bound) => write!(f, " for at most {}", human(bound)),
            None => Ok(()),
        }
    }
}

/// This process's pid as the host's `ps` shows it: a zklock run by another's command lives in
/// that one's PID namespace, where `getpid` says 2 or 3, which names nothing an operator can
/// find. /proc is the host's (the namespace does not remount it), and the first pid of `NSpid`
/// is the one in the namespace of the /proc mounted; `getpid` when it cannot be read.
pub fn host_pid() -> u32 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| outermost_pid(&status))
        .unwrap_or_else(std::process::id)
}

/// The first pid of a /proc status's `NSpid:` line.
fn outermost_pid(status: &str) -> Option<u32> {
    let line = status.lines().find_map(|line| line.strip_prefix("NSpid:"))?;
    line.split_whitespace().next()?.parse().ok()
}

pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname").map(|name| name.trim().to_owned()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_back_what_it_writes() {
        for data in [
            NodeData { pid: 42, host: "web-3".to_owned(), leases: None, max_hold: None },
            NodeData { pid: 7, host: "db of x".to_owned(), leases: Some(2), max_hold: None },
            NodeData { pid: 8, host: "db".to_owned(), leases: Some(3), max_hold: Some(Duration::from_secs(90)) },
            NodeData { pid: 9, host: "web".to_owned(), leases: None, max_hold: Some(Duration::from_millis(500)) },
        ] {
            assert_eq!(NodeData::parse(&data.to_string()), Some(data));
        }
        assert_eq!(NodeData::parse("10.0.0.7"), None);
        assert_eq!(NodeData::parse("__REVOKE__"), None);
        assert_eq!(NodeData::parse("zklock pid x on h"), None);
        assert_eq!(outermost_pid("Name:\tzklock\nNSpid:\t4121\t2\nNgid:\t0\n"), Some(4121));
        assert_eq!(outermost_pid("Name:\tzklock\nNSpid:\t77\n"), Some(77));
        assert_eq!(outermost_pid("Name:\tzklock\n"), None);
        assert_eq!(NodeData::parse("zklock pid 1 on h for at most ever"), None);
    }
}
