//! The command line, as clap parses it.

use std::ffi::OsString;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use crate::duration::parse_duration;

const AFTER_HELP: &str = "\
Examples:
  # Run the nightly job on one machine of the cluster at a time
  zklock --zk zk1:2181,zk2:2181 /locks/nightly -- ./nightly-job.sh

  # Give up after 30 seconds if another machine holds the lock (exit code 75)
  zklock --timeout 30s /locks/deploy -- ./deploy.sh

  # At most three backups at once, cluster-wide
  zklock --semaphore 3 /semaphores/backup -- ./backup.sh

  # Readers share, writers are alone
  zklock --read /locks/catalog -- ./export-catalog.sh
  zklock --write /locks/catalog -- ./rebuild-catalog.sh

  # Who holds the lock, who waits; ask the holder to let go
  zklock list /locks/nightly
  zklock revoke /locks/nightly/_c_6ba7b810-9dad-11d1-80b4-00c04fd430c8-lock-0000000007

The command sees ZKLOCK_PATH, ZKLOCK_NODE and ZKLOCK_FENCING_TOKEN (the lock node's czxid,
which grows from holder to holder: pass it to what you write, and refuse older ones).

If the lock is lost while the command runs (session expired, partitioned too long, node
deleted), zklock sends the command SIGTERM, then SIGKILL after --kill-after, and exits 76.
SIGINT and SIGTERM sent to zklock are passed on to the command; the lock is released before
zklock exits.

Exit codes: the command's own status (128+N if it died of signal N); 64 bad usage; 69
ZooKeeper unreachable or session ended before the lock was held; 70 other errors; 75 timed out
waiting (--timeout); 76 lock lost while the command ran; 126/127 command not executable / not
found.";

/// Run a command while holding a ZooKeeper lock or semaphore, cluster-wide.
#[derive(Debug, Parser)]
#[command(
    name = "zklock",
    version,
    about = "Run a command while holding a ZooKeeper lock or semaphore, cluster-wide (like flock, consul lock, etcdctl lock).",
    after_help = AFTER_HELP,
    subcommand_negates_reqs = true
)]
pub struct Cli {
    #[command(flatten)]
    pub connection: Connection,

    #[command(flatten)]
    pub run: RunArgs,

    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Where ZooKeeper is.
#[derive(Debug, Args)]
pub struct Connection {
    /// ZooKeeper servers, host:port[,host:port...][/chroot]. Defaults to $ZK_CONNECT, then
    /// 127.0.0.1:2181.
    #[arg(long = "zk", value_name = "HOSTS", global = true)]
    pub zk: Option<String>,

    /// ZooKeeper session timeout: a holder that dies releases the lock after about this long.
    #[arg(long, value_name = "DUR", default_value = "10s", value_parser = parse_duration, global = true)]
    pub session_timeout: Duration,

    /// How long to try to reach ZooKeeper before giving up (exit 69).
    #[arg(long, value_name = "DUR", default_value = "10s", value_parser = parse_duration, global = true)]
    pub connect_timeout: Duration,
}

/// Options of the default command: run COMMAND under the lock.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Give up after waiting this long for the lock (exit 75). Default: wait for ever. 0 means:
    /// only if it is free now.
    #[arg(long, short = 'w', value_name = "DUR", value_parser = parse_duration)]
    pub timeout: Option<Duration>,

    /// Use a counting semaphore of N leases instead of a mutex (Curator's InterProcessSemaphoreV2
    /// layout; every participant must use the same N).
    #[arg(long, value_name = "N", conflicts_with_all = ["read", "write"], value_parser = clap::value_parser!(u32).range(1..))]
    pub semaphore: Option<u32>,

    /// Take the read side of a read-write lock: shared with other readers.
    #[arg(long, conflicts_with = "write")]
    pub read: bool,

    /// Take the write side of a read-write lock: alone.
    #[arg(long)]
    pub write: bool,

    /// After SIGTERM on a lost lock, wait this long before SIGKILL.
    #[arg(long, value_name = "DUR", default_value = "10s", value_parser = parse_duration)]
    pub kill_after: Duration,

    /// The lock path, e.g. /locks/nightly-job.
    #[arg(value_name = "LOCK_PATH", required = true)]
    pub lock_path: Option<String>,

    /// The command to run while holding the lock, after `--`.
    #[arg(value_name = "COMMAND", last = true, required = true, num_args = 1..)]
    pub command: Vec<OsString>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print the participants of a lock in queue order (holders first) with their node data.
    List {
        /// The lock path.
        lock_path: String,
        /// The lock is a semaphore: list its leases.
        #[arg(long)]
        semaphore: bool,
    },
    /// Ask the holder of a lock node to give the lock up (it decides whether to).
    Revoke {
        /// The full path of the holder's node, as `zklock list` prints it.
        node: String,
    },
}
