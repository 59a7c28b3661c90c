//! The subcommands, one file each; `run.rs` is the default mode, `zklock LOCK_PATH COMMAND`.
//! What several of them do alike (take a hold alone, keep it, run a command under it, take it
//! again) lives beside this folder, each step in a file of its own.

pub mod completions;
pub mod deadlocks;
pub mod elect;
pub mod hold;
pub mod leader;
pub mod list;
pub mod manpage;
pub mod revoke;
pub mod run;
