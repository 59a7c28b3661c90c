//! Where each option applies. Every option is accepted before or after a subcommand's name
//! (clap's `global`), so which modes take it is checked here, after parsing: an option written
//! on the command line for a mode that does not take it is refused, naming where it goes. One
//! set in the environment is ignored where it does not apply.

use clap::parser::ValueSource;
use clap::{ArgMatches, CommandFactory as _};

use crate::cli::{Cli, Command};
use crate::output::exit::{Failure, Outcome};

/// What zklock was asked to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Run,
    Hold,
    Elect,
    Leader,
    List,
    Deadlocks,
    Revoke,
    Completions,
    Manpage,
}

use Mode::*;

/// The options that not every mode takes (by clap id), and the modes that take them. The
/// connection options apply everywhere.
const SCOPES: &[(&str, &[Mode])] = &[
    ("nonblock", &[Run, Hold]),
    ("timeout", &[Run, Hold, Elect]),
    ("conflict_exit_code", &[Run, Hold, Elect]),
    ("loss_policy", &[Run, Hold, Elect]),
    ("acl", &[Run, Hold, Elect]),
    ("kill_after", &[Run, Elect]),
    ("write", &[Run, Hold]),
    ("read", &[Run, Hold]),
    ("semaphore", &[Run, Hold]),
    ("mutex", &[Run, Hold]),
    ("kazoo", &[Run, Hold, Leader]),
    ("on_revoke", &[Run, Hold]),
    ("fail_on_deadlock", &[Run, Hold]),
    ("max_hold", &[Run, Hold]),
    ("retake", &[Hold, Elect]),
    ("shell_command", &[Run, Elect]),
    ("id", &[Elect]),
    ("json", &[Hold, Elect, Leader, List, Deadlocks]),
];

impl Mode {
    pub fn of(command: Option<&Command>) -> Mode {
        match command {
            None => Run,
            Some(Command::Hold { .. }) => Hold,
            Some(Command::Elect { .. }) => Elect,
            Some(Command::Leader { .. }) => Leader,
            Some(Command::List { .. }) => List,
            Some(Command::Deadlocks { .. }) => Deadlocks,
            Some(Command::Revoke { .. }) => Revoke,
            Some(Command::Completions { .. }) => Completions,
            Some(Command::Manpage) => Manpage,
        }
    }

    fn usage(self) -> &'static str {
        match self {
            Run => "zklock LOCK_PATH COMMAND",
            Hold => "zklock hold",
            Elect => "zklock elect",
            Leader => "zklock leader",
            List => "zklock list",
            Deadlocks => "zklock deadlocks",
            Revoke => "zklock revoke",
            Completions => "zklock completions",
            Manpage => "zklock manpage",
        }
    }
}

/// Whether `mode` takes the option `id`: a scoped one where [`SCOPES`] says so, a connection
/// option wherever zklock connects.
fn takes(mode: Mode, id: &str) -> bool {
    match SCOPES.iter().find(|(scoped, _)| *scoped == id) {
        Some((_, modes)) => modes.contains(&mode),
        None => !matches!(mode, Completions | Manpage),
    }
}

/// The command line as clap parses it, with each subcommand's help showing only the options it
/// takes (`zklock revoke -h` lists revoke's). The others are still accepted there (hidden), so
/// that [`check`] can refuse one with where it goes, and one set in the environment is ignored.
pub fn command() -> clap::Command {
    let globals = globals();
    each_subcommand(Cli::command(), |mode, subcommand| {
        // A global defined in the subcommand itself is not propagated there again.
        let hidden = globals.iter().filter(|arg| !takes(mode, arg.get_id().as_str()));
        hidden.fold(subcommand, |subcommand, arg| subcommand.arg(arg.clone().hide(true)))
    })
}

/// The command line as completion scripts offer it: each subcommand with the options it takes
/// and no other (the generators offer hidden options too), so `zklock completions <TAB>` offers
/// the shells. Never parsed.
pub fn offered() -> clap::Command {
    let globals = globals();
    let command = Cli::command().mut_args(|arg| arg.global(false));
    each_subcommand(command, |mode, subcommand| {
        let taken = globals.iter().filter(|arg| takes(mode, arg.get_id().as_str()));
        taken.fold(subcommand, |subcommand, arg| subcommand.arg(arg.clone().global(false)))
    })
}

fn globals() -> Vec<clap::Arg> {
    Cli::command().get_arguments().filter(|arg| arg.is_global_set()).cloned().collect()
}

/// `command` with `change` applied to each subcommand, told its mode.
fn each_subcommand(
    mut command: clap::Command,
    mut change: impl FnMut(Mode, clap::Command) -> clap::Command,
) -> clap::Command {
    let subcommands = [
        ("hold", Hold),
        ("elect", Elect),
        ("leader", Leader),
        ("list", List),
        ("deadlocks", Deadlocks),
        ("revoke", Revoke),
        ("completions", Completions),
        ("manpage", Manpage),
    ];
    for (name, mode) in subcommands {
        command = command.mut_subcommand(name, |subcommand| change(mode, subcommand));
    }
    command
}

/// Refuses an option written on the command line for a mode that does not take it.
pub fn check(matches: &ArgMatches, mode: Mode) -> Result<(), Failure> {
    for (id, modes) in SCOPES {
        if modes.contains(&mode) || !given_on_the_command_line(matches, id) {
            continue;
        }
        let takers: Vec<&str> = modes.iter().map(|mode| mode.usage()).collect();
        return Err(Failure::new(
            Outcome::Usage,
            format!("{} does not apply to `{}`; it goes with `{}`", flag(id), mode.usage(), takers.join("`, `")),
        ));
    }
    Ok(())
}

/// Options of which one at most may be in force. One written on the command line overrides
/// those set in the environment (as every option does); two written, or two set, are refused.
/// A semaphore's waits are no deadlock's (a waiter goes on when any lease is let go).
/// `--kazoo` with `--semaphore N` is kazoo's `Semaphore` layout, with `--read` or `--write` a
/// side of kazoo's read-write lock.
const EXCLUSIVE: [&[&str]; 4] = [
    &["nonblock", "timeout"],
    &["write", "read", "semaphore", "mutex"],
    &["mutex", "kazoo"],
    &["semaphore", "fail_on_deadlock"],
];

/// Applies [`EXCLUSIVE`]: clears what the environment set against the command line.
pub fn settle(matches: &ArgMatches, cli: &mut Cli) -> Result<(), Failure> {
    for set in EXCLUSIVE {
        let in_force: Vec<&str> = set.iter().copied().filter(|id| in_force(cli, id)).collect();
        let (written, from_env): (Vec<&str>, Vec<&str>) =
            in_force.iter().partition(|id| given_on_the_command_line(matches, id));
        let clash = match (written.as_slice(), from_env.as_slice()) {
            ([first, second, ..], _) => Some(format!("{} and {}", flag(first), flag(second))),
            ([], [first, second, ..]) => Some(format!("{} and {}", env_name(first), env_name(second))),
            ([_], overridden) => {
                overridden.iter().for_each(|id| clear(cli, id));
                None
            }
            _ => None,
        };
        if let Some(clash) = clash {
            return Err(Failure::new(Outcome::Usage, format!("{clash} cannot be used together")));
        }
    }
    Ok(())
}

fn in_force(cli: &Cli, id: &str) -> bool {
    let lock = &cli.lock;
    match id {
        "nonblock" => lock.nonblock,
        "timeout" => lock.hold.timeout.is_some(),
        "write" => lock.write,
        "read" => lock.read,
        "semaphore" => lock.semaphore.is_some(),
        "mutex" => lock.mutex,
        "kazoo" => lock.kazoo,
        "fail_on_deadlock" => lock.fail_on_deadlock.is_some(),
        "max_hold" => lock.max_hold.is_some(),
        _ => false,
    }
}

fn clear(cli: &mut Cli, id: &str) {
    let lock = &mut cli.lock;
    match id {
        "nonblock" => lock.nonblock = false,
        "timeout" => lock.hold.timeout = None,
        "write" => lock.write = false,
        "read" => lock.read = false,
        "semaphore" => lock.semaphore = None,
        "mutex" => lock.mutex = false,
        "kazoo" => lock.kazoo = false,
        "fail_on_deadlock" => lock.fail_on_deadlock = None,
        "max_hold" => lock.max_hold = None,
        _ => {}
    }
}

/// Whether the option was on the command line, before or after the subcommand's name.
fn given_on_the_command_line(matches: &ArgMatches, id: &str) -> bool {
    let mut level = Some(matches);
    while let Some(matches) = level {
        if matches.try_get_raw(id).is_ok_and(|raw| raw.is_some())
            && matches.value_source(id) == Some(ValueSource::CommandLine)
        {
            return true;
        }
        level = matches.subcommand().map(|(_, sub)| sub);
    }
    false
}

/// The environment variable that sets the option.
fn env_name(id: &str) -> String {
    let command = Cli::command();
    let env = command.get_arguments().find(|arg| arg.get_id() == id).and_then(|arg| arg.get_env());
    env.map(|name| name.to_string_lossy().into_owned()).unwrap_or_else(|| id.to_owned())
}

/// The option as it is written: `--semaphore`, or `-n/--nonblock`.
fn flag(id: &str) -> String {
    let command = Cli::command();
    let Some(arg) = command.get_arguments().find(|arg| arg.get_id() == id) else { return id.to_owned() };
    match (arg.get_short(), arg.get_long()) {
        (Some(short), Some(long)) => format!("-{short}/--{long}"),
        (None, Some(long)) => format!("--{long}"),
        _ => id.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_is_consistent_in_every_subcommand() {
        Cli::command().debug_assert();
        command().debug_assert();
        offered().debug_assert();
    }

    #[test]
    fn every_scoped_option_exists() {
        let command = Cli::command();
        let ids: Vec<&str> =
            SCOPES.iter().map(|(id, _)| *id).chain(EXCLUSIVE.iter().flat_map(|set| set.iter().copied())).collect();
        for id in ids {
            assert!(command.get_arguments().any(|arg| arg.get_id() == id), "{id}");
            assert!(flag(id).starts_with('-'), "{id}");
        }
    }

    #[test]
    fn the_json_help_names_every_mode_that_takes_it() {
        let command = Cli::command();
        let json = command.get_arguments().find(|arg| arg.get_id() == "json").unwrap();
        let help = json.get_help().unwrap().to_string();
        let (_, modes) = SCOPES.iter().find(|(id, _)| *id == "json").unwrap();
        for mode in modes.iter().filter(|mode| **mode != Run) {
            let name = mode.usage().trim_start_matches("zklock ");
            assert!(help.split([',', ' ']).any(|word| word == name), "--json's help lacks {name}: {help}");
        }
    }
}
