//! `zklock`: run a command while holding a ZooKeeper lock or semaphore. `zklock --help` says how.

mod cli;
mod duration;
mod exit;
mod list;
mod run;

use std::process::ExitCode;

use clap::Parser as _;
use std::time::Duration;

use zookeeper_client::{Client, SessionState, StateWatcher};

use crate::cli::{Cli, Command, Connection};
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
    let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(runtime) => runtime,
        Err(err) => return Failure::new(Outcome::Failed, format!("cannot start the runtime: {err}")).report(),
    };
    // Bad input is reported before anything is sent anywhere.
    let path_to_check = match &cli.command {
        Some(Command::List { lock_path, .. }) => cli_path(lock_path),
        Some(Command::Revoke { node }) => cli_path(node),
        None => cli.run.lock_path.as_deref().map(cli_path).unwrap_or(Ok(())),
    };
    if let Err(failure) = path_to_check {
        return failure.report();
    }
    let outcome = runtime.block_on(async move {
        let client = connect(&cli.connection).await?;
        let states = client.state_watcher();
        let outcome = match cli.command {
            Some(Command::List { lock_path, semaphore }) => list::list(&client, &lock_path, semaphore).await,
            Some(Command::Revoke { node }) => {
                zklock::revoke(&client, &node).await.map_err(Failure::from_lock_error)?;
                println!("asked the holder of {node} to let go");
                Ok(ExitCode::SUCCESS)
            }
            None => run::run(&client, cli.run).await,
        };
        close_session(client, states).await;
        outcome
    });
    // Do not wait for background tasks (a lost session's retries) on the way out.
    runtime.shutdown_background();
    outcome.unwrap_or_else(Failure::report)
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

/// Closes the session and waits (a little) for the server to confirm: the server then deletes
/// every node the session still had, such as a waiting node of an acquire cut short by a signal.
async fn close_session(client: Client, mut states: StateWatcher) {
    // The last handle going sends CloseSession; background tasks may hold a handle a moment more.
    drop(client);
    let closed = async {
        while !matches!(states.peek_state(), SessionState::Closed | SessionState::Expired) {
            states.changed().await;
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(3), closed).await;
}

/// Connects to ZooKeeper, within the connect timeout.
async fn connect(connection: &Connection) -> Result<Client, Failure> {
    let hosts = connection
        .zk
        .clone()
        .or_else(|| std::env::var("ZK_CONNECT").ok().filter(|hosts| !hosts.is_empty()))
        .unwrap_or_else(|| "127.0.0.1:2181".to_owned());
    let connecting = Client::connector().with_session_timeout(connection.session_timeout).connect(&hosts);
    match tokio::time::timeout(connection.connect_timeout, connecting).await {
        Ok(Ok(client)) => Ok(client),
        Ok(Err(err)) => {
            Err(Failure::new(Outcome::Unavailable, format!("cannot connect to ZooKeeper at {hosts}: {err}")))
        }
        Err(_) => Err(Failure::new(
            Outcome::Unavailable,
            format!("cannot connect to ZooKeeper at {hosts} within {:?}", connection.connect_timeout),
        )),
    }
}
