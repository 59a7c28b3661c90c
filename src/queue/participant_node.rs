//! What `participants_with_data` returns.

/// One participant of a lock: its node and the data stored in it (for a zklock participant, what
/// [`MutexBuilder::node_data`](crate::MutexBuilder::node_data) set; for a Curator participant, by
/// default its host's IP address; for kazoo, its identifier).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct ParticipantNode {
    /// The node's full path.
    pub node_path: String,
    /// The node's data.
    pub data: Vec<u8>,
}
