use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use crate::HarnessError;

/// Sends a four-letter word (`ruok`, `srvr`, `wchp`, `wchc`, `cons`, `mntr`, ...) to the server at
/// `address` and returns its whole answer.
///
/// The test servers of this crate allow every word. Times out after 5 seconds.
///
/// # Errors
/// [`HarnessError::Io`] when the server cannot be reached or does not answer.
pub fn four_letter_word(address: SocketAddr, word: &str) -> Result<String, HarnessError> {
    let context = || format!("send the four-letter word {word:?} to {address}");
    let timeout = Duration::from_secs(5);
    let mut stream = TcpStream::connect_timeout(&address, timeout).map_err(HarnessError::io(context()))?;
    stream.set_read_timeout(Some(timeout)).map_err(HarnessError::io(context()))?;
    stream.write_all(word.as_bytes()).map_err(HarnessError::io(context()))?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).map_err(HarnessError::io(context()))?;
    Ok(answer)
}

/// Whether the server at `address` answers `word` with text that contains one of `expected`.
pub(crate) fn answers(address: SocketAddr, word: &str, expected: &[&str]) -> bool {
    four_letter_word(address, word).is_ok_and(|answer| expected.iter().any(|e| answer.contains(e)))
}

/// Requests the server at `address` has received from session `session_id`; see
/// [`ZooKeeperServer::session_requests`](crate::ZooKeeperServer::session_requests).
pub(crate) fn session_requests(address: SocketAddr, session_id: i64) -> Option<u64> {
    let answer = four_letter_word(address, "cons").ok()?;
    let session = format!("sid={session_id:#x}");
    let line = answer.lines().find(|line| line.contains(&session))?;
    line.split("recved=").nth(1)?.split(',').next()?.parse().ok()
}

/// Who watches what on the server at `address`; see
/// [`ZooKeeperServer::watchers`](crate::ZooKeeperServer::watchers).
pub(crate) fn watchers(address: SocketAddr) -> std::collections::BTreeMap<String, Vec<String>> {
    let mut watchers = std::collections::BTreeMap::new();
    let Ok(answer) = four_letter_word(address, "wchp") else { return watchers };
    let mut current: Option<&mut Vec<String>> = None;
    for line in answer.lines() {
        match line.strip_prefix('\t') {
            Some(session) if !session.trim().is_empty() => {
                if let Some(sessions) = current.as_mut() {
                    sessions.push(session.trim().to_owned());
                }
            }
            Some(_) => {}
            None if line.starts_with('/') => current = Some(watchers.entry(line.to_owned()).or_default()),
            None => current = None,
        }
    }
    watchers
}
