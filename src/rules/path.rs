//! Which paths can be lock paths, and how a child's path is written.

use crate::error::{Error, Result};

/// Checks `path` as a lock path, without asking ZooKeeper (every recipe's constructor does the
/// same; use it to check configuration early): an absolute ZooKeeper path, not the root, not under the
/// reserved `/zookeeper`, with no empty, `.` or `..` segment and none of the characters
/// ZooKeeper refuses (`PathUtils.validatePath`).
///
/// # Errors
/// [`Error::InvalidPath`] saying what is wrong.
pub fn validate_lock_path(path: &str) -> Result<()> {
    let invalid = |reason| Err(Error::InvalidPath { path: path.to_owned(), reason });
    if path.is_empty() {
        return invalid("empty");
    }
    if !path.starts_with('/') {
        return invalid("must be absolute (start with '/')");
    }
    if path == "/" {
        return invalid("the root cannot be a lock path");
    }
    if path.ends_with('/') {
        return invalid("must not end with '/'");
    }
    if let Some(bad) = path.chars().find(|&c| is_forbidden_char(c)) {
        return invalid(match bad {
            '\0' => "contains a NUL character",
            '\u{10000}'.. => {
                "contains a character outside the Basic Multilingual Plane (an emoji, say), which ZooKeeper refuses"
            }
            _ => "contains a character ZooKeeper refuses",
        });
    }
    for segment in path[1..].split('/') {
        match segment {
            "" => return invalid("has an empty segment ('//')"),
            "." | ".." => return invalid("has a '.' or '..' segment"),
            _ => {}
        }
    }
    if path == "/zookeeper" || path.starts_with("/zookeeper/") {
        return invalid("/zookeeper is reserved for the server");
    }
    Ok(())
}

/// ZooKeeper's `PathUtils.validatePath` refuses these UTF-16 code units; a character beyond
/// U+FFFF is two of them, surrogates, which it refuses too.
/// `{parent}/{name}`: the path of a child node.
pub(crate) fn child_path(parent: &str, name: &str) -> String {
    concat(&[parent, "/", name])
}

/// The parts one after another, in a string allocated once at its final size. What every
/// acquire names (its node, its prefix, its predecessor) is written this way: `format!` grows
/// its string as it goes and pads every argument, which cost the plain acquire a few thousand
/// instructions (`scripts/check-instructions`).
pub(crate) fn concat(parts: &[&str]) -> String {
    let mut joined = String::with_capacity(parts.iter().map(|part| part.len()).sum());
    for part in parts {
        joined.push_str(part);
    }
    joined
}

fn is_forbidden_char(c: char) -> bool {
    matches!(c, '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}' | '\u{e000}'..='\u{f8ff}' | '\u{fff0}'..)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reason(path: &str) -> &'static str {
        match validate_lock_path(path) {
            Err(Error::InvalidPath { reason, .. }) => reason,
            other => panic!("{path:?} should be invalid, got {other:?}"),
        }
    }

    #[test]
    fn accepts_ordinary_lock_paths() {
        for path in ["/locks", "/a/b/c", "/app/locks/order-42", "/zookeeperish", "/x/zookeeper", "/ünïcödé", "/a.b/..c"]
        {
            assert!(validate_lock_path(path).is_ok(), "{path:?}");
        }
    }

    #[test]
    fn rejects_each_kind_of_bad_path_with_its_reason() {
        assert_eq!(reason(""), "empty");
        assert_eq!(reason("relative"), "must be absolute (start with '/')");
        assert_eq!(reason("/"), "the root cannot be a lock path");
        assert_eq!(reason("/trailing/"), "must not end with '/'");
        assert_eq!(reason("/a//b"), "has an empty segment ('//')");
        assert_eq!(reason("/a/./b"), "has a '.' or '..' segment");
        assert_eq!(reason("/a/.."), "has a '.' or '..' segment");
        assert_eq!(reason("/zookeeper"), "/zookeeper is reserved for the server");
        assert_eq!(reason("/zookeeper/quota"), "/zookeeper is reserved for the server");
        assert_eq!(reason("/a\0b"), "contains a NUL character");
        assert!(reason("/locks/\u{1f512}").starts_with("contains a character outside the Basic Multilingual Plane"));
        assert_eq!(reason("/a\u{7}b"), "contains a character ZooKeeper refuses");
        assert_eq!(reason("/a\u{fff5}"), "contains a character ZooKeeper refuses");
    }
}
