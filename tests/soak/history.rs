//! The shared history of critical sections, and the check of each recipe's rule against it.

use std::collections::BTreeMap;
use std::time::Instant;

use super::recipe::{Mode, Recipe, Resource, MAX_LEASES};

/// One critical section on one resource, as its holder saw it.
#[derive(Clone, Debug)]
pub struct Section {
    pub client: usize,
    pub recipe: Recipe,
    pub resource: Resource,
    pub start: Instant,
    /// When the holder stopped: before its release, or when it was told of its loss. The
    /// holder was not relying on the lock after this, so any overlap past it is not a conflict.
    pub end: Instant,
    pub token: i64,
    /// Whether the holder was told of a loss (that is what ended the section).
    pub told_lost: bool,
}

/// A section that began while sections already on its resource excluded it.
#[derive(Debug)]
pub struct Conflict {
    pub recipe: Recipe,
    pub description: String,
}

/// Checks every resource's sections against its rule: exclusive sections overlap nothing,
/// readers overlap readers only, and at most `MAX_LEASES` leases overlap. A section's `end` is
/// when its holder stopped relying on the lock, so every overlap left is a violation.
pub fn conflicts(sections: &[Section]) -> Vec<Conflict> {
    let mut by_resource: BTreeMap<Resource, Vec<&Section>> = BTreeMap::new();
    for section in sections {
        by_resource.entry(section.resource).or_default().push(section);
    }
    let mut found = Vec::new();
    for (resource, mut sections) in by_resource {
        sections.sort_by_key(|section| section.start);
        let mut active: Vec<&Section> = Vec::new();
        for section in sections {
            active.retain(|earlier| earlier.end > section.start);
            if !admits(&active, section.recipe.mode()) {
                let holders: Vec<String> = active
                    .iter()
                    .map(|earlier| {
                        let told = if earlier.told_lost { ", told of its loss at its end" } else { "" };
                        format!("client {} ({}, token {}{told})", earlier.client, earlier.recipe.name(), earlier.token)
                    })
                    .collect();
                found.push(Conflict {
                    recipe: section.recipe,
                    description: format!(
                        "{resource:?}: client {} ({}, token {}) began while {} held",
                        section.client,
                        section.recipe.name(),
                        section.token,
                        holders.join(", ")
                    ),
                });
            }
            active.push(section);
        }
    }
    found
}

/// Whether a section of `mode` may begin while `active` sections hold the same resource.
fn admits(active: &[&Section], mode: Mode) -> bool {
    match mode {
        Mode::Exclusive => active.is_empty(),
        Mode::Shared => active.iter().all(|earlier| earlier.recipe.mode() == Mode::Shared),
        Mode::Lease => active.iter().all(|earlier| earlier.recipe.mode() == Mode::Lease) && active.len() < MAX_LEASES,
    }
}
