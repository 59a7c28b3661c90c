//! A lock history anyone can write and check: each line of a file is one JSON event, from any
//! program and any number of processes (their clocks must be one monotonic clock, or times
//! close enough for the check to be meaningful), and [`check`] reads the whole history and says
//! where the locks' rules broke. The fault soak writes its history this way and checks it with
//! this checker; the `zklock-history` command checks a file a user's own run wrote.
//!
//! An event is an object on one line:
//! - `{"at_us": 100, "client": "a", "resource": "/locks/x", "event": "invoke"}`: an acquire
//!   began (optional: a history written before invokes existed, or by a writer that leaves them
//!   out, is checked without them);
//! - `{"at_us": 120, "client": "a", "resource": "/locks/x", "mode": "exclusive", "event": "ok", "token": 42}`:
//!   a hold began (`mode`: `"exclusive"`, `"shared"` for readers, or `"lease:N"` for a semaphore of
//!   `N` leases);
//! - `"event": "release"` or `"event": "loss"` (told of a loss): the holder stopped relying on it;
//! - `"event": "write"` with `"token"` and `"accepted": true|false`: a fenced write to the resource.
//!
//! What [`check`] proves: mutual exclusion over each hold's section, from its `ok` to its
//! `release` or `loss` (a hold never closed runs past the end of the history); fencing tokens that
//! strictly rise from one exclusive hold to the next; and fenced writes that behave as a
//! register that refuses stale tokens: every accepted token at or above every token accepted
//! before it, every refused one below one accepted before it. A client that writes invokes for a
//! resource must write one before each of its `ok`s there: an `ok` with no invoke open before
//! it (none, or one already answered, or the invoke written later than the `ok`) is reported,
//! since its hold cannot have begun before its acquire did.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// How holds of one resource may overlap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Alone.
    Exclusive,
    /// Beside other shared holds only (readers).
    Shared,
    /// Beside at most `n - 1` other leases.
    Leases(usize),
}

impl Mode {
    fn parse(text: &str) -> Option<Mode> {
        match text {
            "exclusive" => Some(Mode::Exclusive),
            "shared" => Some(Mode::Shared),
            _ => text.strip_prefix("lease:").and_then(|n| n.parse().ok()).map(Mode::Leases),
        }
    }

    fn name(self) -> String {
        match self {
            Mode::Exclusive => "exclusive".into(),
            Mode::Shared => "shared".into(),
            Mode::Leases(n) => format!("lease:{n}"),
        }
    }
}

/// What happened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    /// An acquire began (its `ok`, if it holds, comes after).
    Invoke,
    /// A hold began.
    Ok {
        /// How it may share its resource.
        mode: Mode,
        /// Its fencing token.
        token: i64,
    },
    /// The holder let go.
    Release,
    /// The holder was told the hold was lost.
    Loss,
    /// A fenced write to the resource.
    Write {
        /// The token it carried.
        token: i64,
        /// Whether the resource took it.
        accepted: bool,
    },
}

/// One event of a history.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// Microseconds on one monotonic clock.
    pub at_us: u64,
    /// Who: a client, process or task, as the writer names it.
    pub client: String,
    /// What is locked (a lock path, a resource name).
    pub resource: String,
    /// What happened.
    pub kind: Kind,
}

impl Event {
    /// The event as one line of JSON.
    pub fn to_line(&self) -> String {
        let mut line = serde_json::json!({ "at_us": self.at_us, "client": self.client, "resource": self.resource });
        let fields = line.as_object_mut().expect("an object");
        match &self.kind {
            Kind::Invoke => drop(fields.insert("event".into(), "invoke".into())),
            Kind::Ok { mode, token } => {
                fields.insert("event".into(), "ok".into());
                fields.insert("mode".into(), mode.name().into());
                fields.insert("token".into(), (*token).into());
            }
            Kind::Release => drop(fields.insert("event".into(), "release".into())),
            Kind::Loss => drop(fields.insert("event".into(), "loss".into())),
            Kind::Write { token, accepted } => {
                fields.insert("event".into(), "write".into());
                fields.insert("token".into(), (*token).into());
                fields.insert("accepted".into(), (*accepted).into());
            }
        }
        line.to_string()
    }

    /// Reads one line; the error says what is wrong with it.
    pub fn from_line(line: &str) -> Result<Event, String> {
        let value: serde_json::Value = serde_json::from_str(line).map_err(|err| err.to_string())?;
        let text = |name: &str| value[name].as_str().map(str::to_owned).ok_or(format!("no string \"{name}\""));
        let number = |name: &str| value[name].as_i64().ok_or(format!("no integer \"{name}\""));
        let kind = match text("event")?.as_str() {
            "invoke" => Kind::Invoke,
            "ok" => {
                let mode = Mode::parse(&text("mode")?).ok_or("\"mode\" is not exclusive, shared or lease:N")?;
                Kind::Ok { mode, token: number("token")? }
            }
            "release" => Kind::Release,
            "loss" => Kind::Loss,
            "write" => Kind::Write {
                token: number("token")?,
                accepted: value["accepted"].as_bool().ok_or("no boolean \"accepted\"")?,
            },
            other => return Err(format!("unknown event {other:?}")),
        };
        let at_us = value["at_us"].as_u64().ok_or("no integer \"at_us\"")?;
        Ok(Event { at_us, client: text("client")?, resource: text("resource")?, kind })
    }
}

/// A rule a history broke.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// When (the event that broke it).
    pub at_us: u64,
    /// Where.
    pub resource: String,
    /// How.
    pub what: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at {} us: {}", self.resource, self.at_us, self.what)
    }
}

/// What a history shows.
#[derive(Debug, Default)]
pub struct Report {
    /// Holds seen (sections).
    pub holds: usize,
    /// Fenced writes seen.
    pub writes: usize,
    /// Acquires begun (invokes) seen.
    pub invokes: usize,
    /// The rules broken, in time order.
    pub violations: Vec<Violation>,
}

/// One hold, open or closed.
struct Section<'a> {
    client: &'a str,
    mode: Mode,
    token: i64,
    start: u64,
    end: u64,
}

/// Checks `events` (in any order: they are sorted by time, a hold's end before another's
/// beginning at the same instant, an invoke before its `ok` at the same instant) against the
/// rules in the module docs.
pub fn check(events: &[Event]) -> Report {
    let mut order: Vec<&Event> = events.iter().collect();
    order.sort_by_key(|event| {
        let rank = match event.kind {
            Kind::Release | Kind::Loss => 0,
            Kind::Invoke => 1,
            _ => 2,
        };
        (event.at_us, rank)
    });
    let mut report = Report::default();
    // Who writes invokes, per resource: only their `ok`s must follow one.
    let invoking: BTreeSet<(&str, &str)> = events
        .iter()
        .filter(|event| event.kind == Kind::Invoke)
        .map(|event| (event.resource.as_str(), event.client.as_str()))
        .collect();
    let mut invoked: BTreeSet<(&str, &str)> = BTreeSet::new();
    let mut by_resource: BTreeMap<&str, Vec<Section<'_>>> = BTreeMap::new();
    let mut open: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    let mut register: BTreeMap<&str, i64> = BTreeMap::new();
    for event in &order {
        let (resource, client) = (event.resource.as_str(), event.client.as_str());
        let violation = |what: String| Violation { at_us: event.at_us, resource: resource.to_owned(), what };
        match &event.kind {
            Kind::Invoke => {
                report.invokes += 1;
                invoked.insert((resource, client));
            }
            Kind::Ok { mode, token } => {
                if invoking.contains(&(resource, client)) && !invoked.remove(&(resource, client)) {
                    report.violations.push(violation(format!(
                        "{client}'s hold with token {token} began with no acquire invoked before it"
                    )));
                }
                let sections = by_resource.entry(resource).or_default();
                open.insert((resource, client), sections.len());
                sections.push(Section { client, mode: *mode, token: *token, start: event.at_us, end: u64::MAX });
            }
            Kind::Release | Kind::Loss => {
                if let Some(at) = open.remove(&(resource, client)) {
                    by_resource.get_mut(resource).expect("opened")[at].end = event.at_us;
                }
            }
            Kind::Write { token, accepted } => {
                report.writes += 1;
                let highest = register.get(resource).copied();
                match (accepted, highest) {
                    (true, Some(highest)) if *token < highest => report.violations.push(violation(format!(
                        "{client}'s write with token {token} was accepted after one with {highest}"
                    ))),
                    (false, None) => report.violations.push(violation(format!(
                        "{client}'s write with token {token} was refused, nothing accepted before"
                    ))),
                    (false, Some(highest)) if *token >= highest => report.violations.push(violation(format!(
                        "{client}'s write with token {token} was refused, the highest accepted being {highest}"
                    ))),
                    _ => {}
                }
                if *accepted {
                    register.insert(resource, highest.map_or(*token, |highest| highest.max(*token)));
                }
            }
        }
    }
    for (resource, sections) in &by_resource {
        report.holds += sections.len();
        report.violations.extend(overlaps(resource, sections));
    }
    report.violations.sort_by_key(|violation| violation.at_us);
    report
}

/// The overlaps the modes forbid, and exclusive tokens that do not rise, on one resource.
fn overlaps(resource: &str, sections: &[Section<'_>]) -> Vec<Violation> {
    let mut violations = Vec::new();
    let mut starts: Vec<&Section<'_>> = sections.iter().collect();
    starts.sort_by_key(|section| section.start);
    let mut active: Vec<&Section<'_>> = Vec::new();
    let mut last_exclusive: Option<&Section<'_>> = None;
    for section in starts {
        active.retain(|earlier| earlier.end > section.start);
        let admitted = match section.mode {
            Mode::Exclusive => active.is_empty(),
            Mode::Shared => active.iter().all(|earlier| earlier.mode == Mode::Shared),
            Mode::Leases(n) => active.iter().all(|earlier| matches!(earlier.mode, Mode::Leases(_))) && active.len() < n,
        };
        let violation = |what: String| Violation { at_us: section.start, resource: resource.to_owned(), what };
        if !admitted {
            let holders: Vec<String> =
                active.iter().map(|earlier| format!("{} ({})", earlier.client, earlier.token)).collect();
            violations.push(violation(format!(
                "{} ({}) began to hold while {} held",
                section.client,
                section.token,
                holders.join(", ")
            )));
        }
        if section.mode == Mode::Exclusive {
            if let Some(before) = last_exclusive.filter(|before| section.token <= before.token) {
                violations.push(violation(format!(
                    "{}'s token {} is not above {}'s {} before it",
                    section.client, section.token, before.client, before.token
                )));
            }
            last_exclusive = Some(section);
        }
        active.push(section);
    }
    violations
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(at_us: u64, client: &str, kind: Kind) -> Event {
        Event { at_us, client: client.into(), resource: "/r".into(), kind }
    }

    fn ok(at_us: u64, client: &str, mode: Mode, token: i64) -> Event {
        event(at_us, client, Kind::Ok { mode, token })
    }

    #[test]
    fn a_clean_history_has_no_violation_and_every_line_reads_back() {
        let history = [
            ok(0, "a", Mode::Exclusive, 1),
            event(5, "a", Kind::Write { token: 1, accepted: true }),
            event(10, "a", Kind::Release),
            ok(10, "b", Mode::Exclusive, 2),
            event(11, "b", Kind::Write { token: 2, accepted: true }),
            event(12, "a", Kind::Write { token: 1, accepted: false }),
            event(15, "b", Kind::Loss),
            ok(20, "c", Mode::Shared, 3),
            ok(21, "d", Mode::Shared, 4),
        ];
        let report = check(&history);
        assert!(report.violations.is_empty(), "{:?}", report.violations);
        assert_eq!((report.holds, report.writes), (4, 3));
        for event in &history {
            assert_eq!(&Event::from_line(&event.to_line()).unwrap(), event);
        }
    }

    #[test]
    fn each_broken_rule_is_found() {
        let history = [
            ok(0, "a", Mode::Exclusive, 5),
            ok(5, "b", Mode::Exclusive, 6),
            event(7, "a", Kind::Write { token: 5, accepted: true }),
            event(8, "b", Kind::Write { token: 6, accepted: true }),
            event(9, "a", Kind::Write { token: 5, accepted: true }),
            event(10, "a", Kind::Release),
            event(10, "b", Kind::Release),
            ok(20, "c", Mode::Exclusive, 4),
        ];
        let found: Vec<String> = check(&history).violations.iter().map(|violation| violation.what.clone()).collect();
        assert_eq!(found.len(), 3, "{found:#?}");
        assert!(found[0].contains("began to hold while a (5) held"));
        assert!(found[1].contains("accepted after one with 6"));
        assert!(found[2].contains("not above"));
        let leases = [ok(0, "a", Mode::Leases(2), 1), ok(1, "b", Mode::Leases(2), 2), ok(2, "c", Mode::Leases(2), 3)];
        assert_eq!(check(&leases).violations.len(), 1);
        assert!(Event::from_line("{\"event\": \"ok\"}").is_err());
    }

    #[test]
    fn an_ok_needs_an_invoke_before_it_once_its_client_writes_invokes() {
        let history = [
            event(0, "a", Kind::Invoke),
            ok(3, "a", Mode::Exclusive, 1),
            event(4, "a", Kind::Release),
            // An acquire that timed out: an invoke with no ok is fine.
            event(5, "a", Kind::Invoke),
            event(6, "a", Kind::Invoke),
            ok(6, "a", Mode::Exclusive, 2),
            event(7, "a", Kind::Release),
            // A client that writes no invokes is checked as before.
            ok(8, "b", Mode::Exclusive, 3),
            event(9, "b", Kind::Release),
        ];
        let report = check(&history);
        assert!(report.violations.is_empty(), "{:?}", report.violations);
        assert_eq!((report.holds, report.invokes), (3, 3));
        assert_eq!(Event::from_line(&history[0].to_line()).unwrap(), history[0]);

        let broken = [
            event(0, "a", Kind::Invoke),
            ok(1, "a", Mode::Exclusive, 1),
            event(2, "a", Kind::Release),
            // Its second ok with no second invoke, and a third whose invoke came after it.
            ok(3, "a", Mode::Exclusive, 2),
            event(4, "a", Kind::Release),
            ok(5, "a", Mode::Exclusive, 3),
            event(6, "a", Kind::Invoke),
        ];
        let found: Vec<String> = check(&broken).violations.iter().map(|violation| violation.what.clone()).collect();
        assert_eq!(found.len(), 2, "{found:#?}");
        assert!(found.iter().all(|what| what.contains("no acquire invoked before it")), "{found:#?}");
    }
}
