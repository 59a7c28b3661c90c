//! Lock node names, exactly as Curator writes and orders them.
//!
//! A mutex node is `_c_{uuid}-lock-{seq}`: `_c_{uuid}-` is Curator's protection prefix (it finds
//! the node again after a create whose reply was lost), `lock-` the lock name, and `{seq}`
//! ZooKeeper's counter for the parent, printed with Java's `%010d`.
//!
//! # Ordering, and where it breaks
//! Curator sorts children by the text after the last occurrence of the lock name, compared as
//! strings (`StandardLockInternalsDriver.fixForSorting`); a child without the lock name sorts by
//! its whole name. zklock sorts the same way, so Java and Rust participants agree on the queue.
//! While the counter is non-negative the text is ten digits, and string order is numeric order.
//! The counter is a signed 32-bit value that wraps after 2^31 children have been created under
//! one parent (kazoo #606): the sequence `-2147483648` then sorts *before* the holder, in Curator
//! as here, and mutual exclusion breaks for that moment. A lock path gets there only after two
//! billion acquisitions without ever being empty long enough for the server to delete the
//! container; recreate the lock path well before that if a lock is that busy.

use uuid::Uuid;

use super::path::concat;

/// Curator's protection marker: every protected node name starts with it.
pub(crate) const PROTECTED_MARKER: &str = "_c_";

/// How one kind of queue names and orders its nodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Schema {
    /// The lock name in our own nodes' names.
    pub(crate) own_name: &'static str,
    /// Every lock name in the queue. Curator strips each, in this order, to find the sort key
    /// (`SortingLockInternalsDriver` for the read-write lock).
    pub(crate) names: &'static [&'static str],
    /// How the protected prefix is written.
    pub(crate) protection: Protection,
}

/// How a node's name carries the id that finds it again after a lost create reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Protection {
    /// Curator: `_c_{uuid with hyphens}-{lock name}`.
    Curator,
    /// kazoo: `{uuid as 32 hex digits}{lock name}`.
    Kazoo,
}

/// The lock name of Curator's read-lock nodes.
pub(crate) const READ_NAME: &str = "__READ__";
/// The lock name of Curator's write-lock nodes.
pub(crate) const WRITE_NAME: &str = "__WRIT__";

/// The lock name of kazoo's `WriteLock` (and `Lock`) nodes.
pub(crate) const KAZOO_WRITE_NAME: &str = "__lock__";
/// The lock name of kazoo's `ReadLock` nodes.
pub(crate) const KAZOO_READ_NAME: &str = "__rlock__";

/// What Curator's `Revoker.attemptRevoke` writes into a lock node to ask its holder to let go.
pub(crate) const REVOKE_MARKER: &[u8] = b"__REVOKE__";

/// `InterProcessMutex`: `_c_{uuid}-lock-{seq}`.
pub(crate) const MUTEX: Schema = Schema { own_name: "lock-", names: &["lock-"], protection: Protection::Curator };
/// Curator's `LeaderLatch`: `_c_{uuid}-latch-{seq}`, ordered by the text after `latch-`.
pub(crate) const LATCH: Schema = Schema { own_name: "latch-", names: &["latch-"], protection: Protection::Curator };
/// Leases of `InterProcessSemaphoreV2`: `{path}/leases/_c_{uuid}-lease-{seq}`.
pub(crate) const LEASE: Schema = Schema { own_name: "lease-", names: &["lease-"], protection: Protection::Curator };
/// kazoo's `Lock`: `{hex32}__lock__{seq}`, ordered by the sequence after `__lock__`.
pub(crate) const KAZOO_MUTEX: Schema =
    Schema { own_name: "__lock__", names: &["__lock__"], protection: Protection::Kazoo };
/// The read side of a read-write lock in kazoo's layout (kazoo's `ReadLock`):
/// `{hex32}__rlock__{seq}`, in one order with the write side's `__lock__` nodes.
pub(crate) const KAZOO_READ: Schema =
    Schema { own_name: KAZOO_READ_NAME, names: &[KAZOO_WRITE_NAME, KAZOO_READ_NAME], protection: Protection::Kazoo };
/// The write side of a read-write lock in kazoo's layout (kazoo's `WriteLock`):
/// `{hex32}__lock__{seq}`, the names of kazoo's `Lock`.
pub(crate) const KAZOO_WRITE: Schema =
    Schema { own_name: KAZOO_WRITE_NAME, names: &[KAZOO_WRITE_NAME, KAZOO_READ_NAME], protection: Protection::Kazoo };
/// The read side of `InterProcessReadWriteLock`: `_c_{uuid}-__READ__{seq}`.
pub(crate) const READ: Schema =
    Schema { own_name: READ_NAME, names: &[READ_NAME, WRITE_NAME], protection: Protection::Curator };
/// The write side of `InterProcessReadWriteLock`: `_c_{uuid}-__WRIT__{seq}`.
pub(crate) const WRITE: Schema =
    Schema { own_name: WRITE_NAME, names: &[READ_NAME, WRITE_NAME], protection: Protection::Curator };

impl Schema {
    /// The start of a protected node's name: `_c_{uuid}-{own_name}` (Curator) or
    /// `{hex32}{own_name}` (kazoo).
    #[cfg(test)]
    pub(crate) fn protected_prefix(&self, id: &Uuid) -> String {
        self.protected_path("", id)[1..].to_owned()
    }

    /// `{parent}/` and the protected prefix: the path our node is created with.
    pub(crate) fn protected_path(&self, parent: &str, id: &Uuid) -> String {
        let mut buffer = Uuid::encode_buffer();
        match self.protection {
            Protection::Curator => {
                concat(&[parent, "/", PROTECTED_MARKER, id.hyphenated().encode_lower(&mut buffer), "-", self.own_name])
            }
            Protection::Kazoo => concat(&[parent, "/", id.simple().encode_lower(&mut buffer), self.own_name]),
        }
    }

    /// The lock name of the write side of a read-write lock with this schema's protection: a
    /// reader waits for the nodes that carry it.
    pub(crate) fn writer_name(&self) -> &'static str {
        match self.protection {
            Protection::Curator => WRITE_NAME,
            Protection::Kazoo => KAZOO_WRITE_NAME,
        }
    }

    /// The part of a child's name that orders it among the others: what is left after the text
    /// up to the last occurrence of each lock name is cut off, name by name, as Curator does.
    pub(crate) fn sort_key<'a>(&self, child: &'a str) -> &'a str {
        self.names.iter().fold(child, |key, name| match last_at(key, name) {
            Some(at) => &key[at + name.len()..],
            None => key,
        })
    }

    /// The sequence number of a lock node: ten digits or more after its lock name, with an
    /// optional minus sign (negative after the counter wraps); `None` for other children.
    #[cfg(test)]
    pub(crate) fn parse_sequence(&self, child: &str) -> Option<i32> {
        self.sequence_at(child).map(|(_, sequence)| sequence)
    }

    /// Whether `child` is one of this schema's queue nodes (a lock node, a lease, a latch node).
    pub(crate) fn is_queue_node(&self, child: &str) -> bool {
        self.sequence_at(child).is_some()
    }

    /// Where the sort key of a lock node starts, and its sequence number; `None` for a child
    /// that is not a lock node.
    fn sequence_at(&self, child: &str) -> Option<(usize, i32)> {
        let key = self.sort_key(child);
        if key.len() == child.len() {
            // No lock name in it.
            return None;
        }
        let (negative, digits) = match key.strip_prefix('-') {
            Some(digits) => (true, digits),
            None => (false, key),
        };
        if digits.len() < 9 || key.len() < 10 {
            return None;
        }
        // By hand, not `str::parse`: every child of every listing comes here (a waiter in a
        // queue of hundreds, at every handoff), and the parse was most of its cost (callgrind).
        let mut value: i64 = 0;
        for digit in digits.bytes() {
            if !digit.is_ascii_digit() {
                return None;
            }
            // Past i32 in either direction: the digits left could only add to it.
            value = value * 10 + i64::from(digit - b'0');
            if value > 1 << 31 {
                return None;
            }
        }
        let sequence = i32::try_from(if negative { -value } else { value }).ok()?;
        Some((child.len() - key.len(), sequence))
    }

    /// Keeps the children that are lock nodes and sorts them into queue order, holder first.
    ///
    /// Unrelated children of the lock path (a `config` node, say) are not contenders
    /// (CURATOR-43). Curator itself orders every child; a foreign child that sorted ahead would
    /// make Curator participants wait for it, never hold alongside us, so ignoring it is safe in
    /// a mixed queue. Each key is found once (a waiter in a queue of hundreds sorts on every
    /// handoff).
    pub(crate) fn contenders(&self, children: Vec<String>) -> Vec<String> {
        let mut keyed: Vec<(u128, usize, String)> = children
            .into_iter()
            .filter_map(|child| {
                let start = self.sequence_at(&child)?.0;
                Some((order_key(&child[start..]), start, child))
            })
            .collect();
        // By the packed keys, which order as the texts do; the texts decide only between keys
        // that are equal, of sort keys longer than a key holds.
        keyed.sort_unstable_by(|(a_key, a_start, a), (b_key, b_start, b)| {
            a_key.cmp(b_key).then_with(|| a[*a_start..].cmp(&b[*b_start..]))
        });
        keyed.into_iter().map(|(_, _, child)| child).collect()
    }
}

/// The first 16 bytes of a sort key, big-endian, zero-padded: two keys order as their texts do
/// (a sort key is a sequence number's digits and sign, which hold no zero byte, so a shorter
/// text that the longer one begins with sorts first in both), except that keys longer than 16
/// bytes which share their first 16 are equal here. Comparing two integers is what a listing of
/// hundreds sorts with, where comparing the texts cost a call each.
fn order_key(key: &str) -> u128 {
    let mut bytes = [0u8; 16];
    let taken = key.len().min(16);
    bytes[..taken].copy_from_slice(&key.as_bytes()[..taken]);
    u128::from_be_bytes(bytes)
}

/// Where the last `name` in `text` starts. A lock name is a few bytes and a node's name a few
/// dozen: comparing at each position from the end is quicker than `str::rfind`'s searcher,
/// which is built anew for every call (every child of every listing).
fn last_at(text: &str, name: &str) -> Option<usize> {
    let (text, name) = (text.as_bytes(), name.as_bytes());
    let Some(&first) = name.first() else { return Some(text.len()) };
    (0..=text.len().checked_sub(name.len())?).rev().find(|&at| text[at] == first && &text[at..at + name.len()] == name)
}

/// The name ZooKeeper gives a sequential node created as `prefix` with counter `sequence`.
pub(crate) fn sequential_name(prefix: &str, sequence: i64) -> String {
    // Java's `%010d`: ten characters, a minus sign counted among them. Written by hand: the
    // same through `write!` cost every acquire about 220 instructions more (callgrind).
    let mut digits = [b'0'; 20];
    let mut at = digits.len();
    let mut rest = sequence.unsigned_abs();
    while rest > 0 {
        at -= 1;
        digits[at] = b'0' + (rest % 10) as u8;
        rest /= 10;
    }
    let width = if sequence < 0 { 9 } else { 10 };
    let start = at.min(digits.len() - width);
    let sign = if sequence < 0 { "-" } else { "" };
    // Only ASCII digits were written.
    let digits = std::str::from_utf8(&digits[start..]).unwrap_or_default();
    concat(&[prefix, sign, digits])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protected_prefixes_are_curators() {
        let id = Uuid::parse_str("6ba7b810-9dad-11d1-80b4-00c04fd430c8").unwrap();
        assert_eq!(MUTEX.protected_prefix(&id), "_c_6ba7b810-9dad-11d1-80b4-00c04fd430c8-lock-");
        assert_eq!(READ.protected_prefix(&id), "_c_6ba7b810-9dad-11d1-80b4-00c04fd430c8-__READ__");
        assert_eq!(WRITE.protected_prefix(&id), "_c_6ba7b810-9dad-11d1-80b4-00c04fd430c8-__WRIT__");
        assert_eq!(KAZOO_MUTEX.protected_prefix(&id), "6ba7b8109dad11d180b400c04fd430c8__lock__");
    }

    #[test]
    fn the_kazoo_schema_orders_as_kazoo_and_ignores_curator_nodes() {
        let children = ["b__lock__0000000002", "_c_x-lock-0000000000", "a__lock__0000000001", "c__rlock__0000000003"]
            .map(String::from)
            .to_vec();
        assert_eq!(KAZOO_MUTEX.contenders(children), ["a__lock__0000000001", "b__lock__0000000002"]);
    }

    #[test]
    fn readers_and_writers_share_one_order() {
        let children = ["_c_a-__WRIT__0000000003", "_c_b-__READ__0000000001", "_c_c-__READ__0000000002", "x"]
            .map(String::from)
            .to_vec();
        let expected = ["_c_b-__READ__0000000001", "_c_c-__READ__0000000002", "_c_a-__WRIT__0000000003"];
        assert_eq!(READ.contenders(children.clone()), expected);
        assert_eq!(WRITE.contenders(children), expected);
        assert_eq!(MUTEX.parse_sequence("_c_b-__READ__0000000001"), None, "a mutex ignores rw nodes");
    }

    #[test]
    fn kazoo_readers_and_writers_share_one_order_by_sequence() {
        // A `__rlock__` name does not contain `__lock__`: each node is cut at its own name.
        let children =
            ["b__lock__0000000003", "a__rlock__0000000001", "_c_x-__WRIT__0000000000", "c__rlock__0000000002"]
                .map(String::from)
                .to_vec();
        let expected = ["a__rlock__0000000001", "c__rlock__0000000002", "b__lock__0000000003"];
        assert_eq!(KAZOO_READ.contenders(children.clone()), expected);
        assert_eq!(KAZOO_WRITE.contenders(children), expected);
        assert_eq!(KAZOO_READ.sort_key("a__rlock__0000000001"), "0000000001");
        assert_eq!(KAZOO_WRITE.sort_key("b__lock__0000000003"), "0000000003");
        let id = Uuid::parse_str("6ba7b810-9dad-11d1-80b4-00c04fd430c8").unwrap();
        assert_eq!(KAZOO_READ.protected_prefix(&id), "6ba7b8109dad11d180b400c04fd430c8__rlock__");
        assert_eq!((KAZOO_READ.writer_name(), READ.writer_name()), ("__lock__", "__WRIT__"));
        // After the wrap, a negative sequence sorts first, for kazoo ('-' < '0') as here.
        let wrapped = vec!["a__lock__2147483647".to_owned(), "b__rlock__-2147483648".to_owned()];
        assert_eq!(KAZOO_WRITE.contenders(wrapped)[0], "b__rlock__-2147483648");
    }

    #[test]
    fn sequential_names_match_javas_percent_010d() {
        assert_eq!(sequential_name("p-", 0), "p-0000000000");
        assert_eq!(sequential_name("p-", 42), "p-0000000042");
        assert_eq!(sequential_name("p-", i32::MAX.into()), "p-2147483647");
        assert_eq!(sequential_name("p-", -1), "p--000000001");
        assert_eq!(sequential_name("p-", i32::MIN.into()), "p--2147483648");
        assert_eq!(sequential_name("p-", 12_345_678_901), "p-12345678901");
        assert_eq!(sequential_name("p-", -12_345_678_901), "p--12345678901");
        assert_eq!(sequential_name("", 7), "0000000007");
    }

    #[test]
    fn the_last_lock_name_is_found_as_rfind_finds_it() {
        for (text, name) in [
            ("_c_x-lock-lock-0000000001", "lock-"),
            ("lock-", "lock-"),
            ("loc", "lock-"),
            ("", "lock-"),
            ("__lock____rlock__1", "__lock__"),
            ("aaaa", "aa"),
            ("lock", ""),
        ] {
            assert_eq!(last_at(text, name), text.rfind(name), "{name} in {text}");
        }
    }

    #[test]
    fn parses_sequences_including_negative_ones() {
        assert_eq!(MUTEX.parse_sequence("_c_x-lock-0000000007"), Some(7));
        assert_eq!(MUTEX.parse_sequence("_c_x-lock-2147483647"), Some(i32::MAX));
        assert_eq!(MUTEX.parse_sequence("_c_x-lock--000000001"), Some(-1));
        assert_eq!(MUTEX.parse_sequence("_c_x-lock--2147483648"), Some(i32::MIN));
        assert_eq!(MUTEX.parse_sequence("_c_x-lock-12"), None);
        assert_eq!(MUTEX.parse_sequence("_c_x-lock-+000000001"), None);
        assert_eq!(MUTEX.parse_sequence("_c_x-lock-00000000x1"), None);
        assert_eq!(MUTEX.parse_sequence("_c_x-lock-2147483648"), None, "beyond i32");
        assert_eq!(MUTEX.parse_sequence("_c_x-lock--2147483649"), None, "beyond i32");
        assert_eq!(MUTEX.parse_sequence("_c_x-lock-99999999999999999999"), None, "far beyond i64");
        assert_eq!(MUTEX.parse_sequence("_c_x-lock-000000000000000000007"), Some(7), "zeros ahead");
        assert_eq!(MUTEX.parse_sequence("_c_x-lock--"), None);
        assert_eq!(MUTEX.parse_sequence("_c_x-lock-0000000é01"), None, "not ASCII");
        assert_eq!(MUTEX.parse_sequence("config"), None);
        assert_eq!(MUTEX.parse_sequence("0000000001"), None, "no lock name");
    }

    /// The parse by hand reads what `str::parse` reads, on every sequence-like text around the
    /// edges of the range: lengths 8 to 12, both signs, the limits and their neighbours.
    #[test]
    fn sequences_parse_as_str_parse_does() {
        let values = [0i64, 1, 7, 9, 10, 99_999_999, 999_999_999, 1_000_000_000, 2_147_483_646, 2_147_483_647];
        let mut texts = Vec::new();
        for value in values.iter().flat_map(|v| [*v, v + 1, v * 10 + 9]) {
            for width in 8..=12 {
                texts.push(format!("{value:0width$}"));
                texts.push(format!("-{value:0width$}"));
            }
        }
        for text in texts {
            let reference = (text.trim_start_matches('-').len() >= 9 && text.len() >= 10)
                .then(|| text.parse::<i32>().ok())
                .flatten();
            assert_eq!(MUTEX.parse_sequence(&format!("_c_x-lock-{text}")), reference, "{text}");
        }
    }

    #[test]
    fn unrelated_children_are_not_contenders() {
        let children = ["config", "_c_b-lock-0000000002", "0000000000", "_c_a-lock-0000000001", "lock-"]
            .map(String::from)
            .to_vec();
        assert_eq!(MUTEX.contenders(children), ["_c_a-lock-0000000001", "_c_b-lock-0000000002"]);
    }

    #[test]
    fn sorts_by_text_after_the_last_lock_name_like_curator() {
        let children: Vec<String> = [
            "_c_bbb-lock-0000000003",
            "_c_aaa-lock-0000000010",
            "_c_ccc-lock-0000000001",
            // A uuid that contains the lock name still sorts by the text after the *last* one.
            "_c_lock-0000000000-lock-0000000002",
        ]
        .map(String::from)
        .to_vec();
        let children = MUTEX.contenders(children);
        assert_eq!(
            children,
            [
                "_c_ccc-lock-0000000001",
                "_c_lock-0000000000-lock-0000000002",
                "_c_bbb-lock-0000000003",
                "_c_aaa-lock-0000000010"
            ]
        );
    }

    #[test]
    fn after_the_wrap_a_negative_sequence_sorts_first_as_documented() {
        let children = vec!["_c_a-lock-2147483647".to_owned(), "_c_b-lock--2147483648".to_owned()];
        let children = MUTEX.contenders(children);
        assert_eq!(children[0], "_c_b-lock--2147483648");
    }

    /// The packed keys sort as the texts do, with the texts deciding only between equal keys:
    /// every pair of sort keys made of a sign and digits, 1 to 20 bytes long (past the 16 a key
    /// holds), in both orders.
    #[test]
    fn packed_keys_order_as_their_texts() {
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let keys: Vec<String> = (0..400)
            .map(|_| {
                let len = 1 + (next() % 20) as usize;
                let mut key: String = (0..len).map(|_| char::from(b'0' + (next() % 10) as u8)).collect();
                if next() % 4 == 0 {
                    key.replace_range(0..1, "-");
                }
                key
            })
            .chain(
                ["0000000001", "00000000010", "-2147483648", "-999999999", "0000000000000000", "00000000000000001"]
                    .map(String::from),
            )
            .collect();
        for a in &keys {
            for b in &keys {
                let packed = order_key(a).cmp(&order_key(b)).then_with(|| a.cmp(b));
                assert_eq!(packed, a.cmp(b), "{a} against {b}");
            }
        }
    }
}
