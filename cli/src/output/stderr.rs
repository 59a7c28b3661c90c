//! zklock's own lines on stderr, `zklock: ...`: errors always, notices unless `--quiet`.
//! Saying one never fails: a stderr that cannot be written leaves the exit code to tell.

use std::sync::atomic::{AtomicBool, Ordering};

/// Says `text` on stderr as zklock's one line; a stderr that cannot be written is no reason to
/// fail (the exit code still tells).
pub fn warn(text: &str) {
    // Above the waiting line, if one stands, not spliced onto it.
    crate::output::terminal_line::above(format!("zklock: {text}\n").as_bytes());
}

/// Whether `--quiet` was given: notices are then left unsaid.
static QUIET: AtomicBool = AtomicBool::new(false);

/// Leaves every later [`notice`] unsaid (`--quiet`).
pub fn quiet() {
    QUIET.store(true, Ordering::Relaxed);
}

/// Whether `--quiet` was given.
pub fn is_quiet() -> bool {
    QUIET.load(Ordering::Relaxed)
}

/// Says `text` as [`warn`] does, unless `--quiet` was given: for what needs no action, or what
/// the exit code already tells.
pub fn notice(text: &str) {
    if !text.is_empty() && !is_quiet() {
        warn(text);
    }
}
