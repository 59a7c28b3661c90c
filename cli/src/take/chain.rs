//! The chain a `zklock` is a link of. A `zklock` started by the command of another `zklock`
//! (which holds its lock until that command ends) is one owner with it, though each has a
//! session of its own: the outer one holds while the inner one waits. The outermost one picks
//! the chain's id at random and passes it on in `ZKLOCK_CHAIN`; every link's lock node carries
//! it (`zklock::MutexBuilder::owner_chain`), so that `zklock deadlocks` reads the chain as one
//! member of a ring: `zklock /a -- zklock /b -- …` beside `zklock /b -- zklock /a -- …` is a
//! deadlock of two chains, where as four sessions none that waits holds anything.
//!
//! One owner only while its links run one inside the other: an outer link is held up by what
//! its command's `zklock` waits for, but two `zklock`s that a command runs side by side (`&`,
//! `xargs -P`) hold up nothing of each other, and read as one owner they would make rings that
//! are not there. So each link admits one inner link at a time: it passes on, in
//! `ZKLOCK_CHAIN_LINK`, a file of its own (a memfd, reached through `/proc`) that an inner
//! `zklock` must lock (`flock`, without waiting) to join; it keeps the lock for its life. An
//! inner `zklock` that finds it taken (a sibling holds it) starts a chain of its own: a ring
//! through it may be missed, never made up.

use std::fmt;
use std::fs::File;
use std::os::fd::AsRawFd as _;
use std::sync::OnceLock;

use nix::fcntl::{Flock, FlockArg};
use nix::sys::memfd::{memfd_create, MFdFlags};
use tracing::info;

use crate::nodes::node_data::host_pid;
use crate::output::exit::{Failure, Outcome};

/// The variable that passes the chain on to the command.
pub const VARIABLE: &str = "ZKLOCK_CHAIN";

/// The variable that passes on the file an inner link locks to join (zklock's own: a path
/// under /proc).
pub const LINK_VARIABLE: &str = "ZKLOCK_CHAIN_LINK";

/// What a link keeps open for its life: the outer link's file it locked (if it joined one),
/// and its own, which its inner link locks.
static LINKS: OnceLock<(Option<Flock<File>>, Option<File>)> = OnceLock::new();

/// Every chain's id is under it: a lock node's uuid has room for 48 bits.
const LIMIT: u64 = 1 << 48;

/// A chain's id, written as 12 hex digits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Chain(u64);

impl Chain {
    /// The chain `ZKLOCK_CHAIN` names, if this is its outer link's one inner link now (or no
    /// outer link says: a chain set by hand), else (unset, empty, or a sibling already inner)
    /// a new one, its id at random; sets `ZKLOCK_CHAIN` and `ZKLOCK_CHAIN_LINK` to it and to
    /// this link's file, for the command to inherit.
    ///
    /// # Errors
    /// A usage failure when `ZKLOCK_CHAIN` is no chain's id: said before anything is sent.
    ///
    /// Call it before the runtime starts: setting a variable while another thread may read the
    /// environment is undefined behaviour in glibc.
    pub fn join() -> Result<Chain, Failure> {
        let named = match std::env::var_os(VARIABLE) {
            Some(value) if !value.is_empty() => Some(Chain::parse(&value.to_string_lossy())?),
            _ => None,
        };
        let outer_link = std::env::var_os(LINK_VARIABLE).filter(|link| !link.is_empty());
        let (chain, joined) = match (named, outer_link) {
            (Some(chain), Some(link)) => match lock_link(&link) {
                Some(joined) => (chain, Some(joined)),
                None => {
                    info!(chain = %chain, "another zklock of this command is the chain's inner link now: starting a chain of our own");
                    (Chain(fastrand::u64(..LIMIT)), None)
                }
            },
            (Some(chain), None) => (chain, None),
            (None, _) => (Chain(fastrand::u64(..LIMIT)), None),
        };
        let own = memfd_create(c"zklock-chain-link", MFdFlags::MFD_CLOEXEC).ok().map(File::from);
        std::env::set_var(VARIABLE, chain.to_string());
        match &own {
            Some(own) => std::env::set_var(LINK_VARIABLE, format!("/proc/{}/fd/{}", host_pid(), own.as_raw_fd())),
            // No file to lock: no inner link can join (its rings missed, never made up).
            None => std::env::set_var(LINK_VARIABLE, "/nonexistent"),
        }
        let _ = LINKS.set((joined, own));
        Ok(chain)
    }

    /// 1 to 12 hex digits.
    fn parse(text: &str) -> Result<Chain, Failure> {
        let digits = (1..=12).contains(&text.len()) && text.bytes().all(|byte| byte.is_ascii_hexdigit());
        let id = digits.then(|| u64::from_str_radix(text, 16).ok()).flatten();
        id.map(Chain).ok_or_else(|| {
            let message =
                format!("{VARIABLE}={text}: not a chain's id (1 to 12 hex digits); unset it to start a chain");
            Failure::new(Outcome::Usage, message)
        })
    }

    /// The id, under 2^48.
    pub fn id(self) -> u64 {
        self.0
    }
}

/// The outer link's file at `link`, locked for this process's life: `None` when it is locked
/// already (a sibling is the inner link) or cannot be opened (the outer link is gone).
fn lock_link(link: &std::ffi::OsStr) -> Option<Flock<File>> {
    let file = File::open(link).ok()?;
    Flock::lock(file, FlockArg::LockExclusiveNonblock).ok()
}

impl fmt::Display for Chain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:012x}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_is_1_to_12_hex_digits_and_written_as_12() {
        assert_eq!(Chain::parse("abc").unwrap().to_string(), "000000000abc");
        assert_eq!(Chain::parse("FFFFFFFFFFFF").unwrap().id(), LIMIT - 1);
        for bad in ["", "1000000000000", "xyz", "-1", "+1", " 1", "0x1"] {
            let failure = Chain::parse(bad).unwrap_err();
            assert_eq!(failure.outcome, Outcome::Usage, "{bad}");
            assert!(failure.message.starts_with(&format!("ZKLOCK_CHAIN={bad}: not a chain's id")), "{bad}");
        }
    }
}
