//! How long an acquire may wait (its patience), and the loop that asks it again.

use std::future::Future;
use std::time::{Duration, Instant};

use crate::client::session_end::is_connected;
use crate::error::Result;

/// How long an acquire is willing to wait for other holders.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Patience {
    /// Until the lock is ours (or an error).
    Forever,
    /// Until this instant; everything, the create included, must be done by then.
    Until(Instant),
    /// Not at all: take the lock if it is free once our node is in the queue, else give up.
    NoWait,
}

impl Patience {
    /// The patience of an `acquire_timeout(timeout)`: none at all for zero (a try), forever
    /// past what an `Instant` can hold.
    pub(crate) fn within(timeout: Duration) -> Patience {
        match Instant::now().checked_add(timeout) {
            _ if timeout.is_zero() => Patience::NoWait,
            Some(deadline) => Patience::Until(deadline),
            None => Patience::Forever,
        }
    }

    /// What is left of it now: a deadline already passed is a try. A recipe that takes locks in
    /// turn (a semaphore's mutex, then its lease; a multi-lock's locks) gives each what is left,
    /// so the last ones are still tried once, as `acquire_timeout(0)` would.
    pub(crate) fn left(self) -> Patience {
        match self {
            Patience::Until(deadline) if deadline <= Instant::now() => Patience::NoWait,
            other => other,
        }
    }

    pub(crate) fn deadline(self) -> Option<Instant> {
        match self {
            Patience::Until(deadline) => Some(deadline),
            Patience::Forever | Patience::NoWait => None,
        }
    }
}

/// Runs `future` to completion, or until `deadline` (`None` when it passes first). A deadline
/// already passed is `None` without a poll: nothing is started that could only finish late
/// (tokio's timer, a millisecond coarse, would let a loopback request finish first).
pub(crate) async fn within<F: Future>(deadline: Option<Instant>, future: F) -> Option<F::Output> {
    match deadline {
        None => Some(future.await),
        Some(deadline) if deadline <= Instant::now() => None,
        Some(deadline) => tokio::time::timeout_at(deadline.into(), future).await.ok(),
    }
}

/// Runs `future` under `patience`, `None` when it runs out first: until its deadline, if any;
/// a try (`NoWait`), which waits for no other holder, waits for ZooKeeper only while `client` is
/// connected ([`while_connected`]). Give a large future by reference (`Pin<&mut F>`, pinned by
/// the caller, or boxed), as `turn.rs` does: this state would hold one given by value twice, and
/// every level above would copy it on every acquire.
pub(crate) async fn within_patience<F: Future>(
    patience: Patience,
    client: &zookeeper_client::Client,
    future: F,
) -> Option<F::Output> {
    match patience {
        Patience::NoWait => while_connected(client, future).await,
        other => within(other.deadline(), future).await,
    }
}

/// Runs `future` while `client` is connected: `None` at once while it is not, or as soon as it
/// finds it is not (a request made while disconnected would be held until a reconnection, a
/// whole outage, which a try must not wait for).
pub(crate) async fn while_connected<F: Future>(client: &zookeeper_client::Client, future: F) -> Option<F::Output> {
    let mut states = client.state_watcher();
    if !is_connected(states.peek_state()) {
        return None;
    }
    let disconnected = async { while is_connected(states.changed().await) {} };
    tokio::select! {
        biased;
        output = future => Some(output),
        () = disconnected => None,
    }
}

/// The deadline an acquire's cleanup is counted from ([`CLEANUP_AFTER_DEADLINE`]): a try's is
/// now, so that a try cut off from ZooKeeper does not wait out the outage to clean up.
pub(crate) fn cleanup_deadline(patience: Patience) -> Option<Instant> {
    match patience {
        Patience::NoWait => Some(Instant::now()),
        other => other.deadline(),
    }
}

/// How long a timed-out acquire may still spend deleting its node before it returns; past that
/// (ZooKeeper unreachable) the deletion goes on in the background.
pub(crate) const CLEANUP_AFTER_DEADLINE: Duration = Duration::from_millis(500);

/// Runs `attempt` under `patience` until it has an answer. `Ok(None)` from an attempt with
/// patience forever only means "ask again" (the owner's own acquire under way ended without a
/// hold); under any other patience it is the answer: out of time.
pub(crate) async fn acquire_patiently<T, F: Future<Output = Result<Option<T>>>>(
    patience: Patience,
    mut attempt: impl FnMut(Patience) -> F,
) -> Result<Option<T>> {
    loop {
        let outcome = attempt(patience).await?;
        if outcome.is_some() || patience != Patience::Forever {
            return Ok(outcome);
        }
    }
}

/// [`acquire_patiently`] forever: what every `acquire()` returns.
pub(crate) async fn acquire_forever<T, F: Future<Output = Result<Option<T>>>>(
    mut attempt: impl FnMut(Patience) -> F,
) -> Result<T> {
    loop {
        if let Some(held) = attempt(Patience::Forever).await? {
            return Ok(held);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_zero_timeout_is_a_try_and_a_huge_one_is_forever() {
        assert_eq!(Patience::within(Duration::ZERO), Patience::NoWait);
        assert_eq!(Patience::within(Duration::MAX), Patience::Forever);
        assert!(matches!(Patience::within(Duration::from_secs(1)), Patience::Until(_)));
    }

    #[test]
    fn a_deadline_passed_leaves_a_try() {
        let passed = Patience::Until(Instant::now() - Duration::from_millis(1));
        assert_eq!(passed.left(), Patience::NoWait);
        let ahead = Patience::Until(Instant::now() + Duration::from_secs(60));
        assert_eq!(ahead.left(), ahead);
        assert_eq!(Patience::Forever.left(), Patience::Forever);
    }

    #[tokio::test]
    async fn a_deadline_already_passed_starts_nothing() {
        let passed = Instant::now() - Duration::from_nanos(1);
        assert_eq!(within(Some(passed), async { unreachable!("polled past its deadline") }).await, None::<()>);
        assert_eq!(within(Some(Instant::now() + Duration::from_secs(60)), async { 7 }).await, Some(7));
        assert_eq!(within(None, async { 7 }).await, Some(7));
    }

    #[tokio::test]
    async fn only_patience_forever_asks_again() {
        let mut asked = 0;
        let held = acquire_forever(|_| {
            asked += 1;
            let answer = (asked == 3).then_some(asked);
            async move { Ok(answer) }
        })
        .await
        .unwrap();
        assert_eq!(held, 3);
        let mut asked = 0;
        let out_of_time = acquire_patiently(Patience::NoWait, |_| {
            asked += 1;
            async { Ok(None::<()>) }
        })
        .await
        .unwrap();
        assert_eq!((out_of_time, asked), (None, 1));
    }
}
