//! Owner tags: which task of a process created a lock node, carried in the uuid of the node's
//! protected prefix, so that the wait-for graph (`wait_for.rs`) can tell apart the tasks of one
//! session.
//!
//! Curator (`_c_{uuid}-`) and kazoo (`{uuid as 32 hex digits}`) use the uuid of a protected
//! node only to find their own node again after a create whose reply was lost: it is opaque to
//! them, and any well-formed uuid of the same text form that is unique per create will do. So
//! a lock built to look for deadlocks writes an RFC 9562 version 8 ("custom") uuid that carries
//! a marker, a hash of its owner and random bits; every other create writes a plain version 4
//! uuid, which carries no tag (nor do Curator's and kazoo's, both version 4).
//!
//! A tagged uuid, as a 128-bit big-endian number:
//!
//! | bits    | what                                                   |
//! |---------|--------------------------------------------------------|
//! | 127..80 | the owner tag (48 bits)                                |
//! | 79..76  | the version, 8                                         |
//! | 75..64  | the marker's first 12 bits                             |
//! | 63..62  | the variant, `0b10` (RFC 9562)                         |
//! | 61..58  | the marker's last 4 bits                               |
//! | 57..0   | random, from a fresh version 4 uuid (58 bits)          |
//!
//! In text: `tttttttt-tttt-87a6-{a..f}{c..f}rr-rrrrrrrrrrrr` (`t` the tag, `r` random), with
//! the marker `0x7a6b`. A leader selector's node (an election named like a mutex, as Curator's
//! `LeaderSelector` names its nodes) carries the marker `0x7a6e` instead, random bits where the
//! tag would be: the deadlock scan reads a queue with such a node as an election, not a lock
//! (`queue/deadlock.rs`). 48 bits of hash are enough: a tag is compared only with the tags of
//! one session (two owners of one process would have to collide). 58 random bits keep two
//! creates of one owner apart, which is all the protection asks of the uuid: a create finds
//! its node again by its whole prefix, among the nodes of its own session.

use uuid::Uuid;

use super::naming::PROTECTED_MARKER;

/// The 16 bits every tagged uuid carries, split around the variant.
const MARKER: u128 = 0x7a6b;
/// The 16 bits an election participant's uuid carries instead.
const ELECTION_MARKER: u128 = 0x7a6e;
/// Where the parts go in the 128-bit value.
const TAG_SHIFT: u32 = 80;
const TAG_BITS: u32 = 48;
const RANDOM_BITS: u32 = 58;
/// Version 8, the marker's first 12 bits, the variant and the marker's last 4, in place: the
/// bits between the tag and the random ones that every tagged uuid shares.
const FIXED: u128 = fixed(MARKER);
const ELECTION_FIXED: u128 = fixed(ELECTION_MARKER);
const FIXED_MASK: u128 = ((1 << TAG_SHIFT) - 1) & !((1 << RANDOM_BITS) - 1);

/// The bits between the tag and the random ones, for `marker`.
const fn fixed(marker: u128) -> u128 {
    (0x8 << 76) | ((marker >> 4) << 64) | (0b10 << 62) | ((marker & 0xf) << RANDOM_BITS)
}

/// What the uuid of a node we create says of it, beyond being ours: who created it, or that it
/// is an election participant's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NodeMark {
    /// A lock's node, created by this owner (a lock built to look for deadlocks).
    Owner(OwnerTag),
    /// A leader selector's node: an election's, never to be read as a lock's.
    Election,
}

impl NodeMark {
    /// A uuid for one create so marked, its random bits from `random` (a fresh version 4 uuid).
    pub(crate) fn uuid(self, random: Uuid) -> Uuid {
        match self {
            NodeMark::Owner(owner) => owner.uuid(random),
            NodeMark::Election => {
                let random = random.as_u128();
                let tag_bits = (random >> RANDOM_BITS) & ((1 << TAG_BITS) - 1);
                Uuid::from_u128((tag_bits << TAG_SHIFT) | ELECTION_FIXED | (random & ((1 << RANDOM_BITS) - 1)))
            }
        }
    }

    /// The mark a node (its name, or its full path) carries in the uuid of its protected
    /// prefix, Curator's `_c_{uuid}-` or kazoo's `{uuid as 32 hex digits}__`; `None` for a node
    /// without one, or whose uuid carries none.
    pub(crate) fn of_node(node: &str) -> Option<NodeMark> {
        let name = node.rsplit('/').next().unwrap_or(node);
        let id = match name.strip_prefix(PROTECTED_MARKER) {
            Some(rest) if rest.get(36..37) == Some("-") => Uuid::try_parse(&rest[..36]).ok()?,
            Some(_) => return None,
            None if name.get(32..34) == Some("__") => Uuid::try_parse(&name[..32]).ok()?,
            None => return None,
        };
        match id.as_u128() & FIXED_MASK {
            ELECTION_FIXED => Some(NodeMark::Election),
            _ => OwnerTag::of_uuid(&id).map(NodeMark::Owner),
        }
    }
}

/// Who created a lock node, within its session: a 48-bit hash of the task (or thread) that
/// acquires.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct OwnerTag(u64);

impl OwnerTag {
    /// The tag of an owner whose hash is `hash` (its low 48 bits).
    pub(crate) fn from_hash(hash: u64) -> OwnerTag {
        OwnerTag(hash & ((1 << TAG_BITS) - 1))
    }

    /// The tag as a number (under 2^48).
    pub(crate) fn value(self) -> u64 {
        self.0
    }

    /// A uuid for one create of this owner: the tag, the marker, and the random bits of
    /// `random` (a fresh version 4 uuid), so that two creates differ.
    pub(crate) fn uuid(self, random: Uuid) -> Uuid {
        let random = random.as_u128() & ((1 << RANDOM_BITS) - 1);
        Uuid::from_u128((u128::from(self.0) << TAG_SHIFT) | FIXED | random)
    }

    /// The tag `id` carries; `None` for any uuid [`uuid`](Self::uuid) did not make.
    pub(crate) fn of_uuid(id: &Uuid) -> Option<OwnerTag> {
        let bits = id.as_u128();
        let tag = u64::try_from(bits >> TAG_SHIFT).expect("48 bits");
        (bits & FIXED_MASK == FIXED).then_some(OwnerTag(tag))
    }

    /// The tag a lock node (its name, or its full path) carries in its protected prefix (see
    /// [`NodeMark::of_node`]); `None` for a node without one, or whose uuid carries none.
    pub(crate) fn of_node(node: &str) -> Option<OwnerTag> {
        match NodeMark::of_node(node)? {
            NodeMark::Owner(owner) => Some(owner),
            NodeMark::Election => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::naming::{KAZOO_MUTEX, MUTEX, READ, WRITE};

    #[test]
    fn a_tagged_uuid_is_a_version_8_rfc_uuid_and_gives_its_tag_back() {
        for hash in [0, 1, 0xdead_beef, u64::MAX, 0x1234_5678_9abc_def0] {
            let tag = OwnerTag::from_hash(hash);
            assert!(tag.value() < 1 << 48);
            let id = tag.uuid(Uuid::new_v4());
            assert_eq!(id.get_version_num(), 8, "{id}");
            assert_eq!(id.get_variant(), uuid::Variant::RFC4122, "{id}");
            assert_eq!(OwnerTag::of_uuid(&id), Some(tag), "{id}");
            assert!(id.hyphenated().to_string()[14..19].starts_with("87a6-"), "{id}");
        }
    }

    #[test]
    fn each_node_name_gives_its_tag_back_in_both_text_forms() {
        let tag = OwnerTag::from_hash(0xabc_def0_1234);
        let id = tag.uuid(Uuid::new_v4());
        for schema in [MUTEX, READ, WRITE, KAZOO_MUTEX] {
            let name = format!("{}0000000007", schema.protected_prefix(&id));
            assert_eq!(OwnerTag::of_node(&name), Some(tag), "{name}");
            assert_eq!(OwnerTag::of_node(&format!("/app/locks/l/{name}")), Some(tag), "a full path");
            assert_eq!(schema.parse_sequence(&name), Some(7), "still a lock node: {name}");
        }
    }

    #[test]
    fn version_4_uuids_and_other_names_carry_no_tag() {
        for _ in 0..1_000 {
            assert_eq!(OwnerTag::of_uuid(&Uuid::new_v4()), None);
        }
        let curator = "_c_6ba7b810-9dad-41d1-80b4-00c04fd430c8-lock-0000000001";
        let kazoo = "6ba7b8109dad41d180b400c04fd430c8__lock__0000000001";
        let kazoo_read = "6ba7b8109dad41d180b400c04fd430c8__rlock__0000000002";
        for name in [curator, kazoo, kazoo_read, "_c_x-lock-0000000001", "lock-0000000001", "config", ""] {
            assert_eq!(OwnerTag::of_node(name), None, "{name}");
        }
        // A version 8 uuid of someone else's making, without the marker.
        let foreign = Uuid::from_u128(OwnerTag::from_hash(5).uuid(Uuid::new_v4()).as_u128() ^ (1 << 70));
        assert_eq!(foreign.get_version_num(), 8);
        assert_eq!(OwnerTag::of_uuid(&foreign), None);
    }

    #[test]
    fn an_election_uuid_is_a_version_8_uuid_told_from_a_tag_and_from_a_plain_one() {
        let ids: std::collections::BTreeSet<Uuid> =
            (0..1_000).map(|_| NodeMark::Election.uuid(Uuid::new_v4())).collect();
        assert_eq!(ids.len(), 1_000, "every create's uuid is its own");
        for id in ids {
            assert_eq!(id.get_version_num(), 8, "{id}");
            assert_eq!(id.get_variant(), uuid::Variant::RFC4122, "{id}");
            assert_eq!(OwnerTag::of_uuid(&id), None, "{id} carries no owner tag");
            for schema in [MUTEX, KAZOO_MUTEX] {
                let name = format!("{}0000000007", schema.protected_prefix(&id));
                assert_eq!(NodeMark::of_node(&name), Some(NodeMark::Election), "{name}");
                assert_eq!(OwnerTag::of_node(&name), None, "{name}");
            }
        }
        let tagged = NodeMark::Owner(OwnerTag::from_hash(9)).uuid(Uuid::new_v4());
        let name = format!("{}0000000001", MUTEX.protected_prefix(&tagged));
        assert_eq!(NodeMark::of_node(&name), Some(NodeMark::Owner(OwnerTag::from_hash(9))));
        let plain = format!("{}0000000001", MUTEX.protected_prefix(&Uuid::new_v4()));
        assert_eq!(NodeMark::of_node(&plain), None);
    }

    #[test]
    fn two_creates_of_one_owner_differ_and_keep_its_tag() {
        let tag = OwnerTag::from_hash(42);
        let ids: std::collections::BTreeSet<Uuid> = (0..1_000).map(|_| tag.uuid(Uuid::new_v4())).collect();
        assert_eq!(ids.len(), 1_000, "every create's uuid is its own");
        assert!(ids.iter().all(|id| OwnerTag::of_uuid(id) == Some(tag)));
        assert_ne!(OwnerTag::from_hash(1).uuid(Uuid::nil()), OwnerTag::from_hash(2).uuid(Uuid::nil()));
    }
}
