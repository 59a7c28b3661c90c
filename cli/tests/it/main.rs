//! The command's integration tests, one module per concern, in one binary: one build and one
//! link, one ZooKeeper server for every test that needs none of its own, and the tests of
//! every concern side by side (`RUST_TEST_THREADS`, scripts/test).

#[path = "../../../tests/common/mod.rs"]
mod common;
mod support;

mod acl;
mod connection;
mod conventions;
mod deadlocks;
mod elect;
mod exit_codes;
mod hold;
mod ignored;
mod imports;
mod job_control;
mod kazoo_read_write;
mod kill_combinations;
mod killed;
mod list;
mod list_kazoo;
mod manual;
mod max_hold;
mod museum;
mod output;
mod placement;
mod quiet;
mod revoke;
mod run;
mod signals;
mod supervision;
mod systemd;
mod waiting_line;
