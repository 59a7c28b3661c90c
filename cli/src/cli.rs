//! The command line, as clap parses it. Every option can also come from the environment
//! variable that `--help` shows next to it.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use clap::builder::BoolishValueParser;
use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::nodes::acl::parse_acl;
use crate::output::duration::{parse_duration, parse_session_timeout};

const USAGE: &str = "\
zklock [OPTIONS] LOCK_PATH [--] COMMAND [ARGS]...
       zklock [OPTIONS] LOCK_PATH -c SHELL_COMMAND
       zklock [OPTIONS] <hold|elect|leader|list|revoke|deadlocks> ...
       zklock completions <bash|zsh|fish> | zklock manpage";

/// Run a command while holding a ZooKeeper lock or semaphore, or while leading an election,
/// cluster-wide.
#[derive(Debug, Parser)]
#[command(
    name = "zklock",
    version,
    about = "Run a command while holding a ZooKeeper lock or semaphore, cluster-wide (like flock, consul lock, etcdctl lock), or while leading an election.",
    after_help = crate::output::manual::after_short_help(),
    after_long_help = crate::output::manual::after_help(),
    override_usage = USAGE,
    subcommand_negates_reqs = true
)]
pub struct Cli {
    #[command(flatten)]
    pub connection: Connection,

    #[command(flatten)]
    pub lock: LockArgs,

    #[command(flatten)]
    pub modes: ModeOptions,

    /// The lock path, e.g. /locks/nightly-job.
    #[arg(value_name = "LOCK_PATH", required = true)]
    pub lock_path: Option<String>,

    /// The command to run while holding the lock, with its arguments (`--` before it is
    /// optional).
    #[arg(value_name = "COMMAND", trailing_var_arg = true, num_args = 1.., required_unless_present = "shell_command")]
    pub command: Vec<OsString>,

    #[command(subcommand)]
    pub subcommand: Option<Command>,
}

/// Options of one mode or another: which one takes each is checked after parsing
/// (`placement.rs`), so that every option can be written before or after a subcommand.
#[derive(Debug, Args)]
pub struct ModeOptions {
    /// Run SHELL_COMMAND with `sh -c` while holding the lock or leading (like flock -c).
    #[arg(long = "command", short = 'c', value_name = "SHELL_COMMAND", global = true)]
    pub shell_command: Option<String>,

    /// elect: this participant's id, the data of its election node (what `zklock list` and
    /// `zklock leader` show). Default: HOSTNAME:PID.
    #[arg(long, value_name = "ID", env = "ZKLOCK_ID", global = true)]
    pub id: Option<String>,

    /// list, leader, deadlocks, hold, elect without a command: print one JSON object, for scripts.
    #[arg(long, global = true)]
    pub json: bool,
}

/// Where ZooKeeper is and how to talk to it.
#[derive(Clone, Debug, Args)]
pub struct Connection {
    /// ZooKeeper servers, host:port[,host:port...][/chroot]. Falls back to $ZK_CONNECT, then
    /// 127.0.0.1:2181.
    #[arg(long = "zk", short = 'z', value_name = "HOSTS", env = "ZKLOCK_ZK", global = true)]
    pub zk: Option<String>,

    /// ZooKeeper session timeout: a holder that dies releases the lock after about this long.
    #[arg(long, value_name = "DUR", default_value = "10s", value_parser = parse_session_timeout, allow_hyphen_values = true, env = "ZKLOCK_SESSION_TIMEOUT", global = true)]
    pub session_timeout: Duration,

    /// How long to try to reach ZooKeeper before giving up (exit 69).
    #[arg(long, value_name = "DUR", default_value = "10s", value_parser = parse_duration, allow_hyphen_values = true, env = "ZKLOCK_CONNECT_TIMEOUT", global = true)]
    pub connect_timeout: Duration,

    /// Authenticate as SCHEME:CREDENTIALS, e.g. digest:user:password (may be repeated).
    #[arg(long, value_name = "SCHEME:CREDENTIALS", env = "ZKLOCK_AUTH", global = true, hide_env_values = true)]
    pub auth: Vec<String>,

    /// Read SCHEME:CREDENTIALS lines from FILE (keeps secrets off the command line).
    #[arg(long, value_name = "FILE", env = "ZKLOCK_AUTH_FILE", global = true)]
    pub auth_file: Option<PathBuf>,

    /// Connect with TLS, trusting the CA certificates in this PEM file (zookeeper-client has no
    /// system roots: the CA is required).
    #[arg(long, value_name = "FILE", env = "ZKLOCK_TLS_CA", global = true)]
    pub tls_ca: Option<PathBuf>,

    /// TLS: present the client certificate in this PEM file (with --tls-key and --tls-ca).
    #[arg(long, value_name = "FILE", env = "ZKLOCK_TLS_CERT", requires_all = ["tls_key", "tls_ca"], global = true)]
    pub tls_cert: Option<PathBuf>,

    /// TLS: the private key of --tls-cert, PEM.
    #[arg(long, value_name = "FILE", env = "ZKLOCK_TLS_KEY", requires = "tls_cert", global = true)]
    pub tls_key: Option<PathBuf>,

    /// Say on stderr whom we wait for, when the lock is acquired and released. RUST_LOG
    /// selects more (e.g. RUST_LOG=zklock=debug).
    #[arg(long, short = 'v', env = "ZKLOCK_VERBOSE", value_parser = BoolishValueParser::new(), global = true)]
    pub verbose: bool,

    /// Say nothing on stderr that the exit code already tells or that needs no action, as cron
    /// would mail it: a busy lock (-n, --timeout; silent with -E 0 too) and a session timeout
    /// the server changed. Errors are still said.
    #[arg(long, short = 'q', env = "ZKLOCK_QUIET", value_parser = BoolishValueParser::new(), global = true)]
    pub quiet: bool,
}

impl Connection {
    /// Whether the session authenticates (`--auth`, `--auth-file`).
    pub fn authenticates(&self) -> bool {
        !self.auth.is_empty() || self.auth_file.is_some()
    }
}

/// Which lock, and how to take and hold it.
#[derive(Debug, Args)]
pub struct LockArgs {
    #[command(flatten)]
    pub hold: HoldOptions,

    /// Do not wait: give up at once if the lock is busy (like flock -n).
    #[arg(long, short = 'n', env = "ZKLOCK_NONBLOCK", value_parser = BoolishValueParser::new(), global = true)]
    pub nonblock: bool,

    /// The write side of the path's read-write lock: alone (like flock -x). The default.
    #[arg(long, short = 'x', env = "ZKLOCK_WRITE", value_parser = BoolishValueParser::new(), global = true)]
    pub write: bool,

    /// The read side of the path's read-write lock: shared with other readers (like flock -s).
    #[arg(long, short = 's', env = "ZKLOCK_READ", value_parser = BoolishValueParser::new(), global = true)]
    pub read: bool,

    /// A counting semaphore of N leases (Curator's InterProcessSemaphoreV2 layout, or with
    /// --kazoo kazoo's Semaphore; every participant must use the same N).
    #[arg(long, value_name = "N", env = "ZKLOCK_SEMAPHORE", value_parser = clap::value_parser!(u32).range(1..), global = true)]
    pub semaphore: Option<u32>,

    /// Curator's InterProcessMutex layout (to share the path with Java services that use it).
    #[arg(long, env = "ZKLOCK_MUTEX", value_parser = BoolishValueParser::new(), global = true)]
    pub mutex: bool,

    /// kazoo's Lock layout (to share the path with Python services that use it).
    ///
    /// With --semaphore N, kazoo's Semaphore layout; with --read or --write, kazoo's ReadLock or
    /// WriteLock (a plain --kazoo lock ignores kazoo's readers: use --write beside them). For
    /// `zklock leader`: the election is a kazoo Election.
    #[arg(long, env = "ZKLOCK_KAZOO", value_parser = BoolishValueParser::new(), global = true)]
    pub kazoo: bool,

    /// hold, elect without a command: take the lock or leadership again after losing it.
    ///
    /// After losing the lock or leadership to the session
    /// (expired, cut off), take it again and print the new line, instead of exiting 76 (as
    /// `etcdctl lock` without a command keeps going). The hold then has a gap.
    #[arg(long, env = "ZKLOCK_RETAKE", value_parser = BoolishValueParser::new(), global = true)]
    pub retake: bool,

    /// While waiting, give up with 79 when this wait is the victim of a deadlock under ROOT.
    ///
    /// While waiting for the lock, look for a deadlock among the locks under ROOT that this wait
    /// is part of (what `zklock deadlocks ROOT` finds); when this wait is the ring's victim (its
    /// newest), give up and exit 79, so that the others go on. Only a certain ring counts
    /// (tasks, chains of zklocks): a ring through a session read whole fails no wait. Set it in
    /// the environment to have every zklock of a chain look. Not with --semaphore.
    #[arg(long, value_name = "ROOT", env = "ZKLOCK_FAIL_ON_DEADLOCK", global = true)]
    pub fail_on_deadlock: Option<String>,

    /// Give the lock (or lease) up once it has been held this long (exit 76).
    ///
    /// The command is stopped as
    /// on a lost lock and zklock exits 76, saying the lock was held for its maximum time; `hold`
    /// ends with 76 too. The bound goes into the node's
    /// data, where `zklock list` shows it. Default: no bound.
    #[arg(long, value_name = "DUR", value_parser = parse_duration, env = "ZKLOCK_MAX_HOLD", global = true)]
    pub max_hold: Option<Duration>,

    /// What to do when someone asks the holder to let go (`zklock revoke`): send the command
    /// SIGTERM (hold mode: release and exit 0), or carry on.
    #[arg(long, value_enum, value_name = "WHAT", default_value = "term", env = "ZKLOCK_ON_REVOKE", global = true)]
    pub on_revoke: OnRevoke,
}

/// How long to wait for the lock or leadership, and what losing it does to the command: the
/// same for every mode that runs a command.
#[derive(Debug, Args)]
pub struct HoldOptions {
    /// Give up after waiting this long for the lock or leadership (exit 75, or -E's code).
    /// Default: wait for ever.
    #[arg(long, short = 'w', value_name = "DUR", value_parser = parse_duration, allow_hyphen_values = true, env = "ZKLOCK_TIMEOUT", global = true)]
    pub timeout: Option<Duration>,

    /// The exit code when the lock is busy (-n) or not ours within --timeout.
    #[arg(long, short = 'E', value_name = "N", default_value_t = 75, env = "ZKLOCK_CONFLICT_EXIT_CODE", global = true)]
    pub conflict_exit_code: u8,

    /// When a disconnection counts as losing the lock, lease or leadership: after a third of
    /// the session timeout, or at once.
    #[arg(
        long,
        value_enum,
        value_name = "POLICY",
        default_value = "session-timeout",
        env = "ZKLOCK_LOSS_POLICY",
        global = true
    )]
    pub loss_policy: LossPolicyArg,

    /// The ACL of the nodes zklock creates, as zkCli writes one (e.g. auth::cdrwa).
    ///
    /// The lock path, if new, and the lock nodes, as
    /// zkCli writes one: SCHEME:ID:PERMS, comma-separated or repeated, e.g. auth::cdrwa (the
    /// authenticated creator) and world:anyone:r. Default: the ACL of the lock path, or of its
    /// nearest parent that exists. With --auth, a lock anyone may change (world:anyone with more
    /// than r) is refused (exit 64).
    #[arg(long, value_name = "ACL", value_delimiter = ',', value_parser = parse_acl, env = "ZKLOCK_ACL", global = true)]
    pub acl: Vec<zookeeper_client::Acl>,

    /// How long the command may take to end once told to stop, or once the lock is lost.
    ///
    /// After SIGINT, SIGTERM or SIGQUIT
    /// sent to zklock and passed on (a second one kills at once), or after SIGTERM on a lost
    /// lock or leadership, zklock then kills the command's whole tree with SIGKILL, releases and
    /// exits. Keep it below a supervisor's stop timeout (systemd's TimeoutStopSec). On a loss,
    /// never later than the moment the server could first expire the session; so a loss after
    /// which another may already hold (session expired, node deleted) gets SIGKILL at once.
    #[arg(long, value_name = "DUR", default_value = "10s", value_parser = parse_duration, allow_hyphen_values = true, env = "ZKLOCK_KILL_AFTER", global = true)]
    pub kill_after: Duration,

    /// Run the command in a PID namespace of its own: the strongest kill guarantee, other pids.
    ///
    /// No SIGKILL of zklock and its
    /// watchdog, together or alone, leaves any of the command's processes (daemons it forked
    /// included) running once the lock can pass on. The command then sees other pids: it is
    /// pid 2 with parent 1, while /proc and every pidfile speak of the host's pids, so `$$`,
    /// pidfiles and `kill $(cat pidfile)` mean different processes inside and out. Needs
    /// CAP_SYS_ADMIN (root, and not a container's default profile); refused with 77 otherwise.
    #[arg(long, env = "ZKLOCK_PID_NAMESPACE", value_parser = BoolishValueParser::new(), global = true)]
    pub pid_namespace: bool,
}

/// What a revocation request does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum OnRevoke {
    /// SIGTERM to the command's process group (hold mode: release).
    Term,
    /// Keep holding.
    Ignore,
}

/// `LossPolicy` as the command line names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum LossPolicyArg {
    /// Lost after a third of the session timeout without a connection.
    SessionTimeout,
    /// Lost at the first disconnection.
    AnyDisconnection,
}

impl From<LossPolicyArg> for zklock::LossPolicy {
    fn from(policy: LossPolicyArg) -> Self {
        match policy {
            LossPolicyArg::SessionTimeout => zklock::LossPolicy::SessionTimeout,
            LossPolicyArg::AnyDisconnection => zklock::LossPolicy::AnyDisconnection,
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Take the lock, print its node and fencing token, and hold it until signalled (128+N),
    /// asked to let go (0), or the reader of that line goes away (141) (like `etcdctl lock NAME`
    /// without a command).
    /// Any loss ends it with 76 (--retake takes it again after a loss to the session); so does
    /// another kind of lock, or a semaphore of another N, arriving on the path.
    Hold {
        /// The lock path.
        #[arg(value_name = "LOCK_PATH")]
        lock_path: String,
    },
    /// Run a command only while this process leads an election (Curator's LeaderLatch): wait
    /// for leadership, run the command, stop it if leadership is lost, and leave the election
    /// when it ends. Without a command: print the node and fencing token once leading, and lead until
    /// signalled or the leadership is lost (76; --retake leads again after a loss to the
    /// session, with a new line).
    Elect {
        /// The election path, e.g. /elections/report-writer.
        #[arg(value_name = "ELECTION_PATH")]
        election_path: String,
        /// The command to run while leading, with its arguments (`--` before it is optional).
        #[arg(value_name = "COMMAND", trailing_var_arg = true, num_args = 1..)]
        command: Vec<OsString>,
    },
    /// Print the current leader of an election: its id, node and fencing token. Exits 1 when nobody
    /// leads. A LeaderLatch's (Curator's, zklock elect's); with --kazoo, a kazoo Election's.
    Leader {
        /// The election path.
        #[arg(value_name = "ELECTION_PATH")]
        election_path: String,
    },
    /// Print each queue of a lock path in order (holders, then waiters) with each node's data,
    /// session and age (how long it has held or waited); on a path that is no lock, those of
    /// every lock under it. Exits 1 when nobody holds.
    List {
        /// The lock path, or a folder of locks.
        lock_path: String,
    },
    /// Find deadlocks under ROOT: sessions (or tasks, or chains) that each wait on a lock behind
    /// a node of the next, in a ring (mutex, read-write and kazoo locks; not semaphores' leases,
    /// nor elections). A ring is certain when every member is a task told by its owner tag (a
    /// zklock lock with fail_on_deadlock) or a chain of zklock commands, one run by another's
    /// command (ZKLOCK_CHAIN), possible when it passes through a session read whole (untagged:
    /// Curator, kazoo, a lock without the option), whose holding task may not be the one that
    /// waits. Exits 0 when none is found, 1 when a certain one is, 2 when only possible ones
    /// are, 3 when ROOT does not exist or holds no lock.
    Deadlocks {
        /// The subtree to search, e.g. /locks (`/` for all).
        #[arg(value_name = "ROOT")]
        root: String,
    },
    /// Ask the holder of a lock node to give the lock up (it decides whether to).
    Revoke {
        /// The full path of the holder's node, as `zklock list` prints it.
        node: String,
    },
    /// Print the completion script for a shell.
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff), e.g. `zklock manpage > zklock.1`.
    Manpage,
}
