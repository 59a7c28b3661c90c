//! A stop asked for by a signal while the command runs: a supervisor's SIGTERM (systemd's
//! `KillMode=mixed` sends it to zklock alone), an operator's SIGINT. zklock passes it on to the
//! command's group, as every signal it catches, and gives the command `--kill-after` to end;
//! then, or at once on a second such signal, it kills the command's whole tree, releases and
//! closes its session. So a command that ignores the signal cannot keep zklock waiting until
//! the supervisor's SIGKILL, which would leave the node to the session timeout: the stop
//! releases in at most the grace, sooner when the command ends sooner.

use tokio::time::{Duration, Instant};

/// The signals that ask a job to end. SIGHUP, SIGUSR1 and SIGUSR2 are passed on with no grace
/// started: daemons read them as "reload" or "rotate", and systemd's ExecReload sends one to
/// the main process, zklock.
const TERMINATING: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGQUIT];

/// What zklock does with a signal it caught while the command runs.
#[derive(Debug, PartialEq, Eq)]
pub enum Step {
    /// Pass it on to the command's group.
    PassOn,
    /// A second terminating signal: the one who asked will not wait for the grace. Kill the
    /// command's tree now.
    KillNow,
}

/// The stop asked for so far, and when its grace runs out.
#[derive(Debug)]
pub struct Stop {
    grace: Duration,
    deadline: Option<Instant>,
}

impl Stop {
    /// No stop asked for yet; a command will get `grace` to end once one is.
    pub fn new(grace: Duration) -> Stop {
        Stop { grace, deadline: None }
    }

    /// What to do with `signal`, caught at `now`: the first terminating signal starts the grace.
    pub fn heard(&mut self, signal: libc::c_int, now: Instant) -> Step {
        if !TERMINATING.contains(&signal) {
            return Step::PassOn;
        }
        match self.deadline {
            Some(_) => Step::KillNow,
            None => {
                self.deadline = Some(now + self.grace);
                Step::PassOn
            }
        }
    }

    /// Resolves once the grace of a stop asked for has run out (never, if none was).
    ///
    /// # Cancel safety
    /// Cancel safe: the deadline stays where it is.
    pub async fn overdue(&self) {
        match self.deadline {
            Some(deadline) => tokio::time::sleep_until(deadline).await,
            None => std::future::pending().await,
        }
    }

    /// The grace, for messages.
    pub fn grace(&self) -> Duration {
        self.grace
    }

    /// What is left at `now` of the command's time to end: all of the grace while no stop was
    /// asked for. A loss in the middle of a stop's grace takes no more than that, so the stop
    /// still ends within the grace the supervisor was promised.
    pub fn grace_left(&self, now: Instant) -> Duration {
        self.deadline.map_or(self.grace, |deadline| deadline.saturating_duration_since(now))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_terminating_signal_starts_the_grace_and_a_second_ends_it() {
        let now = Instant::now();
        let mut stop = Stop::new(Duration::from_secs(10));
        assert_eq!(stop.heard(libc::SIGTERM, now), Step::PassOn);
        assert_eq!(stop.deadline, Some(now + Duration::from_secs(10)));
        assert_eq!(stop.heard(libc::SIGUSR1, now), Step::PassOn, "not a stop: passed on, the grace runs on");
        assert_eq!(stop.grace_left(now + Duration::from_secs(4)), Duration::from_secs(6));
        assert_eq!(stop.grace_left(now + Duration::from_secs(11)), Duration::ZERO);
        assert_eq!(stop.heard(libc::SIGINT, now), Step::KillNow);
    }

    #[test]
    fn a_reload_or_rotate_signal_starts_no_grace() {
        let mut stop = Stop::new(Duration::from_secs(10));
        for signal in [libc::SIGHUP, libc::SIGUSR1, libc::SIGUSR2, libc::SIGHUP] {
            assert_eq!(stop.heard(signal, Instant::now()), Step::PassOn);
        }
        assert_eq!(stop.deadline, None);
        assert_eq!(stop.grace_left(Instant::now()), Duration::from_secs(10), "all of it, before a stop");
        assert_eq!(stop.heard(libc::SIGQUIT, Instant::now()), Step::PassOn, "the first stop");
    }
}
