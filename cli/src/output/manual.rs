//! The text of `zklock --help` after the options, and the manual page made of the same text
//! with the sections a man page has (EXIT STATUS, ENVIRONMENT, EXAMPLES), so the two never
//! drift apart.

use std::io::Write as _;

use clap::Command;

use crate::output::json_schema;

/// Examples, each a `  # what` line and the command lines that do it.
const EXAMPLES: &str = "\
  # Run the nightly job on one machine of the cluster at a time
  zklock -z zk1:2181,zk2:2181 /locks/nightly ./nightly-job.sh --full

  # A shell command, as flock -c takes it (`--` before a command also works)
  zklock /locks/report -c 'make report && upload report.pdf'

  # Skip the run if another machine holds the lock (exit 75, or -E's code)
  zklock -n -E 0 /locks/deploy -- ./deploy.sh

  # At most three backups at once, cluster-wide
  zklock --semaphore 3 /semaphores/backup -- ./backup.sh

  # Readers share, writers are alone (like flock -s / -x; the default is the write side)
  zklock --read /locks/catalog -- ./export-catalog.sh
  zklock /locks/catalog -- ./rebuild-catalog.sh

  # Run the scheduler on the elected leader only; another machine takes over when it goes
  zklock elect --id web-3 /elections/scheduler -- ./scheduler

  # Hold the lock from a shell script until told to stop (or until the reader of its line goes)
  zklock hold /locks/maintenance & ...; kill %1

  # Campaign without a command, and see who leads
  zklock elect --id web-3 /elections/scheduler &
  zklock leader --json /elections/scheduler

  # Shell completions and the manual page, generated from these definitions
  zklock completions bash > /etc/bash_completion.d/zklock
  zklock manpage > /usr/local/share/man/man1/zklock.1

  # Who holds the lock, who waits; ask the holder to let go
  zklock list --json /locks/nightly
  zklock revoke /locks/nightly/_c_6ba7b810-9dad-11d1-80b4-00c04fd430c8-__WRIT__0000000007

  # Processes that each hold a lock another waits on, in a ring (exit 1 certain, 2 possible only)
  zklock deadlocks /locks

  # A secured ensemble
  ZKLOCK_AUTH=digest:deployer:secret zklock --tls-ca ca.pem --zk zk1:2281 /locks/deploy -- ./deploy.sh";

/// How zklock behaves, paragraph by paragraph.
const NOTES: &str = "\
The command sees ZKLOCK_PATH, ZKLOCK_NODE and ZKLOCK_FENCING_TOKEN (the lock node's czxid,
which grows from holder to holder: pass it to what you write, and refuse older ones).

A zklock run by a zklock's command (directly, or through a shell or a script) is one owner with
it: the outer one holds its lock until the inner one, which waits, has ended. The outermost
zklock picks a chain id at random and passes it on in ZKLOCK_CHAIN; each zklock of the chain
writes it into its lock node's name, and `zklock deadlocks` reads the whole chain as one member
of a ring, so `zklock /a -- zklock /b -- job` beside `zklock /b -- zklock /a -- job` is found, a
certain deadlock of two chains. A chain is one owner only while its zklocks run one inside the
other: a zklock admits one inner zklock at a time (ZKLOCK_CHAIN_LINK names a file the inner one
locks for its life), so of zklocks a command runs side by side (in the background, in parallel)
the first joins and the others start chains of their own: no ring is made up. With
--fail-on-deadlock ROOT (or ZKLOCK_FAIL_ON_DEADLOCK, which the whole chain inherits), the zklock
whose wait is such a ring's victim gives up and exits 79, and the others go on.

The command runs as the child of a watchdog process (zklock-watchdog, zklock's child), in a
process group of its own, where zklock runs: it sees the pids everyone else sees, as under
flock, so $$, pidfiles it writes or reads, kill $(cat pidfile), pgrep, ps -p $$ and /proc/$$
mean the same process inside the command and out. The watchdog dies with zklock (the kernel's
parent-death signal) and the command with the watchdog; both adopt what the command leaves
behind (they are subreapers). So zklock killed alone (SIGKILL included): the watchdog kills the
command's whole tree; the watchdog killed alone: the command dies with it and zklock kills what
it left; both killed at once (pkill -9 zklock): the command itself dies with the watchdog, but
its children and daemons run on after the lock can pass to another. zklock stopped (SIGSTOP
from an operator or a debugger, not a terminal's stop) sends no heartbeat: the watchdog kills
the command's whole tree once zklock has been stopped for a quarter of the session timeout,
before the server can expire the session, and zklock, continued, says so and exits 76.

--pid-namespace gives the strongest promise, at the price of the pids: the command runs in a
PID namespace whose init is the watchdog, and when the watchdog dies, of any signal including
SIGKILL, the kernel kills every process of the namespace: the command, its children, daemons it
double-forked or setsid'd. So no SIGKILL of zklock, of the watchdog or of both leaves any of it
running once the lock can pass on; zklock itself, if alive, releases the lock only once the
namespace is empty. The command then sees its namespace: $$ is 2 and $PPID 1 (the watchdog);
/proc is not remounted, so it shows the host's processes (/proc/self is the command's own
entry, /proc/$$ is not), a pid the command writes to a pidfile names another process outside,
and a pid it reads from the host's pidfiles names another inside or nothing. It needs
CAP_SYS_ADMIN (root, and not a container's default profile): without it zklock refuses, exit 77,
before it takes the lock. What no watchdog covers: a machine stopped or frozen (a paused VM, a
frozen cgroup) past the session timeout, after which another may hold the lock by the time the
command runs again (ZKLOCK_FENCING_TOKEN is for that); and a process in uninterruptible sleep
(a hung NFS mount), which dies only when it wakes.

SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 sent to zklock are passed on to the
command's process group, once (one ignored when zklock started, as nohup ignores SIGHUP, stays
ignored by zklock and the command); the lock is released when the last process the command
started has exited. SIGINT, SIGTERM and SIGQUIT also ask for a stop: the command's tree gets
--kill-after to end, then SIGKILL, and zklock deletes its node, closes its session and exits
with the command's status (137 when killed); a second of them kills at once. SIGHUP, SIGUSR1 and
SIGUSR2 start no grace (daemons read them as reload, rotate). If the lock is lost while the
command runs (session expired, disconnected too long, node deleted), the group gets SIGTERM at
once and the whole tree SIGKILL at the latest when the server could first expire the session
(sooner with --kill-after); zklock exits 76 once the tree is gone, before anyone else can hold
the lock. If the watchdog alone is killed, zklock says so, kills what is left, and exits 137 as
if the command had been killed. With --max-hold DUR the lock is given up once held that long: as
for a deleted node, the group gets SIGTERM and the tree SIGKILL at once (zklock is told just
before its node's delete is sent), zklock says the lock was held for its maximum time and exits
76. Its node says the bound, and `zklock list` shows it (held 12s of at most 30s). zklock's own
process keeps the bound: a zklock stopped whole keeps the node until its session ends.

Under systemd (the tested unit is docs/zklock@.service in zklock's sources): Type=exec, as the
start then fails when zklock cannot be run (zklock tells systemd nothing: the unit is active
while it waits for the lock too); KillMode=mixed, so that SIGTERM goes to zklock alone and
reaches the command once (control-group, the default, works but sends the command's group a
second one); TimeoutStopSec above --kill-after with a few seconds for the release, as systemd's
SIGKILL of zklock leaves the node until the session timeout, which a restarted unit then waits
for; SuccessExitStatus=143 (75 too for a oneshot run with -n); Restart=always and RestartSec=5s.

Ctrl-Z works as on any shell job: a terminal stop of the command (SIGTSTP, SIGTTIN, SIGTTOU), or
SIGTSTP sent to zklock, stops the command and zklock together, and the shell prompts again; `fg`
or `bg` continues both. A stopped zklock sends ZooKeeper no heartbeat, so a job stopped longer
than the session timeout loses the lock: once continued, zklock asks ZooKeeper before the command
runs again, and on a loss kills the command, still stopped, and exits 76.

Every option may be written before or after a subcommand's name (`zklock -n hold P` and
`zklock hold -n P` are the same); an option that does not apply to the subcommand given on the
command line is refused with exit 64 and names where it goes (one set in the environment is
ignored where it does not apply). Boolean environment variables take 1/0, true/false, yes/no,
on/off. `--timeout 0` is -n. For cron, -q leaves unsaid what the exit code tells (a busy lock)
or needs no action; a busy lock with -E 0 is a silent success.

`zklock elect PATH -- COMMAND` joins the election at PATH (Curator's LeaderLatch: node
_c_{uuid}-latch-{seq}, data = --id, by default HOSTNAME:PID), waits to lead, and runs the command
only while leading, with ZKLOCK_FENCING_TOKEN set to the leadership's fencing token. Losing leadership
stops the command as losing a lock does (exit 76); when the command ends, zklock leaves the
election, the next participant leads, and zklock exits with the command's status. Without a command,
`zklock elect PATH` prints its node and fencing token once it leads, and leads until signalled or the
leadership is lost (76; --retake leads again after a loss to the session).

`zklock hold` means held without a gap: any loss ends it with 76 (--retake takes the lock
again after a loss to the session, printing a new line). While holding, a lock of another kind
or a semaphore of another N arriving on the path is a loss too, said in one line: the two would
not exclude each other. With a command, that stops the command as a loss does. A signal
(SIGTERM, SIGINT, ...) ends `hold`, and `elect` without a command, with 128+N, waiting or
holding, as it ends any job; a revocation obeyed ends `hold` with 0.

A path holds one kind of lock or an election: a mode that cannot share it with the nodes already
there (a semaphore on a lock, a kazoo lock on a Curator one, an election on a lock, a plain
--kazoo lock where kazoo readers are: use --kazoo --write there) is refused with exit 64.

`zklock revoke NODE` writes only into a lock participant's node (ephemeral, sequential, named
as a zklock, Curator or kazoo lock node or semaphore lease); anything else, an election's node
included, is refused with exit 64. A holder that carries on (--on-revoke ignore) writes its own
data back. `zklock hold` lets go at once when the reader of its stdout goes away.";

/// The exit codes, each with what it means.
const EXIT_STATUS: &[(&str, &str)] = &[
    ("N", "the command's own status (128+N if it died of signal N)"),
    ("128+N", "`hold`, `elect` without a command: ended by signal N (SIGTERM: 143), waiting or holding"),
    ("1", "`list`: nobody holds; `revoke`: no such node; `deadlocks`: a certain deadlock found"),
    ("2", "`deadlocks`: only possible deadlocks found (each through a session read whole, untagged)"),
    ("3", "`deadlocks`: the root does not exist or holds no lock (nothing to read: a typo?)"),
    ("64", "bad usage (an option, a path, a connect string) or a mode the path cannot take"),
    (
        "69",
        "ZooKeeper unreachable (refused, not resolved, no session in time, chroot missing) or session \
         ended before the lock or leadership was held",
    ),
    ("70", "other errors"),
    ("74", "stdout cannot be written (not `revoke`, whose request is sent: 0, and stderr says so)"),
    ("75", "lock busy or leadership not ours in time (-n, --timeout; see -E)"),
    ("76", "lock or leadership lost while the command ran, or held for --max-hold"),
    ("77", "not allowed (ACL, authentication)"),
    (
        "79",
        "--fail-on-deadlock: the wait was the victim of a certain deadlock and gave up (the others go on); \
         a zklock whose command was such a zklock passes it on",
    ),
    ("126/127", "command not executable / not found"),
    ("141", "the reader of stdout went away (as if killed by SIGPIPE)"),
];

/// Variables zklock reads that no option names, and those it sets for the command.
const ENVIRONMENT: &[(&str, &str)] = &[
    ("ZK_CONNECT", "The servers, when neither --zk nor ZKLOCK_ZK names them."),
    (
        "RUST_LOG",
        "Which log lines to write on stderr, e.g. zklock=debug (default: zklock's warnings, with -v its steps).",
    ),
    ("NO_COLOR", "Set to anything, log lines on a terminal are not coloured."),
    (
        "ZKLOCK_CHAIN",
        "Read, and set for the command: the id of the chain of zklocks this one is a link of (1 to 12 hex \
         digits; the outermost zklock picks one at random). Its lock node carries it, and `zklock \
         deadlocks` reads a chain as one owner. Unset or empty, zklock starts a chain of its own; any other \
         value that is no id is refused with exit 64.",
    ),
    (
        "ZKLOCK_CHAIN_LINK",
        "Set for the command: a file (under /proc) that an inner zklock locks to join the chain, one at a \
         time; one that finds it locked by a sibling starts a chain of its own. Without it, ZKLOCK_CHAIN \
         joins as it says.",
    ),
    ("ZKLOCK_PATH", "Set for the command: the lock (or election) path."),
    ("ZKLOCK_NODE", "Set for the command: the node that holds the lock."),
    (
        "ZKLOCK_FENCING_TOKEN",
        "Set for the command: the lock node's czxid (an election's too), which grows from holder to \
         holder.",
    ),
];

/// What the JSON section says before each document's fields.
const JSON_INTRO: &str = "With --json, list and deadlocks print one JSON object whose `schema` field names its \
     layout and version; the number is raised when a field changes meaning or goes, not when one is added. \
     `a[].b` is field b of each element of array a.";

/// What `--help` says after the options: the examples, how zklock behaves, the exit codes.
/// What `-h` shows after the options: the examples and exit codes, and where the rest is.
pub fn after_short_help() -> String {
    let codes: Vec<String> =
        EXIT_STATUS.iter().map(|(code, meaning)| format!("  {code:<8}{}", wrap(meaning))).collect();
    format!(
        "Examples:\n{EXAMPLES}\n\nExit codes:\n{}\n\n`zklock --help` says more: the command's watchdog and the pids it \
         sees, chains of zklocks, signals, losses; `zklock manpage` has it all.",
        codes.join("\n")
    )
}

pub fn after_help() -> String {
    let codes: Vec<String> =
        EXIT_STATUS.iter().map(|(code, meaning)| format!("  {code:<8}{}", wrap(meaning))).collect();
    format!("Examples:\n{EXAMPLES}\n\n{NOTES}\n\nExit codes:\n{}", codes.join("\n"))
}

/// `text` in lines of at most 86 characters, the later ones indented under the first's column
/// of the exit codes' list (as the rest of the help is wrapped to under 100).
fn wrap(text: &str) -> String {
    let mut lines = vec![String::new()];
    for word in text.split_whitespace() {
        let line = lines.last_mut().expect("one line at least");
        if !line.is_empty() && line.len() + 1 + word.len() > 86 {
            lines.push(word.to_owned());
        } else {
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(word);
        }
    }
    lines.join(&format!("\n{}", " ".repeat(10)))
}

/// The manual page of `command`, in roff: clap's NAME, SYNOPSIS, DESCRIPTION (with the notes)
/// and OPTIONS, then the subcommands, EXIT STATUS, ENVIRONMENT and EXAMPLES. It names no other
/// page, as none is generated.
pub fn page(command: Command) -> std::io::Result<Vec<u8>> {
    let man = clap_mangen::Man::new(command.clone());
    let mut page = Vec::new();
    man.render_title(&mut page)?;
    man.render_name_section(&mut page)?;
    man.render_synopsis_section(&mut page)?;
    man.render_description_section(&mut page)?;
    for paragraph in NOTES.split("\n\n") {
        writeln!(page, ".PP\n{}", roff(paragraph))?;
    }
    man.render_options_section(&mut page)?;
    writeln!(page, ".SH SUBCOMMANDS")?;
    for subcommand in command.get_subcommands().filter(|subcommand| subcommand.get_name() != "help") {
        let about = subcommand.get_long_about().or(subcommand.get_about()).map(ToString::to_string);
        let name = subcommand.get_name();
        writeln!(page, ".TP\n\\fBzklock {name}\\fR\n{}", roff(&about.unwrap_or_default()))?;
    }
    writeln!(page, ".PP\n{}", roff("`zklock SUBCOMMAND --help` lists the options each takes."))?;
    writeln!(page, ".SH \"EXIT STATUS\"")?;
    for (code, meaning) in EXIT_STATUS {
        writeln!(page, ".TP\n\\fB{}\\fR\n{}", roff(code), roff(meaning))?;
    }
    writeln!(page, ".SH ENVIRONMENT")?;
    writeln!(page, "Every option may be set by the variable named with it; the command line overrides it.")?;
    let options = command.get_arguments().filter_map(|arg| Some((arg.get_env()?.to_string_lossy(), arg.get_long()?)));
    for (name, long) in options {
        writeln!(page, ".TP\n\\fB{}\\fR\n{}", roff(&name), roff(&format!("As --{long}.")))?;
    }
    for (name, meaning) in ENVIRONMENT {
        writeln!(page, ".TP\n\\fB{}\\fR\n{}", roff(name), roff(meaning))?;
    }
    writeln!(page, ".SH JSON")?;
    writeln!(page, "{}", roff(JSON_INTRO))?;
    for (command, schema) in json_schema::ALL {
        writeln!(page, ".SS \"{} (schema {})\"", roff(command), roff(schema.name))?;
        for field in schema.fields {
            writeln!(page, ".TP\n\\fB{}\\fR ({})\n{}", roff(field.path), roff(field.kind), roff(field.when))?;
        }
    }
    writeln!(page, ".SH EXAMPLES")?;
    for example in EXAMPLES.split("\n\n") {
        let (what, lines) =
            example.trim_start().strip_prefix("# ").unwrap_or(example).split_once('\n').unwrap_or_default();
        let lines: Vec<String> = lines.lines().map(|line| roff(line.trim_start())).collect();
        writeln!(page, ".PP\n{}:\n.PP\n.RS 4\n.nf\n{}\n.fi\n.RE", roff(what), lines.join("\n"))?;
    }
    man.render_version_section(&mut page)?;
    Ok(page)
}

/// `text` as roff reads it literally: backslashes and hyphens escaped, and no line starting with
/// a control character.
fn roff(text: &str) -> String {
    let escaped = text.replace('\\', "\\e").replace('-', "\\-");
    let lines = escaped.lines().map(|line| match line.starts_with(['.', '\'']) {
        true => format!("\\&{line}"),
        false => line.to_owned(),
    });
    lines.collect::<Vec<_>>().join("\n")
}
