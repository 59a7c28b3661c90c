//! The queue engine every recipe stands in: create a protected node (`node.rs`), list and sort
//! the queue, watch the one node `rules` names and wait for our turn, or for room among a
//! semaphore's leases (`turn.rs`), delete the node on every way out (a released one: `delete.rs`;
//! one an acquire left: `node.rs`), retry what is transient (`retry.rs`), within an acquire's
//! patience (`deadline.rs`); read the queue as its participants (`listing.rs`). `session_end.rs`
//! is the one mapping from a session's end (a state, an event, an error) to errors and loss reasons,
//! and `session.rs` the [`Session`](crate::Session) that connects a new one after an expiry.
//! It sends what `rules` decides; it knows nothing of guards, holds or elections.

pub(crate) mod deadline;
pub(crate) mod delete;
pub(crate) mod listing;
pub(crate) mod node;
pub(crate) mod participant_node;
pub(crate) mod retry;
pub(crate) mod session;
pub(crate) mod session_end;
pub(crate) mod turn;
