//! Shell completions and the manual page, generated from the command line's definitions so they
//! never drift from it.

use std::process::ExitCode;

use clap::ValueEnum as _;

use crate::exit::{Failure, Outcome};
use crate::placement::{command, offered};

pub fn completions(shell: clap_complete::Shell) -> ExitCode {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut offered(), "zklock", &mut script);
    if shell == clap_complete::Shell::Fish {
        // clap_complete's fish script completes no positional argument: `completions`' shell.
        let shells: Vec<String> =
            clap_complete::Shell::value_variants().iter().map(|shell| shell.to_string()).collect();
        let offer = format!(
            "complete -c zklock -n \"__fish_zklock_using_subcommand completions\" -f -a \"{}\"\n",
            shells.join(" ")
        );
        script.extend_from_slice(offer.as_bytes());
    }
    print(&script)
}

pub fn manpage() -> ExitCode {
    match crate::manual::page(command()) {
        Ok(page) => print(&page),
        Err(err) => Failure::new(Outcome::Failed, format!("cannot render the manual page: {err}")).report(),
    }
}

fn print(bytes: &[u8]) -> ExitCode {
    match crate::stdout::bytes(bytes) {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => failure.report(),
    }
}
