//! Shell completions and the manual page, generated from the command line's definitions so they
//! never drift from it.

use std::process::ExitCode;

use clap::CommandFactory as _;

use crate::cli::Cli;
use crate::exit::{Failure, Outcome};

pub fn completions(shell: clap_complete::Shell) -> ExitCode {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "zklock", &mut script);
    print(&script)
}

pub fn manpage() -> ExitCode {
    let mut page = Vec::new();
    if let Err(err) = clap_mangen::Man::new(Cli::command()).render(&mut page) {
        return Failure::new(Outcome::Failed, format!("cannot render the manual page: {err}")).report();
    }
    print(&page)
}

fn print(bytes: &[u8]) -> ExitCode {
    match crate::output::bytes(bytes) {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => failure.report(),
    }
}
