//! zklock's integration tests, one module per concern, in one binary: one build and one link,
//! one ZooKeeper server for every test that needs none of its own, and the tests of every
//! concern side by side (`RUST_TEST_THREADS`, scripts/test): the explorer's minute of random
//! sequences among them. The fault soak (its timing windows want no neighbours), the packaged
//! layout check, the repository's checks (tests/repository/, which the package leaves
//! out) and the metrics recorder (one per process) have binaries of their own.

#[path = "../common/mod.rs"]
mod common;
mod election;

mod blocking;
mod contract;
mod deadlock;
mod election_view;
mod explore;
mod faults;
mod fenced_write;
mod handoff_window;
mod hold_trait;
mod interop_curator;
mod interop_curator_leader;
mod interop_kazoo;
mod interop_kazoo_election;
mod interop_kazoo_semaphore;
mod interop_table;
mod leader_election;
mod leader_lifecycle;
mod leader_term_end;
mod local_handoff;
mod local_handoff_meets;
mod max_hold;
mod misuse;
mod multi_and_revoke;
mod museum;
mod mutex_exclusion;
mod mutex_queue;
mod mutex_reentrancy;
mod queue_view;
mod request_budget;
mod retry_policy;
mod run_while_held;
mod rwlock;
mod security;
mod semaphore;
mod session;
mod session_waits;
mod throttled;
mod typed_errors;
