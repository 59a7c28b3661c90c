//! The subcommands, one file each; `run.rs` is the default mode, `zklock LOCK_PATH COMMAND`.
//! What several of them do alike lives beside this folder, each step in a file of its own:
//! taking a hold alone, keeping it and taking it again in `take/`, running a command under it in
//! `supervise/`.

pub mod completions;
pub mod deadlocks;
pub mod elect;
pub mod hold;
pub mod leader;
pub mod list;
pub mod manpage;
pub mod revoke;
pub mod run;
