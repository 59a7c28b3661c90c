//! Owner tags: the task or chain of processes a lock node's uuid names.
//!
//! Carried in the uuid of the node's protected prefix, so that the wait-for graph (`wait_for.rs`)
//! can tell apart the tasks of one session and join the sessions of one chain.
//!
//! Curator (`_c_{uuid}-`) and kazoo (`{uuid as 32 hex digits}`) use the uuid of a protected
//! node only to find their own node again after a create whose reply was lost: it is opaque to
//! them, and any well-formed uuid of the same text form that is unique per create will do. So
//! a lock built to look for deadlocks (or to be a link of a chain) writes an RFC 9562 version 8
//! ("custom") uuid that carries a marker, a 48-bit tag and random bits; every other create
//! writes a plain version 4 uuid, which carries no tag (nor do Curator's and kazoo's, both
//! version 4).
//!
//! A tagged uuid, as a 128-bit big-endian number:
//!
//! | bits    | what                                                   |
//! |---------|--------------------------------------------------------|
//! | 127..80 | the tag (48 bits)                                      |
//! | 79..76  | the version, 8                                         |
//! | 75..64  | the marker's first 12 bits                             |
//! | 63..62  | the variant, `0b10` (RFC 9562)                         |
//! | 61..58  | the marker's last 4 bits                               |
//! | 57..0   | random, from a fresh version 4 uuid (58 bits)          |
//!
//! The marker says what the tag is. `0x7a6b`, a task's owner tag, a hash of the task: in text
//! `tttttttt-tttt-87a6-{a..f}{c..f}rr-rrrrrrrrrrrr` (`t` the tag, `r` random). 48 bits of hash
//! are enough: a task's tag is compared only with the tags of one session (two owners of one
//! process would have to collide). `0x7a6c`, a chain's id (`MutexBuilder::owner_chain`):
//! processes, each with its own session, that form one owner (a `zklock` and the `zklock` its
//! command runs), in text `cccccccc-cccc-87a6-b{0..3}rr-…`. A chain's id is compared across
//! sessions, so it has a marker of its own: two tasks of unrelated processes whose hashes
//! happen to be equal stay two owners, and only nodes that say they are a chain's are joined.
//! A leader selector's node (an election named like a mutex, as Curator's `LeaderSelector`
//! names its nodes) carries the marker `0x7a6e`, random bits where the tag would be: the
//! deadlock scan reads a queue with such a node as an election, not a lock
//! (`queue/deadlock.rs`). 58 random bits keep two creates of one owner apart, which is all the
//! protection asks of the uuid: a create finds its node again by its whole prefix, among the
//! nodes of its own session.

use uuid::Uuid;

use super::naming::PROTECTED_MARKER;
use crate::options::OWNER_CHAIN_LIMIT;

/// The 16 bits a task's tagged uuid carries, split around the variant.
const MARKER: u128 = 0x7a6b;
/// The 16 bits a chain's uuid carries instead.
const CHAIN_MARKER: u128 = 0x7a6c;
/// The 16 bits an election participant's uuid carries instead.
const ELECTION_MARKER: u128 = 0x7a6e;
/// Where the parts go in the 128-bit value.
const TAG_SHIFT: u32 = 80;
const TAG_BITS: u32 = 48;
const RANDOM_BITS: u32 = 58;
/// Version 8, the marker's first 12 bits, the variant and the marker's last 4, in place: the
/// bits between the tag and the random ones that every tagged uuid shares.
const FIXED: u128 = fixed(MARKER);
const CHAIN_FIXED: u128 = fixed(CHAIN_MARKER);
const ELECTION_FIXED: u128 = fixed(ELECTION_MARKER);
const FIXED_MASK: u128 = ((1 << TAG_SHIFT) - 1) & !((1 << RANDOM_BITS) - 1);
// The builder refuses a chain's id that a uuid has no room for.
const _: () = assert!(OWNER_CHAIN_LIMIT == 1 << TAG_BITS);

/// The bits between the tag and the random ones, for `marker`.
const fn fixed(marker: u128) -> u128 {
    (0x8 << 76) | ((marker >> 4) << 64) | (0b10 << 62) | ((marker & 0xf) << RANDOM_BITS)
}

/// A uuid of `tag` (under 2^48) and `fixed`'s marker, the random bits of `random`.
fn tagged(tag: u64, fixed: u128, random: Uuid) -> Uuid {
    let random = random.as_u128() & ((1 << RANDOM_BITS) - 1);
    Uuid::from_u128((u128::from(tag) << TAG_SHIFT) | fixed | random)
}

/// The tag `id` carries, and the marker bits it carries them with.
fn parts(id: &Uuid) -> (u64, u128) {
    let bits = id.as_u128();
    (u64::try_from(bits >> TAG_SHIFT).expect("48 bits"), bits & FIXED_MASK)
}

/// What the uuid of a node we create says of it, beyond being ours: who created it, or that it
/// is an election participant's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NodeMark {
    /// A lock's node, created by this owner (a lock built to look for deadlocks, or a link of a
    /// chain).
    Owner(Tag),
    /// A leader selector's node: an election's, never to be read as a lock's.
    Election,
}

impl NodeMark {
    /// A uuid for one create so marked, its random bits from `random` (a fresh version 4 uuid).
    pub(crate) fn uuid(self, random: Uuid) -> Uuid {
        match self {
            NodeMark::Owner(Tag::Task(owner)) => tagged(owner.0, FIXED, random),
            NodeMark::Owner(Tag::Chain(chain)) => tagged(chain.0, CHAIN_FIXED, random),
            NodeMark::Election => {
                let tag_bits = (random.as_u128() >> RANDOM_BITS) & ((1 << TAG_BITS) - 1);
                tagged(u64::try_from(tag_bits).expect("48 bits"), ELECTION_FIXED, random)
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
        match parts(&id) {
            (tag, FIXED) => Some(NodeMark::Owner(Tag::Task(OwnerTag(tag)))),
            (tag, CHAIN_FIXED) => Some(NodeMark::Owner(Tag::Chain(ChainTag(tag)))),
            (_, ELECTION_FIXED) => Some(NodeMark::Election),
            _ => None,
        }
    }
}

/// Who created a lock node, as its uuid says: a task of its session, or a chain of processes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Tag {
    /// A task (or thread) of the node's session.
    Task(OwnerTag),
    /// A chain of processes that form one owner, whatever their sessions.
    Chain(ChainTag),
}

impl Tag {
    /// The tag a lock node (its name, or its full path) carries in its protected prefix (see
    /// [`NodeMark::of_node`]); `None` for a node without one, whose uuid carries none, or an
    /// election's.
    pub(crate) fn of_node(node: &str) -> Option<Tag> {
        match NodeMark::of_node(node)? {
            NodeMark::Owner(tag) => Some(tag),
            NodeMark::Election => None,
        }
    }
}

/// A chain's id: processes (each with its own session) that form one owner, such as a `zklock`
/// and the `zklock` its command runs (`MutexBuilder::owner_chain`). 48 bits, chosen at random
/// by the chain's first process: compared across sessions, two chains are one only if their
/// random ids collide.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct ChainTag(u64);

impl ChainTag {
    /// The chain `id`; `None` unless it is under 2^48.
    pub(crate) fn new(id: u64) -> Option<ChainTag> {
        (id < OWNER_CHAIN_LIMIT).then_some(ChainTag(id))
    }

    /// The id as a number (under 2^48).
    pub(crate) fn value(self) -> u64 {
        self.0
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::naming::{KAZOO_MUTEX, MUTEX, READ, WRITE};

    /// A task's tag as the tests read and write it.
    impl OwnerTag {
        /// A uuid for one create of this owner: the tag, the marker, and the random bits of
        /// `random` (a fresh version 4 uuid), so that two creates differ.
        fn uuid(self, random: Uuid) -> Uuid {
            NodeMark::Owner(Tag::Task(self)).uuid(random)
        }

        /// The tag `id` carries; `None` for any uuid [`uuid`](Self::uuid) did not make.
        fn of_uuid(id: &Uuid) -> Option<OwnerTag> {
            let (tag, fixed) = parts(id);
            (fixed == FIXED).then_some(OwnerTag(tag))
        }

        /// The task's tag a lock node (its name, or its full path) carries in its protected prefix
        /// (see [`NodeMark::of_node`]); `None` for a node without one, or whose uuid carries
        /// another mark.
        fn of_node(node: &str) -> Option<OwnerTag> {
            match Tag::of_node(node)? {
                Tag::Task(owner) => Some(owner),
                Tag::Chain(_) => None,
            }
        }
    }

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
        let task = NodeMark::Owner(Tag::Task(OwnerTag::from_hash(9)));
        let name = format!("{}0000000001", MUTEX.protected_prefix(&task.uuid(Uuid::new_v4())));
        assert_eq!(NodeMark::of_node(&name), Some(task));
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

    /// A chain's id and a task's tag of the same value are told apart: only the chain's joins
    /// sessions in the wait-for graph.
    #[test]
    fn a_chains_uuid_gives_its_id_back_and_is_never_read_as_a_tasks_tag() {
        for id in [0, 1, 0xdead_beef, (1 << 48) - 1] {
            let chain = ChainTag::new(id).expect("under 2^48");
            let uuid = NodeMark::Owner(Tag::Chain(chain)).uuid(Uuid::new_v4());
            assert_eq!(uuid.get_version_num(), 8, "{uuid}");
            assert_eq!(uuid.get_variant(), uuid::Variant::RFC4122, "{uuid}");
            assert_eq!(OwnerTag::of_uuid(&uuid), None, "{uuid} is no task's tag");
            assert!(uuid.hyphenated().to_string()[14..20].starts_with("87a6-b"), "{uuid}");
            assert_eq!(&uuid.simple().to_string()[..12], format!("{id:012x}"), "the id leads, as a task's tag does");
            for schema in [MUTEX, READ, WRITE, KAZOO_MUTEX] {
                let name = format!("{}0000000007", schema.protected_prefix(&uuid));
                assert_eq!(Tag::of_node(&name), Some(Tag::Chain(chain)), "{name}");
                assert_eq!(OwnerTag::of_node(&name), None, "{name}");
                assert_eq!(schema.parse_sequence(&name), Some(7), "still a lock node: {name}");
            }
            let task = OwnerTag::from_hash(id).uuid(Uuid::new_v4());
            let name = format!("{}0000000001", MUTEX.protected_prefix(&task));
            assert_eq!(Tag::of_node(&name), Some(Tag::Task(OwnerTag::from_hash(id))), "the same value as a task's");
        }
        assert_eq!(ChainTag::new(1 << 48), None, "over 48 bits");
    }
}
