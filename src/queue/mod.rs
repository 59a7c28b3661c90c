//! The queue engine every recipe stands in: create a protected node (`node.rs`), list and sort
//! the queue, watch the one node `rules` names and wait for our turn, or for room among a
//! semaphore's leases (`turn.rs`), delete the node on every way out (a released one: `delete.rs`;
//! one an acquire left: `cleanup.rs`); read the queue as its participants (`listing.rs`); tell a
//! watched acquire where it stands (`position.rs`); read the lock folders under a root as a
//! wait-for graph and find its deadlocks, for `zklock deadlocks` and for a waiting acquire that
//! gives up as a deadlock's victim (`deadlock.rs`). It sends what `rules` decides, through
//! `client`; it knows nothing of guards, holds or elections.

pub(crate) mod cleanup;
pub(crate) mod deadlock;
pub(crate) mod delete;
pub(crate) mod listing;
pub(crate) mod node;
pub(crate) mod participant_node;
pub(crate) mod position;
pub(crate) mod turn;
