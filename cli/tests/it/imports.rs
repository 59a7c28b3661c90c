//! The command's modules import one another one way only: a module that two others need is a
//! module of its own below both, never one of the two. It reads `cli/src` as text: every
//! `crate::` and `super::` path and every `mod` line outside comments and unit tests, resolved
//! to the longest module path it starts with (the command re-exports nothing, so the module
//! that a path names is the one that defines the item).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// A module's path, `commands::hold`; the crate root (`main.rs`) is the empty path.
type Module = String;

/// The modules each module imports, from each module's path and code.
fn imports(files: &[(Module, String)]) -> BTreeMap<Module, BTreeSet<Module>> {
    let modules: BTreeSet<&str> = files.iter().map(|(module, _)| module.as_str()).collect();
    let mut edges = BTreeMap::new();
    for (module, code) in files {
        let targets: &mut BTreeSet<Module> = edges.entry(module.clone()).or_default();
        for named in paths_named(module, &without_comments_and_tests(code)) {
            let mut segments: Vec<&str> = named.split("::").collect();
            while !segments.is_empty() && !modules.contains(segments.join("::").as_str()) {
                segments.pop();
            }
            let target = segments.join("::");
            if target != *module {
                targets.insert(target);
            }
        }
    }
    edges
}

/// The code a reader of imports looks at: no unit tests (they close a file and may reach
/// anywhere), no comments.
fn without_comments_and_tests(code: &str) -> String {
    let code = code.split("#[cfg(test)]\nmod tests").next().unwrap_or(code);
    code.lines().map(|line| line.split("//").next().unwrap_or(line)).collect::<Vec<_>>().join("\n")
}

/// Every module path that `code`, in `module`, names: from the root (`crate::a::b`), from its
/// parent (`super::c`), and its own children (`mod d;`).
fn paths_named(module: &str, code: &str) -> Vec<Module> {
    let parent = module.rsplit_once("::").map_or("", |(parent, _)| parent);
    let starts = [("crate::", String::new()), ("super::", parent.to_owned())];
    let mut named = Vec::new();
    for (keyword, base) in starts {
        for (at, _) in code.match_indices(keyword) {
            let before = code[..at].chars().next_back();
            if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':' || c == '$') {
                continue;
            }
            named.extend(use_tree(&code[at + keyword.len()..]).iter().map(|path| joined(&base, path)));
        }
    }
    for line in code.lines() {
        let line = line.trim().trim_start_matches("pub ").trim_start_matches("pub(crate) ");
        if let Some(child) = line.strip_prefix("mod ").and_then(|rest| rest.strip_suffix(';')) {
            named.push(joined(module, child));
        }
    }
    named
}

/// `outer::inner`, where either may be the root (empty).
fn joined(outer: &str, inner: &str) -> String {
    match (outer.is_empty(), inner.is_empty()) {
        (true, _) => inner.to_owned(),
        (false, true) => outer.to_owned(),
        (false, false) => format!("{outer}::{inner}"),
    }
}

/// The paths a use tree (or a path in code) starting at `text` names: `a::{b, c::{d}}` names
/// `a::b` and `a::c::d`.
fn use_tree(text: &str) -> Vec<String> {
    let end = text.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':')).unwrap_or(text.len());
    let prefix = text[..end].trim_end_matches(':');
    let Some(group) = text[end..].strip_prefix('{').filter(|_| text[..end].ends_with("::") || end == 0) else {
        return vec![prefix.to_owned()];
    };
    let (mut items, mut depth, mut start) = (Vec::new(), 0, 0);
    for (at, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                items.push(&group[start..at]);
                break;
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&group[start..at]);
                start = at + 1;
            }
            _ => {}
        }
    }
    let items = items.iter().map(|item| item.trim()).filter(|item| !item.is_empty());
    items.flat_map(use_tree).map(|inner| joined(prefix, &inner)).collect()
}

/// The imports that take part in a circle, as `a -> b`: those whose target leads back.
fn circles(edges: &BTreeMap<Module, BTreeSet<Module>>) -> Vec<String> {
    let leads_to = |start: &Module, goal: &Module| {
        let (mut seen, mut next) = (BTreeSet::new(), vec![start]);
        while let Some(module) = next.pop() {
            if module == goal {
                return true;
            }
            if seen.insert(module) {
                next.extend(edges.get(module).into_iter().flatten());
            }
        }
        false
    };
    let mut found = Vec::new();
    for (from, targets) in edges {
        for to in targets.iter().filter(|to| leads_to(to, from)) {
            found.push(format!("{} -> {}", shown(from), shown(to)));
        }
    }
    found
}

fn shown(module: &str) -> &str {
    if module.is_empty() {
        "main"
    } else {
        module
    }
}

/// Every `.rs` file under `dir` as (module path, text); `main.rs` and `mod.rs` name their folder.
fn read_sources(dir: &Path, module: &[String], found: &mut Vec<(Module, String)>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let mut path = module.to_vec();
        if entry.path().is_dir() {
            path.push(name);
            read_sources(&entry.path(), &path, found);
        } else if let Some(stem) = name.strip_suffix(".rs") {
            if stem != "main" && stem != "mod" {
                path.push(stem.to_owned());
            }
            found.push((path.join("::"), std::fs::read_to_string(entry.path()).unwrap()));
        }
    }
}

#[test]
fn no_two_modules_of_the_command_import_each_other() {
    let mut sources = Vec::new();
    read_sources(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), &[], &mut sources);
    assert!(sources.len() > 10, "read {} files of cli/src", sources.len());
    let found = circles(&imports(&sources));
    assert!(found.is_empty(), "imports that take part in a circle: {found:#?}");
}

#[test]
fn the_check_sees_a_circle_through_an_item_a_group_super_and_a_mod_line() {
    let made_up = |files: &[(&str, &str)]| -> Vec<(Module, String)> {
        files.iter().map(|(module, code)| ((*module).to_owned(), (*code).to_owned())).collect()
    };
    let sources = made_up(&[
        ("", "mod exit;\nmod commands;\nfn main() { crate::exit::report() }"),
        ("exit", "use crate::output::{line, warn};\n// crate::commands::hold in a comment is no import"),
        ("stderr", ""),
        ("output", "use crate::{\n    stderr,\n    exit::{Failure, Outcome},\n};"),
        ("commands", "mod hold;"),
        ("commands::hold", "use crate::exit::Failure;"),
    ]);
    assert_eq!(circles(&imports(&sources)), ["exit -> output", "output -> exit"]);
    let one_way = made_up(&[("exit", "pub struct Failure;"), ("output", "use crate::exit::Failure;")]);
    assert!(circles(&imports(&one_way)).is_empty());
    let through_mod = made_up(&[("commands", "mod hold;"), ("commands::hold", "use super::Shared;")]);
    assert_eq!(circles(&imports(&through_mod)), ["commands -> commands::hold", "commands::hold -> commands"]);
}
