//! Every snippet a user can copy compiles in a crate that depends on zklock alone. The doctests
//! compile them (README.md, the guide in docs/, rustdoc), but with every dependency of the crate
//! in scope: a snippet naming `zookeeper_client::` directly compiles there and fails with E0433
//! in the user's crate. This test finds such names; `zklock::zookeeper_client::` and
//! `zklock::Client` are what a user has. It reads the repository (the harness's README and
//! source too), so it stays out of the package, as `design_map` does.

use std::path::{Path, PathBuf};

/// Each place in `code` where a path starts with the client crate's own name.
fn bare_client_paths(code: &str) -> usize {
    let needle = "zookeeper_client::";
    code.match_indices(needle)
        .filter(|(at, _)| {
            let before = code[..*at].chars().next_back();
            !before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':')
        })
        .count()
}

/// The code lines of a markdown file's Rust blocks.
fn markdown_rust_lines(text: &str) -> Vec<(usize, String)> {
    let mut lines = Vec::new();
    let mut in_rust = false;
    let mut in_block = false;
    for (number, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if let Some(info) = trimmed.strip_prefix("```") {
            if in_block {
                in_block = false;
                in_rust = false;
            } else {
                in_block = true;
                let lang = info.split(',').next().unwrap_or("").trim();
                in_rust = lang.is_empty() || lang == "rust";
            }
            continue;
        }
        if in_rust {
            lines.push((number + 1, line.to_owned()));
        }
    }
    lines
}

/// The lines of a Rust file a user can copy: the code of its doc comments (`///`, `//!`), or
/// every line for an example.
fn rust_copyable_lines(text: &str, whole: bool) -> Vec<(usize, String)> {
    if whole {
        return text.lines().enumerate().map(|(n, l)| (n + 1, l.to_owned())).collect();
    }
    let docs: String = text
        .lines()
        .map(|line| {
            let trimmed = line.trim_start();
            trimmed.strip_prefix("///").or_else(|| trimmed.strip_prefix("//!")).unwrap_or("").to_owned() + "\n"
        })
        .collect();
    markdown_rust_lines(&docs)
}

fn files(dir: &Path, ext: &str, found: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            files(&path, ext, found);
        } else if path.extension().is_some_and(|e| e == ext) {
            found.push(path);
        }
    }
}

#[test]
fn no_snippet_a_user_can_copy_names_the_client_crate_directly() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut markdown = vec![root.join("README.md"), root.join("testcontainers/README.md"), root.join("cli/README.md")];
    files(&root.join("docs"), "md", &mut markdown);
    let (mut docs, mut examples) = (Vec::new(), Vec::new());
    files(&root.join("src"), "rs", &mut docs);
    files(&root.join("testcontainers/src"), "rs", &mut docs);
    files(&root.join("examples"), "rs", &mut examples);

    let mut found = Vec::new();
    let mut check = |path: &Path, lines: Vec<(usize, String)>| {
        for (number, line) in lines {
            if bare_client_paths(&line) > 0 {
                found.push(format!("{}:{number}: {}", path.strip_prefix(root).unwrap().display(), line.trim()));
            }
        }
    };
    for path in &markdown {
        check(path, markdown_rust_lines(&std::fs::read_to_string(path).unwrap()));
    }
    for path in &docs {
        check(path, rust_copyable_lines(&std::fs::read_to_string(path).unwrap(), false));
    }
    for path in &examples {
        check(path, rust_copyable_lines(&std::fs::read_to_string(path).unwrap(), true));
    }
    assert!(
        found.is_empty(),
        "snippets that do not compile with zklock alone (write zklock::Client or zklock::zookeeper_client::): {found:#?}"
    );
}

#[test]
fn the_check_tells_a_bare_path_from_the_reexport() {
    assert_eq!(bare_client_paths("let c = zookeeper_client::Client::connect(s);"), 1);
    assert_eq!(bare_client_paths("use zookeeper_client::{Acls, Client};"), 1);
    assert_eq!(bare_client_paths("let c = zklock::zookeeper_client::Client::connect(s);"), 0);
    assert_eq!(bare_client_paths("fn f(c: &zklock::Client) {}"), 0);
    let doc = "/// text zookeeper_client::Error\n/// ```\n/// let c = zookeeper_client::Client::connect(s);\n/// ```\n";
    assert_eq!(rust_copyable_lines(doc, false).len(), 1, "only the doc's code lines");
    assert_eq!(
        markdown_rust_lines("```sh\nzookeeper_client::x\n```\n```rust,no_run\nzookeeper_client::y\n```\n").len(),
        1
    );
}
