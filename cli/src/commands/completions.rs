//! `zklock completions SHELL`: the completion script, generated from the command line's
//! definitions so that it never drifts from them.

use std::process::ExitCode;

use clap::ValueEnum as _;

use crate::output::exit::Failure;
use crate::output::stdout;
use crate::placement::offered;

/// Prints the completion script for `shell`.
pub fn completions(shell: clap_complete::Shell) -> Result<ExitCode, Failure> {
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
    stdout::bytes(&script)?;
    Ok(ExitCode::SUCCESS)
}
