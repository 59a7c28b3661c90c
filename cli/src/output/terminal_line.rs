//! The one line zklock draws over and over on a terminal's stderr (the waiting line), and the
//! rest of what it writes there while the line stands: the line is cleared first and redrawn
//! after, so that no log line or notice is spliced onto it.
//!
//! The line is cut to the terminal's width, read at each redraw, less [`MARGIN`]: a line that
//! wraps cannot be drawn over with a carriage return, and each redraw would stack a copy. Only
//! carriage returns and spaces, no escape sequence (NO_COLOR, dumb terminals).

use std::io::Write as _;
use std::sync::{Mutex, MutexGuard, PoisonError};

/// Columns the line leaves free at the terminal's end: two for the `^C` the terminal echoes
/// when Ctrl-C is typed, and one so that the cursor, after it, still is on the line (a
/// character in the last column wraps the next one).
const MARGIN: usize = 3;

/// The width assumed when the terminal does not say (a serial line, `stty cols 0`).
const UNKNOWN_WIDTH: usize = 80;

/// What stands on the terminal now: the line's text as given, and the columns drawn (0: none).
struct Drawn {
    text: String,
    columns: usize,
}

static DRAWN: Mutex<Drawn> = Mutex::new(Drawn { text: String::new(), columns: 0 });

fn drawn() -> MutexGuard<'static, Drawn> {
    DRAWN.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Draws `text` over the line, cut to the terminal's width.
pub fn draw(text: &str) {
    let mut drawn = drawn();
    let mut stderr = std::io::stderr().lock();
    let width = terminal_width();
    let shown = fitted(text, width);
    let columns = shown.chars().count();
    if columns < drawn.columns {
        blank(&mut stderr, drawn.columns, width);
    }
    let _ = write!(stderr, "\r{shown}");
    *drawn = Drawn { text: text.to_owned(), columns };
}

/// Clears the line, if one stands, leaving the cursor at the start of the blank line.
pub fn clear() {
    let mut drawn = drawn();
    if drawn.columns > 0 {
        blank(&mut std::io::stderr().lock(), drawn.columns, terminal_width());
        *drawn = Drawn { text: String::new(), columns: 0 };
    }
}

/// Writes `bytes` (whole lines) on stderr above the line: clears it, writes them, redraws it.
pub fn above(bytes: &[u8]) {
    let mut drawn = drawn();
    let mut stderr = std::io::stderr().lock();
    if drawn.columns == 0 {
        let _ = stderr.write_all(bytes);
        return;
    }
    let width = terminal_width();
    blank(&mut stderr, drawn.columns, width);
    let _ = stderr.write_all(bytes);
    let shown = fitted(&drawn.text, width);
    let _ = write!(stderr, "{shown}");
    drawn.columns = shown.chars().count();
}

/// Overwrites `columns` columns with spaces (and the echoed `^C` after them), within the line.
fn blank(stderr: &mut impl std::io::Write, columns: usize, width: usize) {
    let spaces = (columns + 2).min(width.saturating_sub(1));
    let _ = write!(stderr, "\r{:spaces$}\r", "");
}

/// The log writer for stderr: each event, written whole, goes [`above`] the line.
pub struct Logs;

impl std::io::Write for Logs {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        above(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

/// `text` in at most `width - MARGIN` columns (one character a column), cut with `…`.
fn fitted(text: &str, width: usize) -> String {
    let room = width.saturating_sub(MARGIN).max(1);
    if text.chars().count() <= room {
        return text.to_owned();
    }
    text.chars().take(room - 1).chain(['…']).collect()
}

/// The terminal's width now, as stderr's terminal says.
fn terminal_width() -> usize {
    // SAFETY: TIOCGWINSZ only fills the zeroed winsize we pass.
    let mut size: libc::winsize = unsafe { std::mem::zeroed() };
    let read = unsafe { libc::ioctl(libc::STDERR_FILENO, libc::TIOCGWINSZ, &mut size) };
    match (read, size.ws_col) {
        (0, columns) if columns > 0 => usize::from(columns),
        _ => UNKNOWN_WIDTH,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_is_cut_to_leave_the_margin_free() {
        assert_eq!(fitted("zklock: waiting", 80), "zklock: waiting");
        let cut = fitted("zklock: waiting: 1 ahead · holder pid 42 on web-3 held 2s", 40);
        assert_eq!(cut, "zklock: waiting: 1 ahead · holder pi…");
        assert_eq!(cut.chars().count(), 40 - MARGIN);
        assert_eq!(fitted("abc", 0), "…");
    }
}
