//! Writing to stdout without panicking: a reader that went away (`zklock list | head -1`,
//! `zklock hold | true`) or a full disk (`> /dev/full`) is an outcome with an exit code, and a
//! holder then lets go as on any other way out.

use std::io::{ErrorKind, Write as _};

use crate::exit::{Failure, Outcome};

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
    // SAFETY: fstat on our stdout into a zeroed stat buffer.
    let stream = unsafe {
        let mut stat: libc::stat = std::mem::zeroed();
        libc::fstat(libc::STDOUT_FILENO, &mut stat) == 0
            && matches!(stat.st_mode & libc::S_IFMT, libc::S_IFIFO | libc::S_IFSOCK)
    };
    if stream {
        // poll(2) reports an error or hang-up on a pipe or socket even when no event is asked
        // for; a blocking thread waits for it, as tokio cannot watch a write end for that alone.
        let gone = tokio::task::spawn_blocking(|| loop {
            let mut stdout = libc::pollfd { fd: libc::STDOUT_FILENO, events: 0, revents: 0 };
            // SAFETY: poll on one valid pollfd.
            let ready = unsafe { libc::poll(&mut stdout, 1, -1) };
            if ready > 0 {
                return stdout.revents & (libc::POLLERR | libc::POLLHUP) != 0;
            }
            if ready < 0 && std::io::Error::last_os_error().kind() != ErrorKind::Interrupted {
                return false;
            }
        });
        if let Ok(true) = gone.await {
            return;
        }
    }
    std::future::pending().await
}
