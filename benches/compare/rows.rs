//! The rows of the tables, in table order: adding a row is one type in this folder and one entry
//! in [`all`].

mod client_lock;
mod curator;
mod failover_floor;
mod floor;
mod kazoo;
mod leader;
mod mariadb;
mod naive;
mod redis;
mod zklock;
mod zklock_blocking;
mod zklock_handoff;

use crate::election;
use crate::row::Row;
use crate::servers;
use crate::zookeeper;

/// Every row. The peers' programs are compiled or found, and the other servers started, in this
/// order; those servers are killed when their rows drop, also on an early return or a panic.
pub async fn all() -> Vec<Box<dyn Row>> {
    vec![
        zookeeper::row::<::zklock::InterProcessMutex>(),
        Box::new(zklock_blocking::BlockingMutex),
        zookeeper::row::<zklock_handoff::HandoffMutex>(),
        zookeeper::row::<client_lock::ClientLock>(),
        zookeeper::row::<client_lock::ClientLockAgain>(),
        zookeeper::row::<floor::RawFloor>(),
        zookeeper::row::<naive::Naive>(),
        election::row::<leader::Latches>(),
        election::row::<leader::Selectors>(),
        election::row::<failover_floor::WatchedDelete>(),
        Box::new(curator::peer()),
        Box::new(kazoo::peer()),
        servers::row::<redis::Redis>().await,
        servers::row::<mariadb::MariaDb>().await,
    ]
}
