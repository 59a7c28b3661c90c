//! The signals zklock catches from the start: while waiting each gives up the wait, while the
//! command runs each is passed on to its process group, once.

use tokio::signal::unix::{signal, Signal, SignalKind};

use crate::exit::{Failure, Outcome};

/// The signals a user or a supervisor sends to stop or poke a command.
const CAUGHT: [libc::c_int; 6] =
    [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT, libc::SIGUSR1, libc::SIGUSR2];

pub struct Signals {
    streams: Vec<(libc::c_int, Signal)>,
}

impl Signals {
    pub fn install() -> Result<Self, Failure> {
        let streams = CAUGHT
            .iter()
            .map(|&number| {
                signal(SignalKind::from_raw(number))
                    .map(|stream| (number, stream))
                    .map_err(|err| Failure::new(Outcome::Failed, format!("cannot catch signals: {err}")))
            })
            .collect::<Result<_, _>>()?;
        Ok(Signals { streams })
    }

    /// The next caught signal.
    ///
    /// # Cancel safety
    /// Cancel safe: a signal not yet returned stays pending in its stream.
    pub async fn next(&mut self) -> libc::c_int {
        std::future::poll_fn(|cx| {
            for (number, stream) in &mut self.streams {
                if stream.poll_recv(cx).is_ready() {
                    return std::task::Poll::Ready(*number);
                }
            }
            std::task::Poll::Pending
        })
        .await
    }

    /// Waits for `wait`, unless a caught signal comes first: `Err(signal)` then, and `wait` is
    /// dropped. Every wait of zklock's goes through here or selects on [`next`](Self::next), so a
    /// supervisor's signal is answered at once even while ZooKeeper is out of reach.
    pub async fn until<T>(&mut self, wait: impl std::future::Future<Output = T>) -> Result<T, libc::c_int> {
        tokio::select! {
            done = wait => Ok(done),
            signal = self.next() => Err(signal),
        }
    }
}
