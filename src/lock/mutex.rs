//! `InterProcessMutex`, and how it acquires: admit, plan, take a place, grant.
//!
//! A reentrant lock shared by processes through ZooKeeper (`mutex_builder.rs` makes it).

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use zookeeper_client::Client;

use crate::client::deadline::{acquire_forever, acquire_patiently, within, Patience};
use crate::client::session::Connection;
use crate::error::{Error, Result};
use crate::hold::hold_trait::run_acquired;
use crate::hold::while_held::RunEnd;
use crate::lock::cohort::{fencing_token, Cohort, Turn};
use crate::lock::guard::LockGuard;
use crate::lock::owner::Owner;
use crate::lock::plan::Plan;
use crate::lock::state::{Admission, Claim, LockState};
use crate::observe::label::LockLabel;
use crate::queue::delete::delete_in_background;
use crate::queue::listing::{queue_order, queue_with_data};
use crate::queue::node::PlaceReport;
use crate::queue::queue_node::QueueNode;
use crate::queue::turn::take_place;
use crate::rules::entry::Role;

/// A reentrant mutex shared by every process that uses the same ZooKeeper path, in the style of
/// Apache Curator's `InterProcessMutex`, and wire-compatible with it.
///
/// Each participant puts an ephemeral sequential node `_c_{uuid}-lock-{seq}` under the lock
/// path (created as container nodes when missing); the lowest sequence holds the lock, and each
/// waiter watches only the node just before its own, so a release wakes exactly one waiter. The
/// lock is **fair** (first come, first served) and needs no timeouts to recover from crashes:
/// the node of a dead process vanishes with its session.
///
/// - **Reentrant** per owner: the tokio task that acquires (or the thread, outside a task). The
///   same task may acquire again without a round trip; each acquire returns a guard, and the
///   lock is released when the owner's last guard is dropped or released. Another task of the
///   same process waits like any other participant. The owner is the task, not the future:
///   two futures of one task (`join!`, `select!`) share one hold, so they are not excluded
///   from each other. Build with [`MutexBuilder::reentrant`](crate::MutexBuilder::reentrant)`(false)` for tokio's semantics
///   (each acquire on its own; a task that acquires twice waits for itself).
/// - **One participant per `new`**: two mutexes made with [`new`](Self::new) on one path contend
///   with each other, even on one client; clones of one mutex are the same participant.
/// - **Round trips**: an uncontended acquire costs one (the create and the first listing are
///   sent together; right after our own release, the create alone), a release one, a reentrant
///   acquire none. The next in line takes the lock on the holder's release without listing
///   again (a read of its own node, sent once the holder's node is gone, proves its node is
///   still there); a participant that held with others queued behind it queues again watching the
///   last of them instead of listing (DESIGN.md, "Round trips").
/// - **No ghost holders**: a waiter whose node someone else deletes (an operator "unsticking"
///   the lock) never holds on it: it queues again at the back with a new node, within the
///   acquire's patience, as Curator does.
/// - **Cancel safe**: dropping an acquire future at any point leaves no node behind.
///
/// # Examples
///
/// ```no_run
/// use std::time::Duration;
/// use zklock::InterProcessMutex;
/// use zklock::hold::Hold;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let client = zklock::Client::connect("127.0.0.1:2181").await?;
/// let mutex = InterProcessMutex::new(&client, "/app/locks/nightly-report")?;
/// match mutex.acquire_timeout(Duration::from_secs(5)).await? {
///     Some(guard) => {
///         // Only one process in the cluster runs this at a time.
///         println!("holding {} with fencing token {}", guard.node_path(), guard.fencing_token());
///         guard.release().await?;
///     }
///     None => println!("someone else is running the report"),
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct InterProcessMutex {
    pub(crate) state: Arc<LockState>,
}

impl InterProcessMutex {
    /// Acquires the mutex, waiting as long as it takes.
    ///
    /// Re-entering from the owner that holds it returns a new guard at once, with no round trip
    /// (but an error if the client already knows that its session has ended).
    ///
    /// # Errors
    /// - [`Error::SessionExpired`] / [`Error::SessionClosed`]: the session ended (before or while
    ///   waiting); returned promptly. Built on a [`Session`](crate::Session), an expiry is no
    ///   error: the acquire queues again on the new session, within its patience;
    /// - [`Error::LockLost`]: a reentrant acquire by an owner whose hold is lost (drop its guards
    ///   first);
    /// - [`Error::Deadlock`]: built with
    ///   [`fail_on_deadlock`](crate::MutexBuilder::fail_on_deadlock), the wait was the victim of
    ///   a ring of tasks (or sessions) waiting on each other; its node is gone;
    /// - [`Error::ZooKeeper`]: ZooKeeper refused an operation (for example `NoAuth`).
    ///
    /// Connection loss is not an error: every step is retried while the session lives.
    ///
    /// # Cancel safety
    /// Cancel safe: dropping the future at any await point leaves no node behind. If our node was
    /// created, a spawned task deletes it within a moment (it finds the node by its protected
    /// prefix when the create's reply had not arrived yet).
    pub async fn acquire(&self) -> Result<LockGuard> {
        self.acquire_reporting(None).await
    }

    /// [`acquire`](Self::acquire), telling `place` where each node it puts in the queue is.
    pub(crate) async fn acquire_reporting(&self, place: Option<&PlaceReport>) -> Result<LockGuard> {
        acquire_forever(|patience| self.acquire_with(patience, place)).await
    }

    /// Acquires within `patience` (what is left of it: a deadline passed is a try): how the
    /// recipes built on mutexes take theirs.
    pub(crate) async fn acquire_within(&self, patience: Patience) -> Result<Option<LockGuard>> {
        acquire_patiently(patience.left(), |patience| self.acquire_with(patience, None)).await
    }

    /// Acquires the mutex, giving up after `timeout`: `Ok(None)` when time ran out.
    ///
    /// The deadline covers everything, the create included; when it passes, our node is deleted
    /// before this returns. A zero timeout behaves as [`try_acquire`](Self::try_acquire).
    ///
    /// # Errors
    /// As [`acquire`](Self::acquire).
    ///
    /// # Cancel safety
    /// Cancel safe, as [`acquire`](Self::acquire).
    pub async fn acquire_timeout(&self, timeout: Duration) -> Result<Option<LockGuard>> {
        self.acquire_with(Patience::within(timeout), None).await
    }

    /// Acquires within `timeout`, runs `work` while the lock is held, then releases it: the
    /// `select!` on [`lost`](crate::hold::Hold::lost) every holder would write, said once. The work is
    /// dropped the moment the hold is lost, and the outcome says which came first:
    /// [`RunEnd::Done`] with the work's output, [`RunEnd::Lost`] with the reason, or
    /// [`RunEnd::TimedOut`] when the lock was not acquired in time (the work never started).
    /// The guard is then dropped, which releases it in the background.
    ///
    /// `work` is an async closure, `async |guard| …`, given the guard (for its
    /// [fencing token](crate::hold::Hold::fencing_token) and [fenced writes](crate::hold::Hold::multi_writer));
    /// it may borrow the guard and the caller's locals alike. Reentrancy is as for
    /// [`acquire`](Self::acquire): the work's task may acquire the same lock again.
    ///
    /// # Errors
    /// As [`acquire`](Self::acquire); the work's own errors are its output's.
    ///
    /// # Cancel safety
    /// Cancel safe: dropped while acquiring, as [`acquire`](Self::acquire); dropped while the
    /// work runs, the work is dropped and the lock released in the background.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// use zklock::hold::{Hold, RunEnd};
    /// use zklock::InterProcessMutex;
    /// # async fn import(_token: i64) -> std::io::Result<u32> { Ok(0) }
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let client = zklock::Client::connect("127.0.0.1:2181").await?;
    /// let mutex = InterProcessMutex::new(&client, "/app/locks/import")?;
    /// let ran = mutex
    ///     .run_while_held(Duration::from_secs(5), async |guard| import(guard.fencing_token()).await)
    ///     .await?;
    /// match ran {
    ///     RunEnd::Done(imported) => println!("imported {} rows", imported?),
    ///     RunEnd::Lost(reason) => eprintln!("lost the lock ({reason}): the import stopped"),
    ///     RunEnd::TimedOut => eprintln!("another import is running"),
    ///     end => eprintln!("stopped: {end:?}"),
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub async fn run_while_held<T, F>(&self, timeout: Duration, work: F) -> Result<RunEnd<T>>
    where
        F: AsyncFnOnce(&LockGuard) -> T,
    {
        run_acquired(self.acquire_timeout(timeout).await, work).await
    }

    /// Acquires the mutex only if it is free: `Ok(None)` when another participant holds it or
    /// queues ahead of us. Never waits for another holder; it does wait for ZooKeeper to answer
    /// (one round trip, two when our node must be deleted again). Built on a
    /// [`Session`](crate::Session) whose session has expired, it does not wait for the new
    /// one: `Ok(None)` until it is connected.
    ///
    /// # Errors
    /// As [`acquire`](Self::acquire).
    ///
    /// # Cancel safety
    /// Cancel safe, as [`acquire`](Self::acquire).
    pub async fn try_acquire(&self) -> Result<Option<LockGuard>> {
        self.acquire_with(Patience::NoWait, None).await
    }

    /// The lock path.
    pub fn path(&self) -> &str {
        &self.state.path
    }

    pub(crate) fn client(&self) -> Client {
        self.state.connection.client()
    }

    /// What the mutex is built on.
    pub(crate) fn connection(&self) -> &Connection {
        &self.state.connection
    }

    /// Names this lock in events and metrics.
    pub(crate) fn label(&self) -> &LockLabel {
        &self.state.label
    }

    /// Whether the current task (or thread, outside a task) holds this mutex. Curator's
    /// `isOwnedByCurrentThread`.
    pub fn is_acquired_by_current_task(&self) -> bool {
        self.state.is_held_by(Owner::current())
    }

    /// Whether any task or thread of this process holds this mutex (this participant and its
    /// clones). Curator's `isAcquiredInThisProcess`.
    pub fn is_acquired_in_this_process(&self) -> bool {
        self.state.is_held_by_anyone()
    }

    /// The full paths of every participant's node, in queue order: the holder first, then the
    /// waiters in the order they will get the lock. Empty when the lock path does not exist.
    ///
    /// # Errors
    /// [`Error::SessionExpired`], [`Error::SessionClosed`] or [`Error::ZooKeeper`] (for example
    /// `NoAuth`).
    ///
    /// # Cancel safety
    /// Cancel safe: it only reads.
    pub async fn participants(&self) -> Result<Vec<String>> {
        queue_order(
            &self.state.connection.client(),
            self.state.connection.retry_policy(),
            self.path(),
            self.state.schema,
        )
        .await
    }

    /// Like [`participants`](Self::participants), with each node's data (read in one request).
    ///
    /// # Errors
    /// As [`participants`](Self::participants).
    ///
    /// # Cancel safety
    /// Cancel safe: it only reads.
    pub async fn participants_with_data(&self) -> Result<Vec<QueueNode>> {
        queue_with_data(
            &self.state.connection.client(),
            self.state.connection.retry_policy(),
            self.path(),
            self.state.schema,
        )
        .await
    }

    async fn acquire_with(&self, patience: Patience, place: Option<&PlaceReport>) -> Result<Option<LockGuard>> {
        // A re-entry needs no attempt: taken here, before one is built and boxed, unless the
        // client knows its session ended (the whole path says what becomes of that acquire).
        let owner = self.state.owner_now();
        let session_lives = || self.state.connection.session_ended().is_none();
        match self.state.reenter(owner, session_lives) {
            Some(Ok(hold)) => return Ok(Some(LockGuard::new(self.state.clone(), owner, hold))),
            Some(Err(reason)) => return Err(Error::LockLost(reason)),
            None => {}
        }
        let attempt = Attempt { owner, patience, place, started: Instant::now() };
        // Boxed: the attempt's state machine is kilobytes (tens in a debug build), and every
        // future that awaits it (the caller's, a select's, a debug build's copies of each) would
        // carry it on the stack; the CLI's main thread overflowed 8 MiB with a semaphore before.
        // Boxed inside the events' wrapper, not around it: the wrapper and its span then move a
        // pointer, where each moved the whole state on every acquire.
        self.state.label.acquiring(attempt.started, || Box::pin(self.acquire_on_live_sessions(attempt))).await
    }

    /// Acquires on the session now (on a `Session`, the next one once an expiry's reconnection
    /// is through), and on a `Session` again on the next one when an expiry lands while an
    /// attempt is under way, all within the one `patience` (a try has none left for it).
    async fn acquire_on_live_sessions(&self, attempt: Attempt<'_>) -> Result<Option<LockGuard>> {
        let connection = &self.state.connection;
        loop {
            let Some(client) = connection.usable_client(attempt.patience).await? else { return Ok(None) };
            let outcome = self.acquire_once(&client, attempt).await;
            if !connection.rides_over(&outcome) {
                return outcome;
            }
            if attempt.patience == Patience::NoWait {
                return Ok(None);
            }
        }
    }

    /// One attempt on `client`'s session: the owner is admitted (a re-entry ends it), the plan
    /// says how it enters the queue, it takes its place there and is granted the hold. With
    /// local handoff the place is taken through the process's line instead (one seam,
    /// [`acquire_in_line`](Self::acquire_in_line)).
    async fn acquire_once(&self, client: &Arc<Client>, attempt: Attempt<'_>) -> Result<Option<LockGuard>> {
        let (state, owner, patience) = (&self.state, attempt.owner, attempt.patience);
        let claim = match self.admit(owner, patience).await? {
            Arrival::Queue(claim) => claim,
            Arrival::Reentered(guard) => return Ok(Some(guard)),
            Arrival::OutOfTime => return Ok(None),
        };
        let plan = Plan::new(state, owner)?;
        let Some(cohort) = &state.cohort else {
            let spec = plan.spec(state, client, attempt.place);
            let Some((node, next_opening)) = plan.placed(take_place(&spec, patience).await)? else {
                return Ok(None);
            };
            let fencing_token = node.czxid;
            let hold = claim.grant(client, node, next_opening, fencing_token, attempt.started);
            return Ok(Some(LockGuard::new(Arc::clone(state), owner, hold)));
        };
        // Boxed: local handoff is an opt-in, and its state machine would otherwise be part of
        // every plain acquire's, allocated and moved on every acquire.
        Box::pin(self.acquire_in_line(cohort, client, claim, &plan, attempt)).await
    }

    /// An attempt of a mutex built with local handoff: the owner takes its turn in this
    /// process's line (`cohort.rs`), and is either passed the hold a task of ours lets go, or
    /// takes its place in ZooKeeper's queue as the line's one task there.
    async fn acquire_in_line(
        &self,
        cohort: &Arc<Cohort>,
        client: &Arc<Client>,
        claim: Claim,
        plan: &Plan,
        attempt: Attempt<'_>,
    ) -> Result<Option<LockGuard>> {
        let (state, owner, patience) = (&self.state, claim.owner(), attempt.patience);
        let turn = match cohort.take_turn(client, patience).await? {
            None => return Ok(None),
            Some(Turn::Hold(handoff)) => {
                state.label.handed_over(handoff.node.path(), handoff.fencing_token, attempt.started);
                return Ok(Some(LockGuard::new(Arc::clone(state), owner, claim.take_handoff(handoff))));
            }
            Some(Turn::Queue(turn)) => turn,
        };
        let spec = plan.spec(state, client, attempt.place);
        let Some((node, next_opening)) = plan.placed(take_place(&spec, patience).await)? else { return Ok(None) };
        let Some(fencing_token) = fencing_token(node.czxid, 0) else {
            delete_in_background(client, node.retry(), node.path.into());
            return Err(Error::InvalidOptions("local handoff: the lock node's czxid is past 2^55"));
        };
        let hold = claim.grant(client, node, next_opening, fencing_token, attempt.started);
        turn.hold(&hold.node);
        Ok(Some(LockGuard::new(Arc::clone(state), owner, hold)))
    }

    /// Where this lock stands in a multi-lock's canonical order: by path, and on one path the
    /// write side before the read side (a downgrade, never an upgrade).
    pub(crate) fn acquisition_order(&self) -> (&str, u8) {
        let side = match self.state.role {
            Role::Write => 0,
            Role::Mutex => 1,
            Role::Read => 2,
        };
        (self.path(), side)
    }

    /// Lets `owner` in: re-enters its hold at once, or claims its place in the queue, first
    /// waiting (within `patience`) for its own acquire under way.
    async fn admit(&self, owner: Owner, patience: Patience) -> Result<Arrival> {
        loop {
            match self.state.admit(owner) {
                Admission::Reentered(hold) => {
                    return Ok(Arrival::Reentered(LockGuard::new(self.state.clone(), owner, hold)))
                }
                Admission::Lost(reason) => return Err(Error::LockLost(reason)),
                Admission::Queue(claim) => return Ok(Arrival::Queue(claim)),
                Admission::WaitForOwnAcquire(done) => {
                    if patience == Patience::NoWait || within(patience.deadline(), done).await.is_none() {
                        return Ok(Arrival::OutOfTime);
                    }
                }
            }
        }
    }
}

/// What one acquire keeps through its attempts (one per session it rides over onto): whose it
/// is, how long it may wait, where it reports its place in the queue (an election's), and when
/// it began.
#[derive(Clone, Copy)]
struct Attempt<'a> {
    owner: Owner,
    patience: Patience,
    place: Option<&'a PlaceReport>,
    started: Instant,
}

/// How an owner's acquire arrived: in its own hold again, in the queue, or out of time.
enum Arrival {
    Reentered(LockGuard),
    Queue(Claim),
    /// Its patience ran out behind its own acquire under way.
    OutOfTime,
}

impl fmt::Debug for InterProcessMutex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InterProcessMutex")
            .field("path", &self.state.path)
            .field("session", &self.state.connection.client().session_id())
            .field("acquired_in_this_process", &self.is_acquired_in_this_process())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Guards and the futures users await must cross threads (tokio's `bounds()` idiom).
    #[allow(dead_code)]
    fn bounds(mutex: InterProcessMutex) {
        fn send_static<T: Send + 'static>(_: &T) {}
        fn send_sync<T: Send + Sync + Clone + fmt::Debug>(_: &T) {}
        send_sync(&mutex);
        send_static(&async move { mutex.acquire().await.map(|guard| send_static(&guard)) });
    }
}
