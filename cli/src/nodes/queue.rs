//! The participants of a lock path's queues as zklock reads them: who holds and who waits,
//! with each node's data and fencing token (what `zklock list`, `zklock leader` and `-v` show).

use std::time::SystemTime;

use zklock::queue::QueueNode;
use zklock::{InterProcessMutex, InterProcessReadWriteLock, InterProcessSemaphoreV2, LeaderLatch, NodeSchema};
use zookeeper_client::Client;

use crate::nodes::layout::{kazoo_gate, Kind};
use crate::nodes::node_data::NodeData;
use crate::output::exit::Failure;

/// One participant of a queue.
#[derive(Debug, PartialEq, Eq)]
pub struct Entry {
    pub node: String,
    pub data: String,
    /// `read` or `write` in a read-write lock.
    pub side: Option<&'static str>,
    pub holds: bool,
    /// The node's czxid, the holder's fencing token.
    pub token: i64,
    /// The session the node belongs to (its ephemeralOwner).
    pub session: i64,
    /// When the node was created (its ctime, the server's clock): a holder has held since then
    /// or since the node ahead of it went, a waiter has waited since then.
    pub created: SystemTime,
}

impl Entry {
    /// Who the participant is, when it is zklock.
    pub fn owner(&self) -> Option<NodeData> {
        NodeData::parse(&self.data)
    }
}

/// The participants of `kind`'s queue on `path`, in queue order.
///
/// An election lists its leader as the holder. A semaphore lists its leases, then the
/// participants queued in `locks`: the first N leases hold, N as zklock's leases say (Curator's
/// layout stores it nowhere: with only Curator's leases, every lease shows as holding, also one
/// that was just added and waits for room). A kazoo semaphore lists its leases, all holding,
/// then the takers queued on its gate.
pub async fn queue(client: &Client, path: &str, kind: Kind) -> Result<Vec<Entry>, Failure> {
    let lock_error = Failure::from_lock_error;
    let nodes = match kind {
        Kind::ReadWrite => {
            let rw = InterProcessReadWriteLock::new(client, path).map_err(lock_error)?;
            let nodes = rw.read_lock().participants_with_data().await.map_err(lock_error)?;
            return Ok(read_write_roles(nodes.into_iter().map(|node| entry(node, None, false)).collect(), "__WRIT__"));
        }
        Kind::KazooReadWrite => {
            let builder = InterProcessReadWriteLock::builder(client, path).node_schema(NodeSchema::Kazoo);
            let rw = builder.build().map_err(lock_error)?;
            let nodes = rw.read_lock().participants_with_data().await.map_err(lock_error)?;
            return Ok(read_write_roles(nodes.into_iter().map(|node| entry(node, None, false)).collect(), "__lock__"));
        }
        Kind::Mutex => InterProcessMutex::new(client, path).map_err(lock_error)?,
        Kind::Kazoo => {
            InterProcessMutex::builder(client, path).node_schema(NodeSchema::Kazoo).build().map_err(lock_error)?
        }
        Kind::Semaphore => {
            let semaphore = InterProcessSemaphoreV2::new(client, path, 1).map_err(lock_error)?;
            let leases = semaphore.participants_with_data().await.map_err(lock_error)?;
            let queued = InterProcessMutex::new(client, &format!("{path}/locks")).map_err(lock_error)?;
            let queued = queued.participants_with_data().await.map_err(lock_error)?;
            let mut entries: Vec<Entry> = leases.into_iter().map(|node| entry(node, None, true)).collect();
            let room = entries.iter().filter_map(|entry| entry.owner()?.leases).max();
            for (position, entry) in entries.iter_mut().enumerate() {
                entry.holds = room.is_none_or(|room| position < room as usize);
            }
            return Ok(entries.into_iter().chain(queued.into_iter().map(|node| entry(node, None, false))).collect());
        }
        Kind::KazooSemaphore => {
            // Every lease node holds (a kazoo taker creates one only when there is room); the
            // takers wait on the gate, the first of them for room.
            let semaphore = InterProcessSemaphoreV2::builder(client, path, 1).node_schema(NodeSchema::Kazoo);
            let leases = semaphore.build().map_err(lock_error)?.participants_with_data().await.map_err(lock_error)?;
            let gate = InterProcessMutex::builder(client, &kazoo_gate(path)).node_schema(NodeSchema::Kazoo);
            let queued = gate.build().map_err(lock_error)?.participants_with_data().await.map_err(lock_error)?;
            let leases = leases.into_iter().map(|node| entry(node, None, true));
            return Ok(leases.chain(queued.into_iter().map(|node| entry(node, None, false))).collect());
        }
        Kind::Latch => {
            // The latch only reads here: it never joins the election.
            let latch = LeaderLatch::new(client, path, "zklock list").map_err(lock_error)?;
            let participants = latch.participants().await.map_err(lock_error)?;
            // The leader is the first; an id is told as read, untrimmed.
            let entries = participants.into_iter().enumerate().map(|(position, participant)| Entry {
                data: participant.id(),
                ..entry(participant, None, position == 0)
            });
            return Ok(entries.collect());
        }
    }
    .participants_with_data()
    .await
    .map_err(lock_error)?;
    Ok(nodes.into_iter().enumerate().map(|(position, node)| entry(node, None, position == 0)).collect())
}

/// The entry of `node`, with the stat it was read with (one multi-read of the queue's nodes).
fn entry(node: QueueNode, side: Option<&'static str>, holds: bool) -> Entry {
    let data = String::from_utf8_lossy(&node.data).trim().to_owned();
    Entry {
        node: node.node_path,
        data,
        side,
        holds,
        token: node.fencing_token,
        session: node.session_id,
        created: node.created,
    }
}

/// The read-write rules (Curator's, and kazoo's recipe) on a queue in order, its writers' nodes
/// named with `writer_name`: a writer holds when it is first, a reader when no writer is ahead of
/// it (a writer's own downgrade is not told apart: it shows waiting).
fn read_write_roles(mut entries: Vec<Entry>, writer_name: &str) -> Vec<Entry> {
    let mut writer_ahead = false;
    for (position, entry) in entries.iter_mut().enumerate() {
        if entry.node.rsplit('/').next().is_some_and(|name| name.contains(writer_name)) {
            entry.side = Some("write");
            entry.holds = position == 0;
            writer_ahead = true;
        } else {
            entry.side = Some("read");
            entry.holds = !writer_ahead;
        }
    }
    entries
}

/// A session id as ZooKeeper's tools print it (`0x1000…`).
pub fn session_id(id: i64) -> String {
    format!("{id:#x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &str) -> Entry {
        Entry {
            node: format!("/p/{name}"),
            data: String::new(),
            side: None,
            holds: false,
            token: 0,
            session: 0,
            created: SystemTime::UNIX_EPOCH,
        }
    }

    #[test]
    fn readers_before_the_first_writer_hold() {
        let queue =
            vec![node("_c_a-__READ__1"), node("_c_b-__READ__2"), node("_c_c-__WRIT__3"), node("_c_d-__READ__4")];
        let holds: Vec<bool> = read_write_roles(queue, "__WRIT__").iter().map(|entry| entry.holds).collect();
        assert_eq!(holds, [true, true, false, false]);
    }

    #[test]
    fn a_writer_holds_only_first() {
        let queue = vec![node("_c_a-__WRIT__1"), node("_c_b-__WRIT__2"), node("_c_c-__READ__3")];
        let holds: Vec<bool> = read_write_roles(queue, "__WRIT__").iter().map(|entry| entry.holds).collect();
        assert_eq!(holds, [true, false, false]);
    }
}
