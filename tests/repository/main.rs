//! Tests of the repository rather than of the library, left out of the published package
//! (Cargo.toml's `include`): the benchmark's exclusion check and CPU clocks (they build files of
//! benches/), every file DESIGN.md names exists, and no snippet a user copies names
//! `zookeeper_client::`. None needs a server.

mod bench_cpu;
mod bench_exclusion;
mod design_map;
mod user_snippets;
