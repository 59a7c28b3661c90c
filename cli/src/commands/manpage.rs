//! `zklock manpage`: the manual page (roff), made of the command line's definitions and the
//! text of `--help` (`manual.rs`), so that it never drifts from them.

use std::process::ExitCode;

use crate::output::exit::{Failure, Outcome};
use crate::output::{manual, stdout};
use crate::placement::command;

/// Prints the manual page.
pub fn manpage() -> Result<ExitCode, Failure> {
    let page = manual::page(command())
        .map_err(|err| Failure::new(Outcome::Failed, format!("cannot render the manual page: {err}")))?;
    stdout::bytes(&page)?;
    Ok(ExitCode::SUCCESS)
}
