//! A node in a queue, as zklock shows one wherever it does.

use std::time::{Duration, SystemTime};

use zookeeper_client::Stat;

/// A node in a queue, as read from ZooKeeper: a lock's participant (`participants_with_data`),
/// the holder at the head of a waiting acquire's queue ([`QueuePosition::holder`]), an
/// election's participant and its leader ([`LeaderLatch::participants`](crate::LeaderLatch::participants),
/// [`LeaderView`](crate::election::LeaderView)).
///
/// [`QueuePosition::holder`]: crate::queue::QueuePosition::holder
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct QueueNode {
    /// The node's full path.
    pub node_path: String,
    /// The node's data: for a zklock participant, what
    /// [`LockOptions::node_data`](crate::LockOptions::node_data) set; for a Curator lock's, by
    /// default its host's IP address; for an election's, the participant's id; for kazoo's, its
    /// identifier.
    pub data: Vec<u8>,
    /// The zxid that created the node (its `czxid`): the fencing token of the hold it stands for
    /// while it holds alone, as [`Hold::fencing_token`](crate::hold::Hold::fencing_token) tells
    /// the holder (a guard, a lease, a term of leadership).
    pub fencing_token: i64,
    /// The session the node belongs to (its `ephemeralOwner`; 0 for a node that is not
    /// ephemeral).
    pub session_id: i64,
    /// When the node was created (its `ctime`, the server's clock). A holder has held since
    /// then, or since the node before it went, whichever is later: exact for a holder that took
    /// a free lock, an upper bound of its hold otherwise.
    pub created: SystemTime,
}

impl QueueNode {
    /// The node at `node_path`, read with `data` and `stat`.
    pub(crate) fn read(node_path: String, data: Vec<u8>, stat: &Stat) -> Self {
        let created = SystemTime::UNIX_EPOCH + Duration::from_millis(u64::try_from(stat.ctime).unwrap_or(0));
        QueueNode { node_path, data, fencing_token: stat.czxid, session_id: stat.ephemeral_owner, created }
    }

    /// The participant's id, as Curator's `Participant.getId` reads it: the node's data as UTF-8
    /// (invalid bytes replaced).
    pub fn id(&self) -> String {
        String::from_utf8_lossy(&self.data).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_read_tells_its_stat_and_its_id_as_text() {
        let stat = Stat {
            czxid: 42,
            mzxid: 42,
            pzxid: 42,
            ctime: 1_500,
            mtime: 1_500,
            version: 0,
            cversion: 0,
            aversion: 0,
            ephemeral_owner: 7,
            data_length: 0,
            num_children: 0,
        };
        let node = QueueNode::read("/e/a".into(), "hôte-1".as_bytes().to_vec(), &stat);
        assert_eq!((node.fencing_token, node.session_id), (42, 7));
        assert_eq!(node.created, SystemTime::UNIX_EPOCH + Duration::from_millis(1_500));
        assert_eq!(node.id(), "hôte-1");
        let garbled = QueueNode::read("/e/b".into(), b"\xff2".to_vec(), &stat);
        assert_eq!(garbled.id(), "\u{fffd}2");
    }
}
