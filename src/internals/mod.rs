//! The queue every recipe stands in: create a protected sequential node, list and sort the
//! queue, watch the predecessor, wait, and delete the node on every way out. Only this layer
//! talks to ZooKeeper.

pub(crate) mod deadline;
pub(crate) mod lease;
pub(crate) mod loss;
pub(crate) mod node;
pub(crate) mod queue;
pub(crate) mod retry;
