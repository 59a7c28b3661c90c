//! While zklock waits for a lock on a terminal, one line on stderr says where it stands:
//! `zklock: waiting: 3 ahead · holder 0x1000… held 12 s · waited 4 s`, redrawn every second and
//! at every change of the queue (the library's `watch_queue`), and blanked once the wait ends.
//! Nothing when stderr is not a terminal (a log file, a pipe, cron's mail) or with `--quiet`.

use std::convert::Infallible;
use std::future::Future;
use std::io::{IsTerminal as _, Write as _};
use std::time::{Duration, SystemTime};

use tokio::sync::watch;
use zklock::QueuePosition;

use crate::duration::whole_seconds;
use crate::queue::session_id;
use crate::stderr::is_quiet;

/// Runs `acquire`, showing the waiting line on stderr while it waits if stderr is a terminal
/// and `--quiet` was not given.
pub async fn shown<F: Future>(acquire: F) -> F::Output {
    if is_quiet() || !std::io::stderr().is_terminal() {
        return acquire.await;
    }
    let (position, seen) = watch::channel(None);
    let mut drawn = 0;
    let done = tokio::select! {
        done = zklock::watch_queue(position, acquire) => done,
        never = draw(seen, &mut drawn) => match never {},
    };
    // Blanks the line, if one was drawn, so that what zklock or the command says next starts on
    // a clean one: carriage returns and spaces, no escape sequence (NO_COLOR, dumb terminals).
    if drawn > 0 {
        let _ = write!(std::io::stderr(), "\r{:drawn$}\r", "");
    }
    done
}

/// Redraws the line at each change of the position, and every second for the clocks in it;
/// `drawn` is the widest line drawn so far, which each one is padded over.
async fn draw(mut seen: watch::Receiver<Option<QueuePosition>>, drawn: &mut usize) -> Infallible {
    loop {
        if let Some(position) = &*seen.borrow_and_update() {
            let text = format!("zklock: {}", line(position, SystemTime::now()));
            let width = text.chars().count();
            let _ = write!(std::io::stderr(), "\r{text}{:pad$}", "", pad = drawn.saturating_sub(width));
            *drawn = width.max(*drawn);
        }
        tokio::select! {
            changed = seen.changed() => {
                if changed.is_err() {
                    return std::future::pending().await;
                }
            }
            () = tokio::time::sleep(Duration::from_secs(1)) => {}
        }
    }
}

/// The line for `position` at `now`.
fn line(position: &QueuePosition, now: SystemTime) -> String {
    let holder = position
        .holder
        .as_ref()
        .map(|holder| (holder.session_id, now.duration_since(holder.since).unwrap_or_default()));
    said(position.ahead, holder, position.waiting_since.elapsed())
}

/// The line's words: how many are ahead, the holder's session and how long it has held, and how
/// long we have waited.
fn said(ahead: Option<usize>, holder: Option<(i64, Duration)>, waited: Duration) -> String {
    let mut parts = vec![match ahead {
        Some(ahead) => format!("waiting: {ahead} ahead"),
        None => "waiting".to_owned(),
    }];
    if let Some((id, held)) = holder {
        parts.push(format!("holder {} held {}", session_id(id), whole_seconds(held)));
    }
    parts.push(format!("waited {}", whole_seconds(waited)));
    parts.join(" · ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_says_where_the_wait_stands() {
        let holder = Some((0x1000_0000_1234, Duration::from_millis(12_400)));
        assert_eq!(
            said(Some(3), holder, Duration::from_millis(4_900)),
            "waiting: 3 ahead · holder 0x100000001234 held 12s · waited 4s"
        );
        assert_eq!(said(None, None, Duration::ZERO), "waiting · waited 0s");
    }
}
