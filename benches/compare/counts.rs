//! What the server counts, read from its four-letter words: the packets it has received from
//! everyone (`mntr`) and the requests from one session (`cons`). `benches/uncontended.rs` reads
//! them too.

use std::net::SocketAddr;

use zklock_testcontainers::four_letter_word;

/// Packets the server has received from everyone (`mntr`).
pub fn packets_received(server: SocketAddr) -> u64 {
    let Ok(answer) = four_letter_word(server, "mntr") else { return 0 };
    answer
        .lines()
        .find_map(|line| line.strip_prefix("zk_packets_received"))
        .and_then(|value| value.trim().parse().ok())
        .unwrap_or(0)
}

/// Requests the server has received from session `session_id` (`recved=` in its `cons` line),
/// pings too; `None` when the server cannot be asked or does not list the session.
pub fn session_requests(server: SocketAddr, session_id: i64) -> Option<u64> {
    let answer = four_letter_word(server, "cons").ok()?;
    let session = format!("sid={session_id:#x}");
    let line = answer.lines().find(|line| line.contains(&session))?;
    line.split("recved=").nth(1)?.split(',').next()?.parse().ok()
}
