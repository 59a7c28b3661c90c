//! The shared history of critical sections, and the check of each recipe's rule against it.

use std::collections::BTreeMap;
use std::time::Instant;

use super::operator::Deletion;
use super::recipe::{Mode, Recipe, Resource, MAX_LEASES};
use crate::common::NOTIFICATION_WINDOW;

/// One critical section on one resource, as its holder saw it.
#[derive(Clone, Debug)]
pub struct Section {
    pub client: usize,
    pub recipe: Recipe,
    pub resource: Resource,
    /// The node the hold was on.
    pub node: String,
    /// When its acquire began (an election's term has none).
    pub invoked: Option<Instant>,
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
    pub resource: Resource,
    /// The fencing token of the section that began.
    pub token: i64,
    pub description: String,
}

/// What the history shows.
#[derive(Debug, Default)]
pub struct Checked {
    pub conflicts: Vec<Conflict>,
    /// The most sections seen at once on each resource: proof that sharing (readers, leases)
    /// really happened, so their rule was put to the test.
    pub peaks: BTreeMap<Resource, usize>,
    /// Holds passed on within a client less than the notification window after their node's
    /// deletion: left out, and counted so that the run says how often it forgave.
    pub passes_forgiven: usize,
    /// The sections the rules were checked on: each ended at its holder's end or its node's
    /// deletion, the forgiven passes and the ghosts left out.
    pub kept: Vec<Section>,
}

/// Checks every resource's sections against its rule: exclusive sections overlap nothing,
/// readers overlap readers only, and at most `MAX_LEASES` leases overlap. A section's `end` is
/// when its holder stopped relying on the lock, or when the operator sent the delete of its node
/// (`deleted` says when, if it did; only deletes known to have run): nobody can know of that in
/// time, and fencing is what protects there. So every overlap left is a violation; and so is a
/// section on a node the operator's delete had already removed when it began (`done`): a holder
/// whose node was gone while it waited (a ghost). Except a
/// hold passed on within its client (local handoff) less than [`NOTIFICATION_WINDOW`] after the
/// deletion: the deletion's event may still be on its way, and the client makes no request to
/// pass a hold on; that is the client's hold going on, as any holder's does until it is told,
/// fenced the same way (the next node's tokens are all higher), and it is left out. A pass any
/// later is a violation.
pub fn check(sections: &[Section], deleted: impl Fn(&str) -> Option<Deletion>) -> Checked {
    let mut checked = Checked::default();
    let mut cut = Vec::with_capacity(sections.len());
    for section in sections {
        let mut section = section.clone();
        match deleted(&section.node) {
            Some(deleted)
                if deleted.done <= section.start
                    && section.recipe.passed_on(section.token)
                    && section.start < deleted.sent + NOTIFICATION_WINDOW =>
            {
                checked.passes_forgiven += 1;
                continue;
            }
            Some(deleted) if deleted.done <= section.start => checked.conflicts.push(Conflict {
                recipe: section.recipe,
                resource: section.resource,
                token: section.token,
                description: format!(
                    "{:?}: client {} ({}, token {}) held on {}, which the operator had deleted while it waited",
                    section.resource,
                    section.client,
                    section.recipe.name(),
                    section.token,
                    section.node
                ),
            }),
            Some(deleted) => section.end = section.end.min(deleted.sent),
            None => {}
        }
        cut.push(section);
    }
    let mut by_resource: BTreeMap<Resource, Vec<&Section>> = BTreeMap::new();
    let cut: Vec<Section> = cut.into_iter().filter(|section| section.end > section.start).collect();
    for section in &cut {
        by_resource.entry(section.resource).or_default().push(section);
    }
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
                checked.conflicts.push(Conflict {
                    recipe: section.recipe,
                    resource,
                    token: section.token,
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
            let peak = checked.peaks.entry(resource).or_default();
            *peak = (*peak).max(active.len());
        }
    }
    checked.kept = cut;
    checked
}

/// Writes `kept` to `path` as a lock history anyone can check (`zklock_testcontainers::history`:
/// each acquire's `invoke`, each hold's `ok` with its token, and its `release`, or `loss` when
/// its holder was told),
/// reads the file back and checks it with that checker, which must agree with the soak's own.
pub fn write_and_check(kept: &[Section], path: &std::path::Path) -> std::io::Result<HistoryReport> {
    use zklock_testcontainers::history::{Event, Kind, Mode as HistoryMode};
    let Some(base) = kept.iter().map(|section| section.invoked.unwrap_or(section.start).min(section.start)).min()
    else {
        return Ok(HistoryReport::default());
    };
    let us = |at: Instant| at.duration_since(base).as_micros() as u64;
    let mut lines = String::new();
    for (index, section) in kept.iter().enumerate() {
        // One name per hold: a client's acquires side by side (local handoff) hold apart.
        let (client, resource) = (format!("client {} hold {index}", section.client), format!("{:?}", section.resource));
        let mode = match section.recipe.mode() {
            Mode::Exclusive => HistoryMode::Exclusive,
            Mode::Shared => HistoryMode::Shared,
            Mode::Lease => HistoryMode::Leases(MAX_LEASES),
        };
        let ended = if section.told_lost { Kind::Loss } else { Kind::Release };
        let invoked = section.invoked.map(|at| (at, Kind::Invoke));
        let events = [(section.start, Kind::Ok { mode, token: section.token }), (section.end, ended)];
        for (at, kind) in invoked.into_iter().chain(events) {
            let event = Event { at_us: us(at), client: client.clone(), resource: resource.clone(), kind };
            lines.push_str(&event.to_line());
            lines.push('\n');
        }
    }
    std::fs::write(path, lines)?;
    let events: Vec<Event> = std::fs::read_to_string(path)?
        .lines()
        .map(|line| Event::from_line(line).expect("a line the soak wrote reads back"))
        .collect();
    Ok(zklock_testcontainers::history::check(&events))
}

/// What the history checker found.
pub type HistoryReport = zklock_testcontainers::history::Report;

/// Whether a section of `mode` may begin while `active` sections hold the same resource.
fn admits(active: &[&Section], mode: Mode) -> bool {
    match mode {
        Mode::Exclusive => active.is_empty(),
        Mode::Shared => active.iter().all(|earlier| earlier.recipe.mode() == Mode::Shared),
        Mode::Lease => active.iter().all(|earlier| earlier.recipe.mode() == Mode::Lease) && active.len() < MAX_LEASES,
    }
}

#[test]
fn check_flags_each_broken_rule_and_nothing_else() {
    use Recipe::*;
    use Resource::{Multi, ReadWrite};
    let base = Instant::now();
    // (client, recipe, resource, from ms, to ms, whether it breaks the rule): allowed sharing
    // first, then each rule broken once.
    let history = [
        (0, Mutex, Resource::Mutex, 0, 10, false),
        (1, Mutex, Resource::Mutex, 10, 20, false),
        (0, Read, ReadWrite, 0, 10, false),
        (1, Read, ReadWrite, 5, 15, false),
        (2, Write, ReadWrite, 15, 20, false),
        (0, Semaphore, Resource::Semaphore, 0, 10, false),
        (1, Semaphore, Resource::Semaphore, 5, 15, false),
        (2, Semaphore, Resource::Semaphore, 10, 20, false),
        (0, MultiLock, Multi(0), 0, 10, false),
        (1, MultiLock, Multi(1), 5, 10, false),
        (0, SemaphoreMutex, Resource::SemaphoreMutex, 100, 110, false),
        (1, SemaphoreMutex, Resource::SemaphoreMutex, 109, 120, true),
        (0, Read, ReadWrite, 100, 110, false),
        (1, Write, ReadWrite, 105, 115, true),
        (2, Write, ReadWrite, 120, 130, false),
        (3, Read, ReadWrite, 125, 135, true),
        (0, Semaphore, Resource::Semaphore, 100, 110, false),
        (1, Semaphore, Resource::Semaphore, 101, 110, false),
        (2, Semaphore, Resource::Semaphore, 102, 110, true),
        (0, MultiLock, Multi(1), 100, 110, false),
        (1, MultiLock, Multi(1), 105, 110, true),
    ];
    let sections: Vec<Section> = history
        .iter()
        .map(|&(client, recipe, resource, from, to, _)| Section {
            client,
            recipe,
            resource,
            node: format!("{resource:?}-{from}"),
            invoked: None,
            start: base + std::time::Duration::from_millis(from),
            end: base + std::time::Duration::from_millis(to),
            token: from as i64,
            told_lost: false,
        })
        .collect();
    let checked = check(&sections, |_| None);
    let mut found: Vec<(Resource, i64)> =
        checked.conflicts.iter().map(|conflict| (conflict.resource, conflict.token)).collect();
    found.sort();
    let mut breaking: Vec<(Resource, i64)> =
        history.iter().filter(|row| row.5).map(|&(_, _, resource, from, ..)| (resource, from as i64)).collect();
    breaking.sort();
    assert_eq!(found, breaking, "{checked:?}");
    let peaks: Vec<usize> = checked.peaks.values().copied().collect();
    assert_eq!(peaks, [1, 2, 3, 2, 1, 2], "mutex (back to back), readers, leases, mutex, multi paths");
}

#[test]
fn check_ends_a_section_when_the_operator_deleted_its_node_and_flags_a_ghost() {
    use std::time::Duration;
    let base = Instant::now();
    let at = |ms| base + Duration::from_millis(ms);
    let section = |client, node: &str, from, to| Section {
        client,
        recipe: Recipe::Mutex,
        resource: Resource::Mutex,
        node: node.to_owned(),
        invoked: None,
        start: at(from),
        end: at(to),
        token: from as i64,
        told_lost: false,
    };
    // The holder of a deleted node is not told in time: its successor overlaps it, forgiven.
    let deleted_holder = [section(0, "a", 0, 50), section(1, "b", 20, 30)];
    let deleted = |node: &str| (node == "a").then(|| Deletion { sent: at(10), done: at(10) });
    assert!(check(&deleted_holder, deleted).conflicts.is_empty());
    assert_eq!(check(&deleted_holder, |_| None).conflicts.len(), 1, "not deleted: two holders");
    // A waiter whose node was deleted and that holds anyway is a ghost, and overlaps the holder.
    let ghost = [section(0, "a", 0, 50), section(1, "b", 20, 30)];
    let deleted = |node: &str| (node == "b").then(|| Deletion { sent: at(10), done: at(10) });
    assert_eq!(check(&ghost, deleted).conflicts.len(), 2, "{:?}", check(&ghost, deleted));
}

#[test]
fn check_leaves_out_a_hold_passed_on_within_a_notification_of_its_deletion_and_no_later() {
    use std::time::Duration;
    let base = Instant::now();
    let at = |ms| base + Duration::from_millis(ms);
    let section = |client, node: &str, from, to, token| Section {
        client,
        recipe: Recipe::HandoffMutex,
        resource: Resource::HandoffMutex,
        node: node.to_owned(),
        invoked: None,
        start: at(from),
        end: at(to),
        token,
        told_lost: false,
    };
    // Node "a" (czxid 1) is deleted at 10 ms and "b" (czxid 2) held from 20 ms: "a"'s first
    // holder is cut at the deletion, its second (passed on at 30 ms) left out.
    let passed_on = [section(0, "a", 0, 30, 256), section(0, "a", 30, 60, 257), section(1, "b", 20, 70, 512)];
    let deleted = |node: &str| (node == "a").then(|| Deletion { sent: at(10), done: at(10) });
    assert!(check(&passed_on, deleted).conflicts.is_empty(), "{:?}", check(&passed_on, deleted));
    // Passed on past a notification's delay after the deletion: the client went on unheeding.
    let late = NOTIFICATION_WINDOW.as_millis() as u64 + 20;
    let passed_on_late = [section(0, "a", 0, late, 256), section(0, "a", late, late + 30, 257)];
    assert_eq!(check(&passed_on_late, deleted).conflicts.len(), 1);
    // A node's first holder is no handoff: after the deletion, a ghost.
    let first_holder = [section(0, "a", 30, 60, 256)];
    assert_eq!(check(&first_holder, deleted).conflicts.len(), 1);
}
