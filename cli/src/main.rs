//! `zklock`: run a command while holding a ZooKeeper lock or semaphore, or while leading an
//! election. `zklock --help` says how.

// Linux only: the watchdog runs the command in a PID namespace (clone) and dies with zklock by
// the parent-death signal (prctl); without a namespace, zklock and the watchdog adopt orphans as
// subreapers and find their children in /proc.
#[cfg(not(target_os = "linux"))]
compile_error!(
    "zklock-cli runs on Linux only: its watchdog and process supervision use PID namespaces, prctl \
     (PR_SET_PDEATHSIG, PR_SET_CHILD_SUBREAPER) and /proc; the zklock library builds everywhere"
);

mod cli;
mod commands;
mod connect;
mod nodes;
mod output;
mod placement;
mod signals;
mod supervise;
mod take;

use std::io::IsTerminal as _;
use std::process::ExitCode;

use std::ffi::OsString;

use clap::parser::ValueSource;
use clap::FromArgMatches as _;
use tracing_subscriber::filter::filter_fn;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::{EnvFilter, Layer as _};
use zookeeper_client::Client;

use crate::cli::{Cli, Command};
use crate::commands::completions::completions;
use crate::commands::deadlocks::deadlocks;
use crate::commands::elect::{elect, Campaign};
use crate::commands::hold::hold;
use crate::commands::leader::leader;
use crate::commands::list::list;
use crate::commands::manpage::manpage;
use crate::commands::revoke::revoke;
use crate::commands::run::run;
use crate::connect::{close_session, connect, say_granted};
use crate::nodes::layout::Kind;
use crate::output::exit::{Failure, Outcome};
use crate::placement::Mode;
use crate::take::chain::Chain;

fn main() -> ExitCode {
    if let Some(exit) = supervise::watchdog_process::run_if_asked() {
        return exit;
    }
    signals::ignored_at_start();
    let matches = match placement::command().try_get_matches() {
        Ok(matches) => matches,
        Err(err) => return clap_failure(err),
    };
    let mut cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(err) => return clap_failure(err),
    };
    // An empty ZKLOCK_ZK= is unset, as for ZK_CONNECT; an empty --zk is a mistake, said later.
    if matches.value_source("zk") == Some(ValueSource::EnvVariable) && cli.connection.zk.as_deref() == Some("") {
        cli.connection.zk = None;
    }
    let mode = Mode::of(cli.subcommand.as_ref());
    // Bad input is reported before anything is sent anywhere.
    let checked = placement::check(&matches, mode).and_then(|()| placement::settle(&matches, &mut cli));
    if let Err(failure) = checked.and_then(|()| check_paths(&cli)) {
        return failure.report();
    }
    match &cli.subcommand {
        Some(Command::Completions { shell }) => return completions(*shell).unwrap_or_else(Failure::report),
        Some(Command::Manpage) => return manpage().unwrap_or_else(Failure::report),
        _ => {}
    }
    if cli.connection.quiet {
        output::stderr::quiet();
    }
    // Joined (and ZKLOCK_CHAIN set for the command) before the runtime's threads start.
    let chain = match &cli.subcommand {
        None | Some(Command::Hold { .. } | Command::Elect { .. }) => match Chain::join() {
            Ok(chain) => Some(chain),
            Err(failure) => return failure.report(),
        },
        _ => None,
    };
    init_logs(cli.connection.verbose);
    let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(runtime) => runtime,
        Err(err) => return Failure::new(Outcome::Failed, format!("cannot start the runtime: {err}")).report(),
    };
    let outcome = runtime.block_on(async move {
        let client = connect(&cli.connection).await?;
        say_granted(&client, &cli.connection);
        let states = client.state_watcher();
        let outcome = dispatch(&client, cli, chain).await;
        close_session(client, states).await;
        outcome
    });
    // Do not wait for background tasks (a lost session's retries) on the way out.
    runtime.shutdown_background();
    outcome.unwrap_or_else(Failure::report)
}

/// Logs go to stderr; RUST_LOG chooses, else zklock's warnings (and its steps with -v), not the
/// client's reconnection chatter, nor the library's own warning of a lost lock: the command says
/// that in its one line.
fn init_logs(verbose: bool) {
    let chosen = EnvFilter::try_from_default_env().ok();
    let said_by_the_command = chosen.is_none();
    let default = if verbose { "zklock=info" } else { "zklock=warn" };
    let filter = chosen.unwrap_or_else(|| EnvFilter::new(default));
    let not_a_loss =
        filter_fn(move |event| !(said_by_the_command && (is_loss_event(event) || is_reconnect_event(event))));
    let logs = tracing_subscriber::fmt::layer()
        .with_writer(|| output::terminal_line::Logs)
        .with_ansi(colours())
        .with_target(false)
        .with_filter(filter)
        .with_filter(not_a_loss);
    tracing_subscriber::registry().with(logs).init();
}

/// Colours only on a terminal, and not when NO_COLOR is set to anything (no-color.org); clap's
/// help follows the same rule by itself.
fn colours() -> bool {
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|value| !value.is_empty());
    std::io::stderr().is_terminal() && !no_color
}

/// The library's event of a lost hold (a warning with the hold's duration).
fn is_loss_event(event: &tracing::Metadata<'_>) -> bool {
    *event.level() == tracing::Level::WARN && event.fields().field("held_ms").is_some()
}

/// The library's warning that a new session could not be connected, which calls every end of a
/// session an expiry, even one the client declared itself out of reach: `retake::session`
/// says it as what is known.
fn is_reconnect_event(event: &tracing::Metadata<'_>) -> bool {
    *event.level() == tracing::Level::WARN && event.module_path() == Some("zklock::client::session")
}

/// Does what the command line asks, once connected. Each command's future is boxed: together
/// they made a state machine of hundreds of kilobytes, which a debug build copies on the main
/// thread's stack at each poll (`tests/run.rs` runs every mode on an eighth of the usual stack).
/// `chain` is the one this process is a link of, when it takes a lock or runs a command.
async fn dispatch(client: &Client, cli: Cli, chain: Option<Chain>) -> Result<ExitCode, Failure> {
    let json = cli.modes.json;
    let command = command(&cli);
    match cli.subcommand {
        Some(Command::List { lock_path }) => Box::pin(list(client, &lock_path, json)).await,
        Some(Command::Deadlocks { root }) => Box::pin(deadlocks(client, &root, json)).await,
        Some(Command::Revoke { node }) => Box::pin(revoke(client, &node)).await,
        Some(Command::Leader { election_path }) => {
            let kind = if cli.lock.kazoo { Kind::Kazoo } else { Kind::Latch };
            Box::pin(leader(client, &election_path, kind, json)).await
        }
        Some(Command::Hold { lock_path }) => {
            Box::pin(hold(client, &cli.connection, &lock_path, &cli.lock, chain, json)).await
        }
        Some(Command::Elect { election_path, .. }) => {
            let id = cli.modes.id.as_deref();
            let campaign = Campaign { path: &election_path, id, args: &cli.lock, as_json: json };
            Box::pin(elect(client, &cli.connection, &campaign, &command)).await
        }
        Some(Command::Completions { .. } | Command::Manpage) => Ok(ExitCode::SUCCESS),
        None => {
            let path = cli.lock_path.as_deref().unwrap_or_default();
            Box::pin(run(client, &cli.connection, path, &cli.lock, chain, &command)).await
        }
    }
}

/// The command to run: its words, or `sh -c` with `-c`'s shell command.
fn command(cli: &Cli) -> Vec<OsString> {
    if let Some(shell_command) = &cli.modes.shell_command {
        return vec!["sh".into(), "-c".into(), shell_command.into()];
    }
    match &cli.subcommand {
        Some(Command::Elect { command, .. }) => command.clone(),
        _ => cli.command.clone(),
    }
}

/// Every path on the command line is a valid ZooKeeper path, and the command is given once.
fn check_paths(cli: &Cli) -> Result<(), Failure> {
    let words_too = match &cli.subcommand {
        Some(Command::Elect { command, .. }) => !command.is_empty(),
        _ => !cli.command.is_empty(),
    };
    if cli.modes.shell_command.is_some() && words_too {
        return Err(Failure::new(Outcome::Usage, "give the command either with -c or as words, not both"));
    }
    // The whole tree may be searched.
    if let Some(root) = cli.lock.fail_on_deadlock.as_deref().filter(|root| *root != "/") {
        cli_path(root)?;
    }
    match &cli.subcommand {
        Some(Command::List { lock_path: path } | Command::Hold { lock_path: path }) => cli_path(path),
        Some(Command::Elect { election_path: path, .. } | Command::Leader { election_path: path }) => cli_path(path),
        Some(Command::Revoke { node }) => cli_path(node),
        // The whole tree may be searched.
        Some(Command::Deadlocks { root }) if root == "/" => Ok(()),
        Some(Command::Deadlocks { root }) => cli_path(root),
        Some(Command::Completions { .. } | Command::Manpage) => Ok(()),
        None => cli.lock_path.as_deref().map(cli_path).unwrap_or(Ok(())),
    }
}

/// --help and --version on stdout with success; anything else clap refuses, as one line.
fn clap_failure(err: clap::Error) -> ExitCode {
    if err.use_stderr() {
        return Failure::new(Outcome::Usage, one_line(&err.render().to_string())).report();
    }
    match err.print() {
        Ok(()) => ExitCode::SUCCESS,
        // `zklock --help | head -1`: the reader has what it wanted, as for any other output.
        Err(err) if err.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::from(Outcome::ReaderGone.code()),
        Err(_) => ExitCode::from(Outcome::CannotWrite.code()),
    }
}

fn cli_path(path: &str) -> Result<(), Failure> {
    zklock::validate_lock_path(path).map_err(Failure::from_lock_error)
}

/// Clap's message on one line, without the usage block: "error: ..." becomes the message, and
/// a tip follows it after a semicolon.
fn one_line(message: &str) -> String {
    let message = message.split("\n\nUsage:").next().unwrap_or(message);
    let message = message.split("\n\nFor more information").next().unwrap_or(message);
    let parts: Vec<String> = message
        .split("\n\n")
        .map(|part| part.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|part| !part.is_empty())
        .collect();
    let text = parts.join("; ");
    format!("{} (see zklock --help)", text.strip_prefix("error: ").unwrap_or(&text))
}
