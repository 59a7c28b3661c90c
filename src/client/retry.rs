//! Retrying what is transient while the session lives, paced and bounded by a `RetryPolicy`.
//!
//! Two kinds of failure are worth another try:
//! - Connection loss. zookeeper-client re-sends watches after a reconnect but fails requests that
//!   were in flight with the error that broke the connection: `ConnectionLoss` for a closed
//!   connection, a custom error for an I/O failure or a read timeout ("no response from
//!   connection in ..."). Either way the request's outcome is unknown.
//! - `Throttled` (ZooKeeper 3.6+ with request throttling on): the server refused the request
//!   without running it, so its outcome is known: nothing happened.
//!
//! A request made while disconnected waits in the client until it reconnects, or fails with
//! `SessionExpired` once the client gives the session up, so retrying cannot spin and cannot
//! outlive the session. How long each retry waits, and when a request gives up, is the
//! session's [`RetryPolicy`]: a value the user sets once on a [`Session`](crate::Session), which
//! also paces the tries to connect a new session after an expiry. Which requests honour its
//! bound, and why the others never give up, is said on [`RetryPolicy`].

use std::future::Future;
use std::time::{Duration, Instant};

use zookeeper_client::Error as ZkError;

use crate::error::{Error, Result};

/// Calls `operation` again after each transient failure (see [`is_transient`]), pausing as
/// `policy` says; returns any other outcome, or the last transient failure once the policy's
/// bound is spent (pass [`RetryPolicy::without_bound`] for what must never give up).
pub(crate) async fn retry_transient<T, F, Fut>(policy: RetryPolicy, mut operation: F) -> Result<T, ZkError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, ZkError>>,
{
    let mut retries = Retries::new(policy);
    loop {
        match operation().await {
            Err(err) if is_transient(&err) && retries.pause().await => {}
            outcome => return outcome,
        }
    }
}

/// Whether a request failed in a way that another try may cure: its connection broke, or the
/// server refused it unrun (`Throttled`).
pub(crate) fn is_transient(err: &ZkError) -> bool {
    is_connection_loss(err) || *err == ZkError::Throttled
}

/// Whether a request failed because its connection broke, so that its outcome is unknown (it
/// may have run), rather than by the server's answer.
pub(crate) fn is_connection_loss(err: &ZkError) -> bool {
    matches!(err, ZkError::ConnectionLoss | ZkError::Custom(_))
}

/// How the most a pause may last grows with the failures before it; the pause itself is a
/// random share of that ceiling ("full jitter"), so that the participants one outage failed
/// together do not come back in step.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use zklock::session::Backoff;
///
/// // 10 ms, 20 ms, 40 ms, ... up to 1 s: the ceilings, each pause a random share of its own.
/// let backoff = Backoff::exponential(Duration::from_millis(10), Duration::from_secs(1));
/// assert_eq!(backoff.ceiling(3), Duration::from_millis(40));
/// assert_eq!(backoff.ceiling(30), Duration::from_secs(1));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Backoff {
    growth: Growth,
    first: Duration,
    cap: Duration,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Growth {
    /// The ceiling grows by `first` a failure.
    Linear,
    /// The ceiling doubles at each failure.
    Exponential,
}

impl Backoff {
    /// The longest ceiling a back-off takes: a pause past it is a mistake (a unit read wrong),
    /// and would leave a lock's waiters idle long after the fault healed.
    pub const MAX_CAP: Duration = Duration::from_secs(600);

    /// Ceilings of `step`, `2 × step`, `3 × step`, ... up to `cap`. Checked when it is set.
    pub const fn linear(step: Duration, cap: Duration) -> Self {
        Backoff { growth: Growth::Linear, first: step, cap }
    }

    /// Ceilings of `base`, `2 × base`, `4 × base`, ... up to `cap`, as Curator's
    /// `ExponentialBackoffRetry` (with full jitter below each, and no bound of its own: that is
    /// the policy's). Checked when it is set.
    pub const fn exponential(base: Duration, cap: Duration) -> Self {
        Backoff { growth: Growth::Exponential, first: base, cap }
    }

    /// The most the pause after the `failures`-th failure in a row may last (the first failure
    /// counts as 1).
    pub fn ceiling(&self, failures: u32) -> Duration {
        let failures = failures.max(1);
        let grown = match self.growth {
            Growth::Linear => self.first.checked_mul(failures),
            Growth::Exponential => 2u32.checked_pow(failures - 1).and_then(|factor| self.first.checked_mul(factor)),
        };
        grown.map_or(self.cap, |grown| grown.min(self.cap))
    }

    /// The pause after the `failures`-th failure for a `random` draw in `[0, 1)`.
    pub(crate) fn pause(&self, failures: u32, random: f64) -> Duration {
        self.ceiling(failures).mul_f64(random.clamp(0.0, 1.0))
    }

    fn validate(&self) -> Result<()> {
        if self.first.is_zero() {
            return Err(Error::InvalidOptions("a back-off needs a first pause above zero"));
        }
        if self.cap < self.first || self.cap > Self::MAX_CAP {
            return Err(Error::InvalidOptions("a back-off's cap must be from its first pause to 10 minutes"));
        }
        Ok(())
    }
}

/// How zklock retries a request that failed in a way another try may cure (its connection broke,
/// or the server refused it unrun with `Throttled`), and how a [`Session`](crate::Session)
/// paces its tries to connect a new session after an expiry. Set once with
/// [`SessionBuilder::retry_policy`](crate::session::SessionBuilder::retry_policy); every recipe
/// built on that session follows it. A recipe built on a plain [`Client`](crate::Client) follows
/// the default (wrap the client with
/// [`SessionBuilder::from_client`](crate::session::SessionBuilder::from_client) to give it
/// another).
///
/// Defaults to what zklock always did: requests retried until the session ends, the pause before
/// each a random share of a ceiling that grows 5 ms a failure up to 100 ms
/// ([`DEFAULT_BACKOFF`](Self::DEFAULT_BACKOFF)); reconnects after an expiry paced 100 ms,
/// 200 ms, ... up to 5 s ([`DEFAULT_RECONNECT_BACKOFF`](Self::DEFAULT_RECONNECT_BACKOFF)), until
/// a new session connects or the `Session` is dropped.
///
/// # What honours a bound
/// A bound ([`max_retries`](Self::max_retries), [`max_elapsed`](Self::max_elapsed)) counts each
/// request on its own, from its first try; it is checked after each failure (a request waiting
/// for its connection to come back is not cut short: an acquire's timeout bounds the whole
/// wait). These requests honour it, because giving up leaves nothing behind:
/// - every request of an acquire until it holds (the create, the listings, the watch on the
///   node ahead, finding our node again after a lost reply): the acquire fails with
///   [`Error::ZooKeeper`] whose source is the last transient error (`Throttled`,
///   `ConnectionLoss`), and its cleanup deletes whatever it may have created;
/// - one-off reads: `participants()`, [`find_deadlocks`](crate::deadlock::find_deadlocks), and
///   [`revoke`](crate::revoke)'s write: they fail with the same error.
///
/// These take only the pacing, and never give up while the session lives:
/// - deleting a node of ours: a release, a guard's drop, the cleanup of an acquire that timed
///   out, failed or was dropped, a maximum hold time's end. A delete that gave up would leave
///   a node that keeps every other participant out until our session ends;
/// - the watch on a held node, which tells the holder its node was deleted: a watch that gave up
///   would leave the holder blind to its loss;
/// - what follows for as long as it is kept: a [`LeaderView`](crate::election::LeaderView), a
///   watched acquire's queue position (a courtesy that never fails the acquire);
/// - connecting a new session after an expiry: a `Session` that gave up would leave every recipe
///   on it waiting for ever; drop the `Session` to stop it.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use std::time::Duration;
/// use zklock::Session;
/// use zklock::session::{Backoff, RetryPolicy};
///
/// // Exponential back-off from 10 ms to 1 s, and an acquire's request gives up after 5 retries.
/// let policy = RetryPolicy::new()
///     .with_backoff(Backoff::exponential(Duration::from_millis(10), Duration::from_secs(1)))
///     .with_max_retries(5);
/// assert_eq!(policy.max_retries(), Some(5));
///
/// // Checked when it is set: a back-off that never pauses would hammer a throttling server.
/// let spinning = RetryPolicy::new().with_backoff(Backoff::linear(Duration::ZERO, Duration::ZERO));
/// let refused = Session::builder().retry_policy(spinning).connect_to("127.0.0.1:2181").await;
/// assert!(matches!(refused, Err(zklock::Error::InvalidOptions(_))));
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RetryPolicy {
    backoff: Backoff,
    reconnect_backoff: Backoff,
    max_retries: Option<u32>,
    max_elapsed: Option<Duration>,
}

impl RetryPolicy {
    /// The default pacing of retried requests: ceilings of 5 ms, 10 ms, ... up to 100 ms. Room
    /// for a throttling server, and a spread for the participants one outage failed together,
    /// while a request that failed for a moment does not wait long.
    pub const DEFAULT_BACKOFF: Backoff = Backoff::linear(Duration::from_millis(5), Duration::from_millis(100));

    /// The default pacing of tries to connect a new session after an expiry: ceilings of
    /// 100 ms, 200 ms, ... up to 5 s, so that the services one outage expired do not reconnect
    /// in step, nor hammer an ensemble that is down.
    pub const DEFAULT_RECONNECT_BACKOFF: Backoff =
        Backoff::exponential(Duration::from_millis(100), Duration::from_secs(5));

    /// The default policy: see [`RetryPolicy`].
    pub const fn new() -> Self {
        RetryPolicy {
            backoff: Self::DEFAULT_BACKOFF,
            reconnect_backoff: Self::DEFAULT_RECONNECT_BACKOFF,
            max_retries: None,
            max_elapsed: None,
        }
    }

    /// Paces retried requests with `backoff`.
    pub const fn with_backoff(self, backoff: Backoff) -> Self {
        RetryPolicy { backoff, ..self }
    }

    /// Paces the tries to connect a new session after an expiry with `backoff`.
    pub const fn with_reconnect_backoff(self, backoff: Backoff) -> Self {
        RetryPolicy { reconnect_backoff: backoff, ..self }
    }

    /// A request that may give up (see [What honours a bound](Self#what-honours-a-bound)) does
    /// after `retries` retries (0: at its first transient failure).
    pub const fn with_max_retries(self, retries: u32) -> Self {
        RetryPolicy { max_retries: Some(retries), ..self }
    }

    /// A request that may give up (see [What honours a bound](Self#what-honours-a-bound)) does
    /// at the first failure once `elapsed` has passed since its first try; a pause never takes
    /// it past that. Above zero, checked when it is set.
    pub const fn with_max_elapsed(self, elapsed: Duration) -> Self {
        RetryPolicy { max_elapsed: Some(elapsed), ..self }
    }

    /// How retried requests are paced.
    pub fn backoff(&self) -> Backoff {
        self.backoff
    }

    /// How tries to connect a new session after an expiry are paced.
    pub fn reconnect_backoff(&self) -> Backoff {
        self.reconnect_backoff
    }

    /// After how many retries a request that may give up does; `None`: never.
    pub fn max_retries(&self) -> Option<u32> {
        self.max_retries
    }

    /// How long after its first try a request that may give up does; `None`: never.
    pub fn max_elapsed(&self) -> Option<Duration> {
        self.max_elapsed
    }

    /// This policy's pacing with no bound: for what must never give up.
    pub(crate) fn without_bound(self) -> Self {
        RetryPolicy { max_retries: None, max_elapsed: None, ..self }
    }

    /// The policy of the requests about a node of ours (its delete, its watch): paced by
    /// `pacing`, never giving up. What is moved or queued per node keeps its pacing alone (40
    /// bytes, where the policy is 104), and this makes the policy again: node requests use
    /// neither a bound nor the reconnection pacing.
    pub(crate) fn never_giving_up(pacing: Backoff) -> Self {
        RetryPolicy::new().with_backoff(pacing)
    }

    pub(crate) fn validate(&self) -> Result<()> {
        self.backoff.validate()?;
        self.reconnect_backoff.validate()?;
        if self.max_elapsed.is_some_and(|elapsed| elapsed.is_zero()) {
            return Err(Error::InvalidOptions("a retry policy's max elapsed time must be above zero"));
        }
        Ok(())
    }
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy::new()
    }
}

/// One request's retries under a policy: how many failures so far and since when, and so how
/// long to pause before the next try, or that the policy's bound is spent.
#[derive(Debug)]
pub(crate) struct Retries {
    policy: RetryPolicy,
    failures: u32,
    /// When the first try was sent, read only under a policy bounded in time: every acquire's
    /// create and every release's delete start one, and most are never retried.
    started: Option<Instant>,
}

impl Retries {
    /// The retries of a request whose first try is being sent now.
    pub(crate) fn new(policy: RetryPolicy) -> Self {
        Retries { policy, failures: 0, started: policy.max_elapsed.map(|_| Instant::now()) }
    }

    /// Counts a transient failure and returns the pause before the next try for a `random` draw
    /// in `[0, 1)`; `None` once the policy's bound is spent (give up).
    fn next_pause(&mut self, random: f64, now: Instant) -> Option<Duration> {
        if self.policy.max_retries.is_some_and(|most| self.failures >= most) {
            return None;
        }
        self.failures = self.failures.saturating_add(1);
        let pause = self.policy.backoff.pause(self.failures, random);
        match self.policy.max_elapsed {
            None => Some(pause),
            Some(most) => {
                let started = self.started.unwrap_or(now);
                let left = most.checked_sub(now.saturating_duration_since(started)).filter(|left| !left.is_zero())?;
                Some(pause.min(left))
            }
        }
    }

    /// Counts a transient failure; the pause before the next try, or `None` once the bound is
    /// spent.
    pub(crate) fn failed(&mut self) -> Option<Duration> {
        self.next_pause(fastrand::f64(), Instant::now())
    }

    /// Counts a transient failure and pauses before the next try; `false` (at once) once the
    /// bound is spent.
    pub(crate) async fn pause(&mut self) -> bool {
        match self.failed() {
            Some(pause) => {
                tokio::time::sleep(pause).await;
                true
            }
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn the_default_pauses_a_random_share_of_a_ceiling_that_grows_5_ms_a_failure_to_100_ms() {
        let backoff = RetryPolicy::default().backoff();
        assert_eq!(backoff.pause(1, 0.0), Duration::ZERO);
        assert_eq!(backoff.pause(1, 0.5), Duration::from_micros(2500));
        assert_eq!(backoff.pause(4, 0.5), 10 * MS);
        assert_eq!(backoff.pause(1_000, 0.999_999), (100 * MS).mul_f64(0.999_999));
        assert!((0..100).all(|failures| backoff.pause(failures, 1.0) <= 100 * MS));
        assert_eq!(RetryPolicy::default().reconnect_backoff().ceiling(3), 400 * MS);
        assert_eq!(RetryPolicy::default().reconnect_backoff().ceiling(10), 5_000 * MS);
    }

    #[test]
    fn an_exponential_ceiling_doubles_to_its_cap_without_overflow() {
        let backoff = Backoff::exponential(10 * MS, 1_000 * MS);
        let ceilings: Vec<_> = (1..=8).map(|failures| backoff.ceiling(failures)).collect();
        assert_eq!(ceilings, [10, 20, 40, 80, 160, 320, 640, 1_000].map(|ms| ms * MS));
        assert_eq!(backoff.ceiling(u32::MAX), 1_000 * MS);
        assert_eq!(Backoff::linear(MS, Backoff::MAX_CAP).ceiling(u32::MAX), Backoff::MAX_CAP);
    }

    #[test]
    fn jitter_stays_within_zero_and_the_ceiling() {
        let backoff = Backoff::exponential(3 * MS, 70 * MS);
        for failures in 1..40 {
            for random in [-1.0, 0.0, 0.25, 0.999_999, 1.0, 7.0] {
                let pause = backoff.pause(failures, random);
                assert!(pause <= backoff.ceiling(failures), "{failures} {random}: {pause:?}");
            }
        }
    }

    #[test]
    fn max_retries_allows_that_many_retries_and_the_default_never_stops() {
        let now = Instant::now();
        let mut bounded = Retries::new(RetryPolicy::new().with_max_retries(3));
        assert_eq!(
            (0..5).map(|_| bounded.next_pause(0.5, now).is_some()).collect::<Vec<_>>(),
            [true, true, true, false, false]
        );
        let mut none = Retries::new(RetryPolicy::new().with_max_retries(0));
        assert_eq!(none.next_pause(0.5, now), None);
        let mut forever = Retries::new(RetryPolicy::new());
        assert!((0..10_000).all(|_| forever.next_pause(0.5, now).is_some()));
    }

    #[test]
    fn max_elapsed_gives_up_once_spent_and_no_pause_outlasts_it() {
        let policy = RetryPolicy::new().with_backoff(Backoff::linear(40 * MS, 40 * MS)).with_max_elapsed(100 * MS);
        let mut retries = Retries::new(policy);
        let start = retries.started.expect("a policy bounded in time reads the clock");
        assert_eq!(retries.next_pause(1.0, start), Some(40 * MS));
        assert_eq!(retries.next_pause(1.0, start + 90 * MS), Some(10 * MS));
        assert_eq!(retries.next_pause(1.0, start + 100 * MS), None);
        assert_eq!(Retries::new(policy.without_bound()).next_pause(1.0, start + 3_600_000 * MS), Some(40 * MS));
    }

    #[test]
    fn a_policy_that_would_spin_or_stall_is_refused() {
        let refused = [
            RetryPolicy::new().with_backoff(Backoff::linear(Duration::ZERO, 100 * MS)),
            RetryPolicy::new().with_backoff(Backoff::exponential(10 * MS, 5 * MS)),
            RetryPolicy::new().with_reconnect_backoff(Backoff::exponential(MS, Backoff::MAX_CAP + MS)),
            RetryPolicy::new().with_max_elapsed(Duration::ZERO),
        ];
        for policy in refused {
            assert!(matches!(policy.validate(), Err(Error::InvalidOptions(_))), "{policy:?}");
        }
        assert!(RetryPolicy::new().validate().is_ok());
        assert!(RetryPolicy::new().with_max_retries(0).with_max_elapsed(MS).validate().is_ok());
    }

    #[test]
    fn throttled_and_lost_requests_are_transient_and_only_lost_ones_may_have_run() {
        assert!(is_transient(&ZkError::Throttled) && !is_connection_loss(&ZkError::Throttled));
        assert!(is_transient(&ZkError::ConnectionLoss) && is_connection_loss(&ZkError::ConnectionLoss));
        for answer in [ZkError::NoNode, ZkError::NoAuth, ZkError::SessionExpired, ZkError::NodeExists] {
            assert!(!is_transient(&answer), "{answer:?}");
        }
    }
}
