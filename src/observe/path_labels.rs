//! The `path` label of metrics: one value per path, up to a limit per process.
//!
//! For the locks whose builder asked for it; past the limit, one shared value (see
//! [`PATH_LABELS`]).

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use super::metrics::{OTHER_PATHS, PATH_LABELS};

/// The `path` label of a lock on `path` in this process.
pub(crate) fn path_label(path: &Arc<str>) -> metrics::SharedString {
    static GIVEN: PathLabels = PathLabels::new(PATH_LABELS);
    GIVEN.label(path)
}

/// The `path` label values given so far: each distinct path takes one, up to `limit`; the
/// paths after those share [`OTHER_PATHS`].
struct PathLabels {
    limit: usize,
    given: Mutex<BTreeSet<Arc<str>>>,
    warned: AtomicBool,
}

impl PathLabels {
    const fn new(limit: usize) -> Self {
        PathLabels { limit, given: Mutex::new(BTreeSet::new()), warned: AtomicBool::new(false) }
    }

    /// The `path` label of a lock on `path`; warns the first time a path gets [`OTHER_PATHS`].
    fn label(&self, path: &Arc<str>) -> metrics::SharedString {
        let mut given = self.given.lock().unwrap_or_else(PoisonError::into_inner);
        if given.contains(path) || given.len() < self.limit && given.insert(path.clone()) {
            return metrics::SharedString::from(path.clone());
        }
        drop(given);
        if !self.warned.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                target: "zklock",
                path = &**path,
                limit = self.limit,
                label = OTHER_PATHS,
                "metric path labels used up"
            );
        }
        metrics::SharedString::const_str(OTHER_PATHS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn label(paths: &PathLabels, path: &str) -> String {
        paths.label(&Arc::from(path)).to_string()
    }

    #[test]
    fn paths_past_the_limit_share_one_label_and_the_first_ones_keep_theirs() {
        let paths = PathLabels::new(2);
        assert_eq!(label(&paths, "/a"), "/a");
        assert_eq!(label(&paths, "/b"), "/b");
        assert_eq!(label(&paths, "/c"), OTHER_PATHS);
        assert_eq!(label(&paths, "/a"), "/a", "a path with a label keeps it when locked again");
        assert_eq!(label(&paths, "/d"), OTHER_PATHS);
        assert_eq!(label(&paths, "/c"), OTHER_PATHS, "nor does a path past the limit get one later");
        assert_eq!(paths.given.lock().unwrap().len(), 2);
        assert!(paths.warned.load(Ordering::Relaxed));
    }
}
