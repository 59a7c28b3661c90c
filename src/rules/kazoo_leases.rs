//! kazoo's `Semaphore` layout as rules without I/O.
//!
//! As kazoo 2.8 writes it (`kazoo/recipe/lock.py`): where its gate and its leases live, how a lease
//! is named, how the `max_leases` stored on the path is read, and when a taker holding the gate may
//! create its lease and, once created, holds it.
//!
//! kazoo keeps each lease as an ephemeral `{path}/{uuid4 hex}` (no sequence), behind a kazoo
//! `Lock` on the sibling path `{path}-__lock__` that a taker holds only while it takes its lease.
//! It counts every child of `{path}`, whatever its name, and creates its lease only when fewer
//! than `max_leases` are there. `{path}` is a persistent node whose data is `max_leases` in
//! decimal; kazoo refuses (`ValueError`) a semaphore whose `max_leases` differs from a number
//! stored there, and ignores data that is no number.

use uuid::Uuid;

/// The path of the kazoo `Lock` that lease takers hold while they take: `{path}-__lock__`.
pub(crate) fn gate_path(path: &str) -> String {
    format!("{path}-__lock__")
}

/// The name of a lease node: the uuid as 32 hex digits, as kazoo's `uuid.uuid4().hex`.
pub(crate) fn lease_name(id: &Uuid) -> String {
    id.simple().to_string()
}

/// The data of the semaphore's path node: `max_leases` in decimal, as kazoo writes it.
pub(crate) fn stored_max_leases(max_leases: u32) -> Vec<u8> {
    max_leases.to_string().into_bytes()
}

/// What the data of the semaphore's path node says of our `max_leases`.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum StoredMax {
    /// The same number: go on.
    Same,
    /// Another number, as stored (trimmed): kazoo refuses to take a lease, and so do we.
    Other(String),
    /// No number (empty, not UTF-8, other data): kazoo ignores it ("maybe the node data is used
    /// for other purposes"), and so do we.
    NoNumber,
}

/// Reads the path node's `data` as kazoo does (`int(data.decode("utf-8"))`) and compares it with
/// `ours`. Python's `int` takes surrounding whitespace, a sign, and `_` between digits; a number
/// of any size is a number (a huge one differs from ours). Digits other than ASCII, which Python
/// also reads, count as no number here: kazoo never writes them.
pub(crate) fn read_stored_max(data: &[u8], ours: u32) -> StoredMax {
    let Ok(text) = std::str::from_utf8(data) else { return StoredMax::NoNumber };
    let text = text.trim();
    let (negative, digits) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    let well_formed = !digits.is_empty()
        && !digits.starts_with('_')
        && !digits.ends_with('_')
        && !digits.contains("__")
        && digits.bytes().all(|b| b.is_ascii_digit() || b == b'_');
    if !well_formed {
        return StoredMax::NoNumber;
    }
    let digits: String = digits.chars().filter(|c| *c != '_').collect();
    let value = digits.trim_start_matches('0');
    let same = value == ours.to_string() && !negative || value.is_empty() && ours == 0;
    if same {
        StoredMax::Same
    } else {
        StoredMax::Other(text.to_owned())
    }
}

/// Whether a taker holding the gate may create its lease: fewer than `max_leases` children of
/// the path, every child counted as kazoo counts them (a foreign child can only make us wait).
pub(crate) fn has_room(children: usize, max_leases: u32) -> bool {
    children < max_leases as usize
}

/// What a listing taken after our lease's create says of it.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Created {
    /// Ours is there, and at most `max_leases` children with it: we hold.
    Hold,
    /// More than `max_leases` children: a taker beside us created its lease in the same moment
    /// (the gate was not exclusive: its node deleted by an operator, a session that ended
    /// unseen). We take ours back and wait for room: a kazoo taker never does.
    TooMany,
    /// Ours is gone (an operator, the path deleted): start over from the gate.
    Missing,
}

/// Decides, from the children of the path listed after our lease `ours` was created, whether it
/// holds. A hold needs both: our node there (the invariant every recipe keeps, a hold only on a
/// node of ours that exists) and no more than `max_leases` children.
pub(crate) fn after_create(children: &[String], ours: &str, max_leases: u32) -> Created {
    if !children.iter().any(|child| child == ours) {
        Created::Missing
    } else if children.len() > max_leases as usize {
        Created::TooMany
    } else {
        Created::Hold
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_layout_is_kazoos() {
        let id = Uuid::parse_str("6ba7b810-9dad-11d1-80b4-00c04fd430c8").unwrap();
        assert_eq!(lease_name(&id), "6ba7b8109dad11d180b400c04fd430c8");
        assert_eq!(gate_path("/app/sem"), "/app/sem-__lock__");
        assert_eq!(stored_max_leases(2), b"2");
    }

    #[test]
    fn the_stored_max_is_read_as_pythons_int_reads_it() {
        for same in ["2", " 2\n", "+2", "02", "0_2", "2 "] {
            assert_eq!(read_stored_max(same.as_bytes(), 2), StoredMax::Same, "{same:?}");
        }
        assert_eq!(read_stored_max(b"0", 0), StoredMax::Same);
        assert_eq!(read_stored_max(b"-0", 0), StoredMax::Same);
        for (other, stored) in
            [("3", "3"), (" -2 ", "-2"), ("20", "20"), ("99999999999999999999", "99999999999999999999")]
        {
            assert_eq!(read_stored_max(other.as_bytes(), 2), StoredMax::Other(stored.to_owned()), "{other:?}");
        }
        for no_number in ["", " ", "two", "2.0", "_2", "2_", "2__0", "+", "-", "0x2", "2 3"] {
            assert_eq!(read_stored_max(no_number.as_bytes(), 2), StoredMax::NoNumber, "{no_number:?}");
        }
        assert_eq!(read_stored_max(&[0xff, b'2'], 2), StoredMax::NoNumber, "not UTF-8");
    }

    #[test]
    fn a_taker_creates_only_below_the_maximum_counting_every_child() {
        assert!(has_room(0, 1));
        assert!(has_room(1, 2));
        assert!(!has_room(2, 2));
        assert!(!has_room(3, 2));
    }

    #[test]
    fn a_created_lease_holds_only_when_it_is_there_and_the_maximum_is_kept() {
        let children = |names: &[&str]| names.iter().map(|name| (*name).to_owned()).collect::<Vec<_>>();
        assert_eq!(after_create(&children(&["a", "ours"]), "ours", 2), Created::Hold);
        assert_eq!(after_create(&children(&["ours"]), "ours", 1), Created::Hold);
        assert_eq!(after_create(&children(&["a", "b", "ours"]), "ours", 2), Created::TooMany);
        assert_eq!(after_create(&children(&["a", "foreign", "ours"]), "ours", 2), Created::TooMany);
        assert_eq!(after_create(&children(&["a", "b"]), "ours", 2), Created::Missing);
        assert_eq!(after_create(&[], "ours", 2), Created::Missing);
    }
}
