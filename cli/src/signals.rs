//! The signals zklock catches from the start: while waiting each gives up the wait, while the
//! command runs each is passed on to its process group, once. A signal ignored when zklock
//! started (`nohup` ignores SIGHUP; `sh -c 'cmd &'` ignores SIGINT and SIGQUIT for its
//! background jobs) stays ignored, by zklock and, as exec keeps it, by the command: a handler
//! would undo what whoever started us chose.

use tokio::signal::unix::{signal, Signal, SignalKind};

use crate::output::exit::{Failure, Outcome};

/// The signals a user or a supervisor sends to stop or poke a command.
const CAUGHT: [libc::c_int; 6] =
    [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT, libc::SIGUSR1, libc::SIGUSR2];

pub struct Signals {
    streams: Vec<(libc::c_int, Signal)>,
}

/// Which of [`CAUGHT`] and SIGTSTP (caught while the command runs, `job.rs`) were ignored when
/// zklock started, read once, before any handler of ours.
static IGNORED_AT_START: std::sync::OnceLock<Vec<libc::c_int>> = std::sync::OnceLock::new();

/// Reads the signals ignored at start; `main` calls it first thing, before anything installs a
/// handler (later calls return what the first read).
pub fn ignored_at_start() -> &'static [libc::c_int] {
    IGNORED_AT_START
        .get_or_init(|| CAUGHT.iter().chain(&[libc::SIGTSTP]).copied().filter(|&number| ignored(number)).collect())
}

/// Whether `number`'s disposition is SIG_IGN now.
fn ignored(number: libc::c_int) -> bool {
    // SAFETY: sigaction with a null new action only reads the current one into a zeroed struct.
    unsafe {
        let mut current: libc::sigaction = std::mem::zeroed();
        libc::sigaction(number, std::ptr::null(), &mut current) == 0 && current.sa_sigaction == libc::SIG_IGN
    }
}

impl Signals {
    pub fn install() -> Result<Self, Failure> {
        let ignored = ignored_at_start();
        let streams = CAUGHT
            .iter()
            .filter(|number| !ignored.contains(number))
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
