//! What the command says, and nothing of locks: its exit codes and the error that goes with
//! each, its lines on stderr (and the line a terminal's wait redraws), stdout, durations as it
//! writes and reads them, the layouts of its JSON documents, and its help and manual page.
//! Every other folder uses it; it uses none of them.

pub mod duration;
pub mod exit;
pub mod json_schema;
pub mod manual;
pub mod stderr;
pub mod stdout;
pub mod terminal_line;
