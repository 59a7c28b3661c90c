//! Writing to stdout without panicking: a reader that went away (`zklock list | head -1`,
//! `zklock hold | true`) or a full disk (`> /dev/full`) is an outcome with an exit code, and a
//! holder then lets go as on any other way out.

use std::io::{ErrorKind, Write as _};
use std::os::fd::AsFd as _;

use nix::errno::Errno;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::stat::{fstat, SFlag};

use crate::output::exit::{Failure, Outcome};

/// Writes `text` and a newline to stdout, and flushes.
pub fn line(text: &str) -> Result<(), Failure> {
    bytes(format!("{text}\n").as_bytes())
}

/// Writes `bytes` to stdout, and flushes.
pub fn bytes(bytes: &[u8]) -> Result<(), Failure> {
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(bytes).and_then(|()| stdout.flush()).map_err(|err| match err.kind() {
        // The reader has all it wanted: no message, as a process killed by SIGPIPE says none.
        ErrorKind::BrokenPipe => Failure::quiet(Outcome::ReaderGone),
        _ => Failure::new(Outcome::CannotWrite, format!("cannot write to stdout: {err}")),
    })
}

/// Resolves when stdout is a pipe or a socket whose reader has gone away; never for a file or
/// a terminal (a terminal that goes sends SIGHUP).
pub async fn reader_gone() {
    let stream = fstat(std::io::stdout().as_fd()).is_ok_and(|stat| {
        let kind = SFlag::from_bits_truncate(stat.st_mode) & SFlag::S_IFMT;
        kind == SFlag::S_IFIFO || kind == SFlag::S_IFSOCK
    });
    if stream {
        // poll(2) reports an error or hang-up on a pipe or socket even when no event is asked
        // for; a blocking thread waits for it, as tokio cannot watch a write end for that alone.
        let gone = tokio::task::spawn_blocking(|| loop {
            let stdout = std::io::stdout();
            let mut fds = [PollFd::new(stdout.as_fd(), PollFlags::empty())];
            match poll(&mut fds, PollTimeout::NONE) {
                Ok(1..) => {
                    let gone = PollFlags::POLLERR | PollFlags::POLLHUP;
                    return fds[0].revents().is_some_and(|events| events.intersects(gone));
                }
                Ok(_) | Err(Errno::EINTR) => {}
                Err(_) => return false,
            }
        });
        if let Ok(true) = gone.await {
            return;
        }
    }
    std::future::pending().await
}
