//! DESIGN.md drifts unless something checks it: every file it names exists. A name with a
//! folder is looked up from the repository's root and from each crate's `src/` and `tests/`; a
//! bare file name (the map's "driver/: path.rs, naming.rs, ...") anywhere in the repository.

use std::path::{Path, PathBuf};

/// Where a path that DESIGN.md writes with a folder may start.
const BASES: [&str; 7] = ["", "src", "tests", "benches", "cli/src", "testcontainers/src", "interop"];

/// The file names with these extensions that `text` mentions.
fn named_files(text: &str) -> Vec<String> {
    let mut names: Vec<String> = text
        .split(|c: char| !(c.is_ascii_alphanumeric() || "_./-".contains(c)))
        .map(|word| word.trim_matches(|c| c == '.' || c == '/'))
        .filter(|word| [".rs", ".java", ".py", ".md"].iter().any(|ext| word.ends_with(ext)))
        .filter(|word| !word.starts_with("http") && !word.contains("//"))
        .map(str::to_owned)
        .collect();
    names.sort();
    names.dedup();
    names
}

/// Every file under `dir`, skipping build output and hidden folders.
fn files_under(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') || name == "target" {
            continue;
        }
        if path.is_dir() {
            files_under(&path, found);
        } else {
            found.push(path);
        }
    }
}

#[test]
fn every_file_design_md_names_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let design = std::fs::read_to_string(root.join("DESIGN.md")).unwrap();
    let mut all = Vec::new();
    files_under(root, &mut all);
    let missing: Vec<String> = named_files(&design)
        .into_iter()
        .filter(|name| {
            if name.contains('/') {
                !BASES.iter().any(|base| root.join(base).join(name).exists())
            } else {
                !all.iter().any(|file| file.file_name().is_some_and(|file| file.to_string_lossy() == *name))
            }
        })
        .collect();
    assert!(missing.is_empty(), "DESIGN.md names files that do not exist: {missing:?}");
}

#[test]
fn the_check_sees_a_name_that_does_not_exist() {
    assert_eq!(named_files("see `internals/loss.rs` and queue.rs."), ["internals/loss.rs", "queue.rs"]);
}

/// The folders of `src/` that `design` leaves out of its map (where each is `src/NAME/`).
fn unmapped_folders(design: &str, folders: &[String]) -> Vec<String> {
    folders.iter().filter(|folder| !design.contains(&format!("src/{folder}/"))).cloned().collect()
}

#[test]
fn every_folder_of_src_is_in_the_map() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let design = std::fs::read_to_string(root.join("DESIGN.md")).unwrap();
    let folders: Vec<String> = std::fs::read_dir(root.join("src"))
        .unwrap()
        .flatten()
        .filter(|entry| entry.path().is_dir())
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(!folders.is_empty());
    let missing = unmapped_folders(&design, &folders);
    assert!(missing.is_empty(), "DESIGN.md's map leaves out these folders of src/: {missing:?}");
}

#[test]
fn the_check_sees_a_folder_left_out() {
    let folders = ["queue".to_owned(), "rules".to_owned()];
    assert_eq!(unmapped_folders("src/queue/   the engine", &folders), ["rules"]);
}

/// Why `text`'s opening is not a one-line summary, if it is not: a `//!` line ending a sentence,
/// alone in its paragraph.
fn summary_problem(text: &str) -> Option<&'static str> {
    let mut lines = text.lines();
    let first = lines.next().unwrap_or_default();
    if !first.starts_with("//! ") || !first.ends_with('.') {
        return Some("does not open with a `//!` sentence");
    }
    match lines.next() {
        Some(second) if second.starts_with("//! ") => Some("its opening `//!` sentence runs onto a second line"),
        _ => None,
    }
}

/// The file inventory is each file's first line (`grep -rm1 --include='*.rs' '^//!' src | sort` prints
/// it), so DESIGN.md's map can stop at the folders: every file of `src/` opens with a one-line
/// summary.
#[test]
fn every_file_of_src_opens_with_a_one_line_summary() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut all = Vec::new();
    files_under(&root.join("src"), &mut all);
    let unsummed: Vec<String> = all
        .iter()
        .filter(|path| path.extension().is_some_and(|ext| ext == "rs"))
        .filter_map(|path| {
            let text = std::fs::read_to_string(path).unwrap();
            summary_problem(&text).map(|problem| format!("{}: {problem}", path.display()))
        })
        .collect();
    assert!(unsummed.is_empty(), "{unsummed:#?}");
}

#[test]
fn the_check_sees_an_opening_that_is_no_one_line_summary() {
    assert_eq!(summary_problem("//! What a lock is.\n//!\n//! More.\n"), None);
    assert_eq!(summary_problem("//! What a lock is.\n\nuse std::fmt;\n"), None);
    assert!(summary_problem("//! What a lock is, and\n//! how it is taken.\n").is_some());
    assert!(summary_problem("//! What a lock is.\n//! More of the same paragraph.\n").is_some());
    assert!(summary_problem("use std::fmt;\n").is_some());
}
