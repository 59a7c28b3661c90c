//! While zklock waits for a lock on a terminal, one line on stderr says where it stands:
//! `zklock: waiting: 3 ahead · holder pid 4242 on web-3 held 12s · waited 4s` (the holder's
//! session id when its node does not say who it is), redrawn every second and at every change
//! of the queue (the library's `watch_queue`), cut to the terminal's width and cleared once the
//! wait ends (`terminal_line.rs`).
//! Nothing when stderr is not a terminal (a log file, a pipe, cron's mail) or with `--quiet`.

use std::convert::Infallible;
use std::future::Future;
use std::io::IsTerminal as _;
use std::time::{Duration, SystemTime};

use tokio::sync::watch;
use zklock::queue::QueuePosition;
use zookeeper_client::Client;

use crate::nodes::node_data::NodeData;
use crate::nodes::queue::session_id;
use crate::output::duration::whole_seconds;
use crate::output::stderr::is_quiet;
use crate::output::terminal_line;

/// Runs `acquire`, showing the waiting line on stderr while it waits if stderr is a terminal
/// and `--quiet` was not given; `client` reads the holder's node (who it is).
pub async fn shown<F: Future>(client: &Client, acquire: F) -> F::Output {
    if is_quiet() || !std::io::stderr().is_terminal() {
        return acquire.await;
    }
    // Cleared however the wait ends, also when it is dropped (a signal, Ctrl-C), so that what
    // zklock, the command or the shell writes next starts on a clean line.
    let _cleared = Cleared;
    let (position, seen) = watch::channel(None);
    tokio::select! {
        done = zklock::queue::watch_queue(position, acquire) => done,
        never = draw(client, seen) => match never {},
    }
}

/// Clears the waiting line when dropped.
struct Cleared;

impl Drop for Cleared {
    fn drop(&mut self) {
        terminal_line::clear();
    }
}

/// Redraws the line at each change of the position, and every second for the clocks in it.
async fn draw(client: &Client, mut seen: watch::Receiver<Option<QueuePosition>>) -> Infallible {
    // The holder's node and who it says it is, read once per holder.
    let mut known: Option<(String, Option<NodeData>)> = None;
    loop {
        let position = seen.borrow_and_update().clone();
        if let Some(position) = position {
            if let Some(holder) = &position.holder {
                let node = holder.node_path.clone();
                if known.as_ref().is_none_or(|(read, _)| *read != node) {
                    let who = client.get_data(&node).await.ok();
                    let who = who.and_then(|(data, _)| NodeData::parse(String::from_utf8_lossy(&data).trim()));
                    known = Some((node, who));
                }
            }
            let who = known.as_ref().and_then(|(_, who)| who.as_ref());
            terminal_line::draw(&format!("zklock: {}", line(&position, who, SystemTime::now())));
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

/// The line for `position` at `now`, the holder named by `who` when its node says.
fn line(position: &QueuePosition, who: Option<&NodeData>, now: SystemTime) -> String {
    let holder = position.holder.as_ref().map(|holder| {
        let name = match who {
            Some(who) => format!("pid {} on {}", who.pid, who.host),
            None => session_id(holder.session_id),
        };
        (name, now.duration_since(holder.created).unwrap_or_default())
    });
    said(position.ahead, holder, position.waiting_since.elapsed())
}

/// The line's words: how many are ahead, who holds (a zklock's pid and host, else its session)
/// and how long it has held, and how long we have waited.
fn said(ahead: Option<usize>, holder: Option<(String, Duration)>, waited: Duration) -> String {
    let mut parts = vec![match ahead {
        Some(ahead) => format!("waiting: {ahead} ahead"),
        None => "waiting".to_owned(),
    }];
    if let Some((who, held)) = holder {
        parts.push(format!("holder {who} held {}", whole_seconds(held)));
    }
    parts.push(format!("waited {}", whole_seconds(waited)));
    parts.join(" · ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_says_where_the_wait_stands() {
        let holder = Some((session_id(0x1000_0000_1234), Duration::from_millis(12_400)));
        assert_eq!(
            said(Some(3), holder, Duration::from_millis(4_900)),
            "waiting: 3 ahead · holder 0x100000001234 held 12s · waited 4s"
        );
        let zklock = Some(("pid 42 on web-3".to_owned(), Duration::from_secs(2)));
        assert_eq!(
            said(Some(1), zklock, Duration::ZERO),
            "waiting: 1 ahead · holder pid 42 on web-3 held 2s · waited <1s"
        );
        assert_eq!(said(None, None, Duration::ZERO), "waiting · waited <1s");
        assert_eq!(said(None, None, Duration::from_millis(500)), "waiting · waited <1s");
    }
}
