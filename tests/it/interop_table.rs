//! docs/interop.md's table of every recipe against Curator, kazoo and etcd is checked by the
//! interop tests it names: each test named in a cell (a `snake_case` name in backticks) must be
//! a test function of one of the interop test files, so that a renamed or removed test cannot
//! leave the table claiming a proof that no longer runs.

use std::collections::BTreeSet;
use std::path::Path;

/// The interop test files, whose functions the table may name.
const INTEROP_TESTS: [&str; 5] = [
    "tests/it/interop_curator.rs",
    "tests/it/interop_curator_leader.rs",
    "tests/it/interop_kazoo.rs",
    "tests/it/interop_kazoo_semaphore.rs",
    "tests/it/interop_kazoo_election.rs",
];

/// The table: the lines from its header row to the first line that is no table row.
fn recipe_table(guide: &str) -> Vec<&str> {
    let mut lines = guide.lines().skip_while(|line| !line.starts_with("| zklock recipe |"));
    let mut table: Vec<&str> = lines.by_ref().take_while(|line| line.starts_with('|')).collect();
    table.drain(..table.len().min(2));
    table
}

/// The names in backticks that are test names: lowercase words joined by underscores, at least
/// three of them (`node_schema`, `NodeSchema::Kazoo` and paths are not).
fn test_names(row: &str) -> Vec<&str> {
    let is_test_name = |name: &&str| {
        name.split('_').count() >= 3 && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
    };
    row.split('`').skip(1).step_by(2).filter(is_test_name).collect()
}

#[test]
fn every_test_the_interop_table_names_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let guide = std::fs::read_to_string(root.join("docs/interop.md")).unwrap();
    let defined: BTreeSet<String> = INTEROP_TESTS
        .iter()
        .flat_map(|file| {
            let source = std::fs::read_to_string(root.join(file)).unwrap();
            source
                .lines()
                .filter_map(|line| {
                    line.trim_start().strip_prefix("async fn ").or(line.trim_start().strip_prefix("fn "))
                })
                .filter_map(|rest| rest.split(['(', '<']).next().map(str::to_owned))
                .collect::<Vec<_>>()
        })
        .collect();
    let table = recipe_table(&guide);
    assert!(table.len() >= 9, "the table has a row for every recipe: {table:?}");
    let named: Vec<&str> = table.iter().flat_map(|row| test_names(row)).collect();
    assert!(named.len() >= 10, "the table names the tests that prove it: {named:?}");
    let missing: Vec<&&str> = named.iter().filter(|name| !defined.contains(**name)).collect();
    assert!(missing.is_empty(), "docs/interop.md names tests that no interop file defines: {missing:?}");
}

#[test]
fn test_names_are_told_from_other_code_in_a_cell() {
    let row = "| `InterProcessMutex` | yes with `NodeSchema::Kazoo`: `zklock_in_kazoo_schema_and_kazoo_exclude_each_other` | `node_schema` |";
    assert_eq!(test_names(row), ["zklock_in_kazoo_schema_and_kazoo_exclude_each_other"]);
}
