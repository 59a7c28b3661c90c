//! `zklock`: run a command while holding a ZooKeeper lock or semaphore, or while leading an
//! election. `zklock --help` says how.

mod acquire;
mod cli;
mod connect;
mod duration;
mod elect;
mod exit;
mod group;
mod held;
mod hold;
mod layout;
mod list;
mod list_output;
mod node_data;
mod output;
mod revoke;
mod run;
mod signals;
mod watchdog;

use std::io::IsTerminal as _;
use std::process::ExitCode;

use clap::Parser as _;
use tracing_subscriber::filter::filter_fn;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::{EnvFilter, Layer as _};

use crate::cli::{Cli, Command};
use crate::connect::{close_session, connect};
use crate::exit::{Failure, Outcome};

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) if !err.use_stderr() => {
            // --help, --version
            let _ = err.print();
            return ExitCode::SUCCESS;
        }
        Err(err) => return Failure::new(Outcome::Usage, one_line(&err.render().to_string())).report(),
    };
    init_logs(cli.connection.verbose);
    let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(runtime) => runtime,
        Err(err) => return Failure::new(Outcome::Failed, format!("cannot start the runtime: {err}")).report(),
    };
    // Bad input is reported before anything is sent anywhere.
    let path_to_check = match &cli.subcommand {
        Some(Command::List { lock_path, .. }) => cli_path(lock_path),
        Some(Command::Revoke { node }) => cli_path(node),
        Some(Command::Hold { lock }) => lock.lock_path.as_deref().map(cli_path).unwrap_or(Ok(())),
        Some(Command::Elect { election, .. }) => cli_path(&election.election_path),
        None => cli.lock.lock_path.as_deref().map(cli_path).unwrap_or(Ok(())),
    };
    if let Err(failure) = path_to_check {
        return failure.report();
    }
    let outcome = runtime.block_on(async move {
        let client = connect(&cli.connection).await?;
        let states = client.state_watcher();
        let outcome = match cli.subcommand {
            Some(Command::List { lock_path, json }) => list::list(&client, &lock_path, json).await,
            Some(Command::Revoke { node }) => revoke::revoke(&client, &node).await,
            Some(Command::Hold { lock }) => hold::hold(&client, lock).await,
            Some(Command::Elect { election, command }) => elect::elect(&client, election, command).await,
            None => run::run(&client, cli.lock, cli.command).await,
        };
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
    let not_a_loss = filter_fn(move |event| !(said_by_the_command && is_loss_event(event)));
    let logs = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_target(false)
        .with_filter(filter)
        .with_filter(not_a_loss);
    tracing_subscriber::registry().with(logs).init();
}

/// The library's event of a lost hold (a warning with the hold's duration).
fn is_loss_event(event: &tracing::Metadata<'_>) -> bool {
    *event.level() == tracing::Level::WARN && event.fields().field("held_ms").is_some()
}

fn cli_path(path: &str) -> Result<(), Failure> {
    zklock::validate_lock_path(path).map_err(Failure::from_lock_error)
}

/// Clap's message on one line, without the usage block: "error: ..." becomes the message.
fn one_line(message: &str) -> String {
    let message = message.split("\n\nUsage:").next().unwrap_or(message);
    let message = message.split("\n\nFor more information").next().unwrap_or(message);
    let words: Vec<&str> = message.split_whitespace().collect();
    let text = words.join(" ");
    format!("{} (see zklock --help)", text.strip_prefix("error: ").unwrap_or(&text))
}
