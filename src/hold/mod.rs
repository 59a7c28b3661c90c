//! What a held node is and everything that tells of its loss: the node behind every guard
//! (`held_node.rs`: path, fencing token, fenced writes, delete), what every hold offers, said
//! once ([`Hold`], `hold_trait.rs`), a semaphore's [`Lease`] (`lease.rs`), and all loss detection: the signal a hold's watchers share (`hold_signal.rs`),
//! the session's state under the [`LossPolicy`](crate::LossPolicy) (`session_watch.rs`), the
//! watch on our own node, set at once or after a second (`node_watch.rs`,
//! `delayed_node_watch.rs`), the maximum hold time's timer (`max_hold.rs`), fenced transactions (`fenced_write.rs`), and work run only while a hold stands
//! (`while_held.rs`, [`RunEnd`](crate::RunEnd)).
//!
//! A [`LockGuard`](crate::LockGuard) is a hold too, but it lives with the hold table it counts
//! in (`lock/`), as a [`Leadership`](crate::election::Leadership) lives with its election.

pub(crate) mod delayed_node_watch;
pub(crate) mod fenced_write;
pub(crate) mod held_node;
pub(crate) mod hold_signal;
pub(crate) mod hold_trait;
pub(crate) mod lease;
pub(crate) mod max_hold;
pub(crate) mod node_watch;
pub(crate) mod session_watch;
pub(crate) mod while_held;
