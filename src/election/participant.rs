//! What a leader election's `participants()` returns.

use crate::queue::participant_node::ParticipantNode;

/// One participant of a leader election, as Curator's `Participant`: its id (the data of its
/// node), whether it leads, and its node.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct ElectionParticipant {
    /// The participant's id: the data of its node, read as UTF-8 (invalid bytes replaced).
    pub id: String,
    /// Whether this participant leads (its node is first in the queue).
    pub is_leader: bool,
    /// The full path of its node.
    pub node_path: String,
}

impl ElectionParticipant {
    /// The participants of a queue read in order, holder first.
    pub(crate) fn from_queue(queue: Vec<ParticipantNode>) -> Vec<Self> {
        queue
            .into_iter()
            .enumerate()
            .map(|(index, node)| ElectionParticipant {
                id: String::from_utf8_lossy(&node.data).into_owned(),
                is_leader: index == 0,
                node_path: node.node_path,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_in_the_queue_leads_and_ids_are_read_as_text() {
        let node = |path: &str, data: &[u8]| ParticipantNode { node_path: path.into(), data: data.into() };
        let participants =
            ElectionParticipant::from_queue(vec![node("/e/a", "hôte-1".as_bytes()), node("/e/b", b"\xff2")]);
        assert_eq!(
            participants,
            vec![
                ElectionParticipant { id: "hôte-1".into(), is_leader: true, node_path: "/e/a".into() },
                ElectionParticipant { id: "\u{fffd}2".into(), is_leader: false, node_path: "/e/b".into() },
            ]
        );
        assert!(ElectionParticipant::from_queue(Vec::new()).is_empty());
    }
}
