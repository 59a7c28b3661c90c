//! The lock under test: what every contract needs from a recipe, and one implementation per
//! recipe (Curator's `makeLock`, as a trait).

use std::future::Future;
use std::time::Duration;

use zklock::hold::Hold;
use zklock::{
    Error, InterProcessMultiLock, InterProcessMutex, InterProcessReadWriteLock, InterProcessSemaphoreMutex,
    InterProcessSemaphoreV2, Lease, LocalHandoff, LockGuard, LossPolicy, LossReason, MultiLockGuard, NodeSchema,
    Result,
};
use zookeeper_client::Client;

/// One participant of a recipe on one path.
///
/// Exclusive contracts pit [`make`](Self::make)'s participants against [`rival`](Self::rival)'s:
/// for an exclusive lock both are the same kind, for a read lock the rival is a writer (readers
/// share, so only a writer contends with them).
pub trait LockUnderTest: Sized + Send + Sync + 'static {
    type Held: Held;

    /// A participant of the kind under test on `path`.
    fn make(client: &Client, path: &str) -> Self;

    /// A participant that excludes `make`'s and is excluded by it.
    fn rival(client: &Client, path: &str) -> Self {
        Self::make(client, path)
    }

    /// Party `index` of a contention test: the kind under test and its rivals, taking turns.
    fn party(client: &Client, path: &str, index: usize) -> Self {
        if index % 2 == 0 {
            Self::make(client, path)
        } else {
            Self::rival(client, path)
        }
    }

    /// Whether this participant may hold beside others of its kind (a reader).
    fn is_shared(&self) -> bool {
        false
    }

    /// Whether a waiter holds on a node it queued with. Not in kazoo's semaphore layout: a
    /// waiter queues on the gate only, and creates its lease once there is room.
    const HOLDS_ON_A_QUEUED_NODE: bool = true;

    /// How many nodes the waiter first in line behind a holder has once it waits: two in a
    /// semaphore of Curator's layout (it holds the mutex, and its lease is queued), which
    /// creates them one after the other.
    const FIRST_WAITER_NODES: usize = 1;

    /// Whether this participant's process holds it, for recipes that can say
    /// (`InterProcessMutex::is_acquired_in_this_process`); `None` for the others.
    fn holds_in_this_process(&self) -> Option<bool> {
        None
    }

    /// The czxid of the node a fencing token of this recipe was taken on.
    fn czxid_of_token(token: i64) -> i64 {
        token
    }

    /// The directories whose children are the nodes this recipe creates for `path`.
    fn node_dirs(path: &str) -> Vec<String> {
        vec![path.to_owned()]
    }

    fn acquire(&self) -> impl Future<Output = Result<Self::Held>> + Send + '_;
    fn acquire_timeout(&self, timeout: Duration) -> impl Future<Output = Result<Option<Self::Held>>> + Send + '_;
    fn try_acquire(&self) -> impl Future<Output = Result<Option<Self::Held>>> + Send + '_;
}

/// A recipe built with a [`LossPolicy`] (every lock recipe takes one).
pub trait WithLossPolicy: LockUnderTest {
    fn with_loss_policy(client: &Client, path: &str, policy: LossPolicy) -> Self;
}

/// What an acquire hands out: a guard, a lease, a multi-lock guard.
pub trait Held: Send + Sync + 'static {
    fn release(self) -> impl Future<Output = Result<()>> + Send;
    fn is_held(&self) -> bool;
    fn lost(&self) -> impl Future<Output = LossReason> + Send + '_;
    fn fencing_token(&self) -> i64;
    /// Every node this hold owns, full paths.
    fn node_paths(&self) -> Vec<String>;
    /// Whether `released`, what releasing a hold lost for `reason` returned, says what it
    /// should: a lock's release reports the loss.
    fn release_reports_loss(released: &Result<()>, reason: LossReason) -> bool {
        matches!(released, Err(Error::LockLost(lost)) if *lost == reason)
    }
}

/// `Held` for a guard type with a single node.
macro_rules! held_on_one_node {
    ($held:ident) => {
        impl Held for $held {
            fn release(self) -> impl Future<Output = Result<()>> + Send {
                $held::release(self)
            }
            fn is_held(&self) -> bool {
                Hold::is_held(self)
            }
            fn lost(&self) -> impl Future<Output = LossReason> + Send + '_ {
                Hold::lost(self)
            }
            fn fencing_token(&self) -> i64 {
                Hold::fencing_token(self)
            }
            fn node_paths(&self) -> Vec<String> {
                vec![Hold::node_path(self).to_owned()]
            }
        }
    };
}

held_on_one_node!(LockGuard);
held_on_one_node!(Lease);

impl Held for MultiLockGuard {
    fn release(self) -> impl Future<Output = Result<()>> + Send {
        MultiLockGuard::release(self)
    }
    fn is_held(&self) -> bool {
        MultiLockGuard::is_held(self)
    }
    fn lost(&self) -> impl Future<Output = LossReason> + Send + '_ {
        MultiLockGuard::lost(self)
    }
    /// The token of the lock taken last: each lock's tokens increase holder to holder, and a
    /// holder of the multi-lock holds all of them.
    fn fencing_token(&self) -> i64 {
        *self.fencing_tokens().last().expect("a multi-lock has locks")
    }
    fn node_paths(&self) -> Vec<String> {
        self.guards().iter().map(|guard| guard.node_path().to_owned()).collect()
    }
}

/// The three acquires, delegated to the recipe object `self.recipe()`.
macro_rules! acquires {
    ($held:ty) => {
        fn acquire(&self) -> impl Future<Output = Result<$held>> + Send + '_ {
            self.recipe().acquire()
        }
        fn acquire_timeout(&self, timeout: Duration) -> impl Future<Output = Result<Option<$held>>> + Send + '_ {
            self.recipe().acquire_timeout(timeout)
        }
        fn try_acquire(&self) -> impl Future<Output = Result<Option<$held>>> + Send + '_ {
            self.recipe().try_acquire()
        }
    };
}

/// A participant whose recipe object has the three acquires itself.
macro_rules! wraps {
    ($name:ident($recipe:ty)) => {
        impl $name {
            fn recipe(&self) -> &$recipe {
                &self.0
            }
        }
    };
}

/// `InterProcessMutex`.
pub struct Mutex(InterProcessMutex);
wraps!(Mutex(InterProcessMutex));

impl LockUnderTest for Mutex {
    type Held = LockGuard;
    fn make(client: &Client, path: &str) -> Self {
        Mutex(InterProcessMutex::new(client, path).unwrap())
    }
    fn holds_in_this_process(&self) -> Option<bool> {
        Some(self.0.is_acquired_in_this_process())
    }
    acquires!(LockGuard);
}

impl WithLossPolicy for Mutex {
    fn with_loss_policy(client: &Client, path: &str, policy: LossPolicy) -> Self {
        Mutex(
            InterProcessMutex::builder(client, path)
                .options(zklock::LockOptions::new().loss_policy(policy))
                .build()
                .unwrap(),
        )
    }
}

/// `InterProcessMutex` with local handoff, bounded low (three holders a node) so that every
/// contract run both passes holds between tasks and queues anew.
pub struct HandoffMutex(InterProcessMutex);
wraps!(HandoffMutex(InterProcessMutex));

/// The bound of [`HandoffMutex`]: 3 holders per node; the time is a backstop.
pub const HANDOFF: LocalHandoff = LocalHandoff::new(3, Duration::from_secs(30));

impl LockUnderTest for HandoffMutex {
    type Held = LockGuard;
    fn make(client: &Client, path: &str) -> Self {
        HandoffMutex(InterProcessMutex::builder(client, path).local_handoff(HANDOFF).build().unwrap())
    }
    /// The holders of a node count in the token's low byte (see `LocalHandoff`'s docs).
    fn czxid_of_token(token: i64) -> i64 {
        token >> 8
    }
    fn holds_in_this_process(&self) -> Option<bool> {
        Some(self.0.is_acquired_in_this_process())
    }
    acquires!(LockGuard);
}

impl WithLossPolicy for HandoffMutex {
    fn with_loss_policy(client: &Client, path: &str, policy: LossPolicy) -> Self {
        let mutex = InterProcessMutex::builder(client, path)
            .local_handoff(HANDOFF)
            .options(zklock::LockOptions::new().loss_policy(policy))
            .build();
        HandoffMutex(mutex.unwrap())
    }
}

/// One side of an `InterProcessReadWriteLock`.
pub struct Side {
    lock: InterProcessReadWriteLock,
    reader: bool,
}

impl Side {
    fn recipe(&self) -> &InterProcessMutex {
        if self.reader {
            self.lock.read_lock()
        } else {
            self.lock.write_lock()
        }
    }
}

/// The write side of a read-write lock, against other writers.
pub struct WriteSide(Side);

/// The read side of a read-write lock, against writers.
pub struct ReadSide(Side);

/// The write side of a read-write lock in kazoo's layout, against other writers.
pub struct KazooWriteSide(Side);

/// The read side of a read-write lock in kazoo's layout, against writers.
pub struct KazooReadSide(Side);

macro_rules! side_under_test {
    ($name:ident, reader: $reader:expr, schema: $schema:expr) => {
        impl $name {
            fn recipe(&self) -> &InterProcessMutex {
                self.0.recipe()
            }
        }

        impl LockUnderTest for $name {
            type Held = LockGuard;
            fn make(client: &Client, path: &str) -> Self {
                let lock = InterProcessReadWriteLock::builder(client, path).node_schema($schema).build().unwrap();
                $name(Side { lock, reader: $reader })
            }
            fn rival(client: &Client, path: &str) -> Self {
                let lock = InterProcessReadWriteLock::builder(client, path).node_schema($schema).build().unwrap();
                $name(Side { lock, reader: false })
            }
            fn is_shared(&self) -> bool {
                self.0.reader
            }
            fn holds_in_this_process(&self) -> Option<bool> {
                Some(self.recipe().is_acquired_in_this_process())
            }
            acquires!(LockGuard);
        }

        impl WithLossPolicy for $name {
            fn with_loss_policy(client: &Client, path: &str, policy: LossPolicy) -> Self {
                let builder = InterProcessReadWriteLock::builder(client, path).node_schema($schema);
                let lock = builder.options(zklock::LockOptions::new().loss_policy(policy)).build().unwrap();
                $name(Side { lock, reader: $reader })
            }
        }
    };
}

side_under_test!(WriteSide, reader: false, schema: NodeSchema::Curator);
side_under_test!(ReadSide, reader: true, schema: NodeSchema::Curator);
side_under_test!(KazooWriteSide, reader: false, schema: NodeSchema::Kazoo);
side_under_test!(KazooReadSide, reader: true, schema: NodeSchema::Kazoo);

/// `InterProcessSemaphoreMutex`.
pub struct SemaphoreMutex(InterProcessSemaphoreMutex);
wraps!(SemaphoreMutex(InterProcessSemaphoreMutex));

/// `InterProcessSemaphoreV2` with one lease.
pub struct SemaphoreOfOne(InterProcessSemaphoreV2);
wraps!(SemaphoreOfOne(InterProcessSemaphoreV2));

/// `InterProcessSemaphoreV2` with one lease, in kazoo's layout.
pub struct KazooSemaphoreOfOne(InterProcessSemaphoreV2);
wraps!(KazooSemaphoreOfOne(InterProcessSemaphoreV2));

macro_rules! semaphore_under_test {
    ($name:ident, $make:expr, $build:expr) => {
        semaphore_under_test!($name, $make, $build, |path: &str| vec![
            format!("{path}/leases"),
            format!("{path}/locks")
        ]);
    };
    ($name:ident, $make:expr, $build:expr, $dirs:expr) => {
        semaphore_under_test!($name, $make, $build, $dirs, true, 2);
    };
    ($name:ident, $make:expr, $build:expr, $dirs:expr, $queued:expr, $first_waiter_nodes:expr) => {
        impl LockUnderTest for $name {
            type Held = Lease;
            const HOLDS_ON_A_QUEUED_NODE: bool = $queued;
            const FIRST_WAITER_NODES: usize = $first_waiter_nodes;
            fn make(client: &Client, path: &str) -> Self {
                $name($make(client, path).unwrap())
            }
            /// Its leases, and the mutex that guards taking them.
            fn node_dirs(path: &str) -> Vec<String> {
                $dirs(path)
            }
            acquires!(Lease);
        }

        impl WithLossPolicy for $name {
            fn with_loss_policy(client: &Client, path: &str, policy: LossPolicy) -> Self {
                $name($build(client, path).options(zklock::LockOptions::new().loss_policy(policy)).build().unwrap())
            }
        }
    };
}

semaphore_under_test!(SemaphoreMutex, InterProcessSemaphoreMutex::new, InterProcessSemaphoreMutex::builder);
semaphore_under_test!(SemaphoreOfOne, |client, path| InterProcessSemaphoreV2::new(client, path, 1), |client, path| {
    InterProcessSemaphoreV2::builder(client, path, 1)
});
semaphore_under_test!(
    KazooSemaphoreOfOne,
    |client, path| InterProcessSemaphoreV2::builder(client, path, 1).node_schema(NodeSchema::Kazoo).build(),
    |client, path| InterProcessSemaphoreV2::builder(client, path, 1).node_schema(NodeSchema::Kazoo),
    |path: &str| vec![path.to_owned(), format!("{path}-__lock__")],
    false,
    1
);

/// `InterProcessMultiLock` over two paths under the lock path, in one order for everyone.
pub struct MultiOfTwo(InterProcessMultiLock);
wraps!(MultiOfTwo(InterProcessMultiLock));

pub fn multi_paths(path: &str) -> [String; 2] {
    [format!("{path}/a"), format!("{path}/b")]
}

impl LockUnderTest for MultiOfTwo {
    type Held = MultiLockGuard;
    fn make(client: &Client, path: &str) -> Self {
        let [a, b] = multi_paths(path);
        MultiOfTwo(InterProcessMultiLock::from_paths(client, &[&a, &b]).unwrap())
    }
    fn node_dirs(path: &str) -> Vec<String> {
        multi_paths(path).to_vec()
    }
    acquires!(MultiLockGuard);
}

impl WithLossPolicy for MultiOfTwo {
    fn with_loss_policy(client: &Client, path: &str, policy: LossPolicy) -> Self {
        let locks = multi_paths(path)
            .iter()
            .map(|path| {
                InterProcessMutex::builder(client, path)
                    .options(zklock::LockOptions::new().loss_policy(policy))
                    .build()
                    .unwrap()
            })
            .collect();
        MultiOfTwo(InterProcessMultiLock::new(locks).unwrap())
    }
}
