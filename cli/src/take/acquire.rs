//! Taking the lock the options ask for: which kind, with what node data, how patiently.

use std::time::Duration;

use zklock::{
    AclProvider, InterProcessMutex, InterProcessReadWriteLock, InterProcessSemaphoreV2, LockOptions, NodeSchema,
};
use zookeeper_client::Client;

use crate::cli::LockArgs;
use crate::nodes::layout::{Kind, Layout};
use crate::nodes::node_data::NodeData;
use crate::output::exit::{Failure, Outcome};
use crate::take::chain::Chain;
use crate::take::held::Held;
use crate::take::waiting_line::shown;

/// The kind of lock the options ask for.
pub fn kind(args: &LockArgs) -> Kind {
    if args.semaphore.is_some() && args.kazoo {
        Kind::KazooSemaphore
    } else if args.semaphore.is_some() {
        Kind::Semaphore
    } else if args.mutex {
        Kind::Mutex
    } else if args.kazoo && (args.read || args.write) {
        Kind::KazooReadWrite
    } else if args.kazoo {
        Kind::Kazoo
    } else {
        Kind::ReadWrite
    }
}

/// What the options put on the path.
pub fn layout(args: &LockArgs) -> Layout {
    Layout { kind: kind(args), leases: args.semaphore }
}

/// How long to wait: not at all with -n (or `--timeout 0`), else `--timeout`, else for ever.
pub fn patience(args: &LockArgs) -> Option<Duration> {
    if args.nonblock {
        Some(Duration::ZERO)
    } else {
        args.hold.timeout
    }
}

/// Busy (-n, `--timeout 0`) or not ours within `--timeout`: `-E`'s exit code, with one line
/// that says which; none with `--quiet`, nor when -E makes it a success (`-E 0`: nothing to
/// mail from cron).
pub fn not_in_time(path: &str, busy: &str, args: &LockArgs) -> Failure {
    let outcome = Outcome::Busy(args.hold.conflict_exit_code);
    if args.hold.conflict_exit_code == 0 {
        return Failure::quiet(outcome);
    }
    let message = match patience(args) {
        Some(Duration::ZERO) | None => format!("{path} is {busy}"),
        Some(timeout) => format!("{path} was still {busy} after {}", crate::output::duration::human(timeout)),
    };
    Failure::notice(outcome, message)
}

/// What our lock node or lease says about us (and what we write back after a revocation
/// request overwrote it).
pub fn own_data(args: &LockArgs) -> String {
    NodeData::ours(args.semaphore, args.max_hold).to_string()
}

/// Takes the lock (or a lease) at `lock_path` on `on`, a client or a session, within the
/// patience the options give (the waiting line reads who holds with `reader`), creating nodes with `acls` (`acl.rs`). A lock's node says it is
/// `chain`'s (`chain.rs`), so that the deadlock scan reads this process and the `zklock`s
/// around it as one owner; a semaphore's lease and gate do not (its waits are no deadlock's).
pub async fn acquire(
    on: zklock::session::Connection,
    reader: &Client,
    lock_path: &str,
    kind: Kind,
    args: &LockArgs,
    acls: &AclProvider,
    chain: Option<Chain>,
) -> Result<Held, Failure> {
    let timeout = patience(args);
    let mut options = LockOptions::new()
        .node_data(own_data(args))
        .acl_provider(acls.clone())
        .loss_policy(args.hold.loss_policy.into());
    if let Some(bound) = args.max_hold {
        options = options.max_hold(bound);
    }
    let held = if let Some(leases) = args.semaphore {
        let schema = if args.kazoo { NodeSchema::Kazoo } else { NodeSchema::Curator };
        let semaphore = InterProcessSemaphoreV2::builder(on, lock_path, leases)
            .node_schema(schema)
            .options(options)
            .build()
            .map_err(Failure::from_lock_error)?;
        match timeout {
            None => Some(shown(reader, semaphore.acquire()).await.map(Held::Lease)),
            Some(timeout) => {
                shown(reader, semaphore.acquire_timeout(timeout)).await.transpose().map(|lease| lease.map(Held::Lease))
            }
        }
    } else {
        // A read-write lock's builder takes the mutex's own options too: one set, given to
        // whichever lock this kind is.
        let (owner_chain, deadlock_root) = (chain.map(|chain| chain.id()), args.fail_on_deadlock.as_deref());
        let rw;
        let mutex;
        let side = match kind {
            Kind::ReadWrite | Kind::KazooReadWrite => {
                let schema = if kind == Kind::KazooReadWrite { NodeSchema::Kazoo } else { NodeSchema::Curator };
                let mut builder =
                    InterProcessReadWriteLock::builder(on, lock_path).options(options).node_schema(schema);
                if let Some(chain) = owner_chain {
                    builder = builder.owner_chain(chain);
                }
                if let Some(root) = deadlock_root {
                    builder = builder.fail_on_deadlock(root);
                }
                rw = builder.build().map_err(Failure::from_lock_error)?;
                if args.read {
                    rw.read_lock()
                } else {
                    rw.write_lock()
                }
            }
            Kind::Kazoo | Kind::Mutex | Kind::Semaphore | Kind::KazooSemaphore | Kind::Latch => {
                let schema = if kind == Kind::Kazoo { NodeSchema::Kazoo } else { NodeSchema::Curator };
                let mut builder = InterProcessMutex::builder(on, lock_path).options(options).node_schema(schema);
                if let Some(chain) = owner_chain {
                    builder = builder.owner_chain(chain);
                }
                if let Some(root) = deadlock_root {
                    builder = builder.fail_on_deadlock(root);
                }
                mutex = builder.build().map_err(Failure::from_lock_error)?;
                &mutex
            }
        };
        match timeout {
            None => Some(shown(reader, side.acquire()).await.map(Held::Lock)),
            Some(timeout) => {
                shown(reader, side.acquire_timeout(timeout)).await.transpose().map(|guard| guard.map(Held::Lock))
            }
        }
    };
    match held {
        Some(Ok(held)) => Ok(held),
        Some(Err(zklock::Error::Deadlock(ring))) => {
            let root = args.fail_on_deadlock.as_deref().unwrap_or("/");
            let n = ring.hops.len();
            let message = format!(
                "{lock_path}: gave up waiting to break a deadlock ({n} in a ring under {root}); the others go on"
            );
            Err(Failure::new(Outcome::Deadlock, message))
        }
        Some(Err(zklock::Error::SessionExpired)) => {
            let session = crate::output::duration::human(reader.session_timeout());
            let message = format!(
                "{lock_path}: the ZooKeeper session expired while waiting (ZooKeeper was out of reach for longer than the \
                 session timeout, {session}); nothing was held, our place in the queue went with the session"
            );
            Err(Failure::new(Outcome::Unavailable, message))
        }
        Some(Err(err)) => Err(Failure::from_lock_error(err)),
        None => Err(not_in_time(lock_path, "held by another", args)),
    }
}
