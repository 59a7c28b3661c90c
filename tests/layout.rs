//! The layers of `src/` (DESIGN.md, "Layers") are kept by this test, not by good intentions: every
//! file imports only from its own folder and the folders below it, the shared vocabulary
//! (`error.rs`, `options.rs`, `observe/`) imports no layer, and no two files import each other,
//! however indirectly. It reads the code as text: every `crate::` and `super::` path outside
//! comments and unit tests, resolved to the file that defines what it names.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The layers, bottom first: a file may import from its own layer and those before it.
const LAYERS: [&str; 7] = ["rules", "client", "queue", "hold", "lock", "election", "blocking"];

/// The vocabulary every layer uses, which uses no layer.
const SHARED: [&str; 3] = ["error", "options", "observe"];

/// One source file: its module path (`["queue", "turn"]`; `[]` for lib.rs) and its code without
/// comments and unit tests.
struct Source {
    module: Vec<String>,
    code: String,
}

fn sources(dir: &Path, module: &[String], found: &mut Vec<Source>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        let mut inner = module.to_vec();
        if path.is_dir() {
            inner.push(name);
            sources(&path, &inner, found);
            continue;
        }
        let Some(stem) = name.strip_suffix(".rs") else { continue };
        if stem != "mod" && stem != "lib" {
            inner.push(stem.to_owned());
        }
        found.push(Source { module: inner, code: code_of(&std::fs::read_to_string(&path).unwrap()) });
    }
}

/// The text without comment lines and without the unit tests that close a file.
fn code_of(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod tests") {
        Some(tests) => &text[..tests],
        None => text,
    };
    text.lines()
        .map(|line| match line.find("//") {
            Some(comment) => &line[..comment],
            None => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Every path a use tree starting at `rest` names, each as its segments (`{a::b, c}` gives two).
fn use_tree(rest: &str, prefix: &[String], paths: &mut Vec<Vec<String>>) -> usize {
    let mut at = 0;
    let mut path = prefix.to_vec();
    loop {
        let tail = &rest[at..];
        if let Some(group) = tail.strip_prefix('{') {
            let mut used = 1;
            let mut inner = group;
            loop {
                let trimmed = inner.trim_start();
                used += inner.len() - trimmed.len();
                if let Some(after) = trimmed.strip_prefix('}') {
                    let _ = after;
                    return at + used + 1;
                }
                let taken = use_tree(trimmed, &path, paths);
                used += taken;
                inner = &trimmed[taken..];
                let trimmed = inner.trim_start();
                used += inner.len() - trimmed.len();
                inner = trimmed;
                if let Some(after) = inner.strip_prefix(',') {
                    used += 1;
                    inner = after;
                }
                if taken == 0 && !inner.starts_with('}') {
                    return at + used;
                }
            }
        }
        let len = tail.find(|c: char| !is_ident(c)).unwrap_or(tail.len());
        if len == 0 {
            break;
        }
        path.push(tail[..len].to_owned());
        at += len;
        if rest[at..].starts_with("::") {
            at += 2;
        } else {
            break;
        }
    }
    if path.len() > prefix.len() {
        paths.push(path);
    }
    at
}

/// The paths `code` names from the crate root, in `module`.
fn named_paths(code: &str, module: &[String]) -> Vec<Vec<String>> {
    let mut paths = Vec::new();
    for (start, _) in code.match_indices("crate::") {
        if start > 0 && code[..start].ends_with(|c: char| is_ident(c) || c == '$') {
            continue;
        }
        use_tree(&code[start + "crate::".len()..], &[], &mut paths);
    }
    let parent = &module[..module.len().saturating_sub(1)];
    for (start, _) in code.match_indices("super::") {
        if start > 0 && code[..start].ends_with(|c: char| is_ident(c) || c == ':') {
            continue;
        }
        use_tree(&code[start + "super::".len()..], parent, &mut paths);
    }
    paths
}

/// Which file defines the item `name`, among the files under `module`.
fn definer<'a>(sources: &'a [Source], module: &[String], name: &str) -> Option<&'a Source> {
    let defines = |code: &str| {
        ["struct", "enum", "trait", "fn", "type", "const", "static", "macro_rules!"].iter().any(|kind| {
            code.match_indices(&format!("{kind} {name}")).any(|(at, found)| {
                code[at + found.len()..].starts_with(|c: char| !is_ident(c))
                    && (at == 0 || !code[..at].ends_with(is_ident))
            })
        })
    };
    sources.iter().find(|source| source.module.starts_with(module) && defines(&source.code))
}

/// The file-level import graph: module path -> the module paths of the files it imports from.
fn graph(sources: &[Source]) -> BTreeMap<String, BTreeSet<String>> {
    let modules: BTreeSet<&Vec<String>> = sources.iter().map(|source| &source.module).collect();
    let mut edges = BTreeMap::new();
    for source in sources {
        let targets: &mut BTreeSet<String> = edges.entry(source.module.join("::")).or_default();
        for path in named_paths(&source.code, &source.module) {
            let known = (0..=path.len()).rev().find(|len| modules.contains(&path[..*len].to_vec())).unwrap_or(0);
            let target = match path.get(known) {
                Some(item) => definer(sources, &path[..known], item).map_or(&path[..known], |file| &file.module[..]),
                None => &path[..known],
            };
            if !target.is_empty() && *target != source.module[..] {
                targets.insert(target.join("::"));
            }
        }
    }
    edges
}

fn src_graph() -> BTreeMap<String, BTreeSet<String>> {
    graph(&src_sources())
}

/// A layer's rank, or `None` for the shared vocabulary.
fn rank(module: &str) -> Option<usize> {
    let top = module.split("::").next().unwrap();
    LAYERS.iter().position(|layer| *layer == top)
}

fn arrows_against_the_layers(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    let mut wrong = Vec::new();
    for (from, targets) in edges {
        let top = from.split("::").next().unwrap();
        assert!(from.is_empty() || rank(from).is_some() || SHARED.contains(&top), "{from} is in no layer");
        for to in targets {
            let allowed = match (rank(from), rank(to)) {
                (Some(from), Some(to)) => to <= from,
                (_, None) => true,
                // lib.rs, the users' door, stands above every layer: its feature modules
                // (`zklock::session`, `zklock::deadlock`) re-export from any of them.
                (None, Some(_)) => from.is_empty(),
            };
            if !allowed {
                wrong.push(format!("{from} -> {to}"));
            }
        }
    }
    wrong
}

/// Every cycle's files, as `a -> b -> a`.
fn cycles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    fn visit(
        node: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        stack: &mut Vec<String>,
        done: &mut BTreeSet<String>,
        found: &mut Vec<String>,
    ) {
        if let Some(at) = stack.iter().position(|on| on == node) {
            found.push(format!("{} -> {node}", stack[at..].join(" -> ")));
            return;
        }
        if !done.insert(node.to_owned()) {
            return;
        }
        stack.push(node.to_owned());
        for next in edges.get(node).into_iter().flatten() {
            visit(next, edges, stack, done, found);
        }
        stack.pop();
    }
    let mut found = Vec::new();
    let mut done = BTreeSet::new();
    for node in edges.keys() {
        visit(node, edges, &mut Vec::new(), &mut done, &mut found);
    }
    found
}

#[test]
fn every_import_runs_down_the_layers() {
    let wrong = arrows_against_the_layers(&src_graph());
    assert!(wrong.is_empty(), "imports against the layers (DESIGN.md, \"Layers\"): {wrong:#?}");
}

#[test]
fn no_file_imports_itself_through_others() {
    let found = cycles(&src_graph());
    assert!(found.is_empty(), "import circles: {found:#?}");
}

/// Every `crate::` path outside lib.rs that does not start at a module: lib.rs is the users'
/// door, and an import through it would hide which file depends on which.
fn paths_through_lib_rs(sources: &[Source]) -> Vec<String> {
    let tops: BTreeSet<&String> = sources.iter().filter_map(|source| source.module.first()).collect();
    let mut found = Vec::new();
    for source in sources.iter().filter(|source| !source.module.is_empty()) {
        for (start, _) in source.code.match_indices("crate::") {
            if start > 0 && source.code[..start].ends_with(|c: char| is_ident(c) || c == '$') {
                continue;
            }
            let mut paths = Vec::new();
            use_tree(&source.code[start + "crate::".len()..], &[], &mut paths);
            for path in paths.into_iter().filter(|path| !tops.contains(&path[0])) {
                found.push(format!("{}: crate::{}", source.module.join("::"), path.join("::")));
            }
        }
    }
    found
}

fn src_sources() -> Vec<Source> {
    let mut found = Vec::new();
    sources(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), &[], &mut found);
    found
}

#[test]
fn every_import_names_its_home_not_lib_rs() {
    let found = paths_through_lib_rs(&src_sources());
    assert!(found.is_empty(), "imports through lib.rs (name the file that defines it): {found:#?}");
}

/// The most lines of code a file of `src/` may hold: an alarm for a file that has grown a second
/// concept, not a rule that cuts one. Files are cut by concept (STYLE.md: "files by concept, not
/// by size"); a cap near the size of one concept would split it over files the reader must
/// assemble. Set well above the largest file that is one concept (`lock/mutex.rs`: the lock
/// object, its builder, its acquire, its hold table and its guard, about 640). Code only: blank lines,
/// comments (the docs) and unit tests (a `tests` module, or a `tests.rs` of its own) never
/// count, so a concept keeps its docs and proofs in its one file.
const MOST_CODE_LINES: usize = 800;

/// The lines of `text` that hold code.
fn code_lines(text: &str) -> usize {
    code_of(text).lines().filter(|line| !line.trim().is_empty()).count()
}

#[test]
fn no_file_of_src_outgrows_one_concept() {
    fn long_files(dir: &Path, found: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                long_files(&path, found);
            } else if path.file_name().is_some_and(|name| name == "tests.rs") {
                continue;
            } else if let Ok(text) = std::fs::read_to_string(&path) {
                if code_lines(&text) > MOST_CODE_LINES {
                    found.push(format!("{}: {} lines of code", path.display(), code_lines(&text)));
                }
            }
        }
    }
    let mut found = Vec::new();
    long_files(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), &mut found);
    assert!(found.is_empty(), "files over {MOST_CODE_LINES} lines of code: {found:#?}");
}

#[test]
fn the_size_cap_counts_code_alone() {
    let code =
        "fn a() {}\n\n// a comment\n/// a doc\nfn b() {} // and a note\n#[cfg(test)]\nmod tests {\n    fn c() {}\n}\n";
    assert_eq!(code_lines(code), 2);
}

#[test]
fn src_has_one_folder_per_layer_and_the_shared_vocabulary_only() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut entries: Vec<String> = std::fs::read_dir(root)
        .unwrap()
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().trim_end_matches(".rs").to_owned())
        .collect();
    entries.sort();
    let mut expected: Vec<String> = LAYERS.iter().chain(&SHARED).map(|name| (*name).to_owned()).collect();
    expected.push("lib".to_owned());
    expected.sort();
    assert_eq!(entries, expected);
}

// The checks themselves, on code made up to break them.

fn made_up(files: &[(&str, &str)]) -> BTreeMap<String, BTreeSet<String>> {
    let sources: Vec<Source> = files
        .iter()
        .map(|(module, code)| Source {
            module: module.split("::").filter(|part| !part.is_empty()).map(str::to_owned).collect(),
            code: code_of(code),
        })
        .collect();
    graph(&sources)
}

#[test]
fn the_check_resolves_use_trees_items_and_super() {
    let edges = made_up(&[
        ("queue::turn", "use crate::{rules::decide::{decide, Rule}, Error};\nuse super::node::LockNode;"),
        ("queue::node", "pub(crate) struct LockNode;"),
        ("rules::decide", "pub(crate) fn decide() {}"),
        ("error", "pub enum Error {}"),
    ]);
    let targets: Vec<&String> = edges["queue::turn"].iter().collect();
    assert_eq!(targets, ["error", "queue::node", "rules::decide"]);
}

#[test]
fn the_check_sees_an_arrow_up_and_a_circle() {
    let edges = made_up(&[
        ("queue::take_lease", "use crate::LockGuard;\nfn f() { crate::queue::node::g() }"),
        ("queue::node", "// crate::lock::guard in a comment is no import\nfn g() { super::take_lease::f() }"),
        ("lock::guard", "pub struct LockGuard;"),
        ("error", "use crate::queue::node;"),
        ("", "pub mod deadlock {\n    pub use crate::queue::node::g;\n}"),
    ]);
    assert_eq!(arrows_against_the_layers(&edges), ["error -> queue::node", "queue::take_lease -> lock::guard"]);
    assert_eq!(cycles(&edges), ["queue::node -> queue::take_lease -> queue::node"]);
}

#[test]
fn the_check_sees_an_import_through_lib_rs() {
    let sources: Vec<Source> =
        [("queue::turn", "use crate::{error::Error, LockGuard};"), ("error", "pub enum Error {}")]
            .iter()
            .map(|(module, code)| Source {
                module: module.split("::").map(str::to_owned).collect(),
                code: code_of(code),
            })
            .collect();
    assert_eq!(paths_through_lib_rs(&sources), ["queue::turn: crate::LockGuard"]);
}
