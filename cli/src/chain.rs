//! The chain a `zklock` is a link of. A `zklock` started by the command of another `zklock`
//! (which holds its lock until that command ends) is one owner with it, though each has a
//! session of its own: the outer one holds while the inner one waits. The outermost one picks
//! the chain's id at random and passes it on in `ZKLOCK_CHAIN`; every link's lock node carries
//! it (`zklock::MutexBuilder::owner_chain`), so that `zklock deadlocks` reads the chain as one
//! member of a ring: `zklock /a -- zklock /b -- …` beside `zklock /b -- zklock /a -- …` is a
//! deadlock of two chains, where as four sessions none that waits holds anything.

use std::fmt;

use crate::exit::{Failure, Outcome};

/// The variable that passes the chain on to the command.
pub const VARIABLE: &str = "ZKLOCK_CHAIN";

/// Every chain's id is under it: a lock node's uuid has room for 48 bits.
const LIMIT: u64 = 1 << 48;

/// A chain's id, written as 12 hex digits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Chain(u64);

impl Chain {
    /// The chain `ZKLOCK_CHAIN` names, else (unset or empty) a new one, its id at random; sets
    /// `ZKLOCK_CHAIN` to it, for the command to inherit.
    ///
    /// # Errors
    /// A usage failure when `ZKLOCK_CHAIN` is no chain's id: said before anything is sent.
    ///
    /// Call it before the runtime starts: setting a variable while another thread may read the
    /// environment is undefined behaviour in glibc.
    pub fn join() -> Result<Chain, Failure> {
        let chain = match std::env::var_os(VARIABLE) {
            Some(value) if !value.is_empty() => Chain::parse(&value.to_string_lossy())?,
            _ => Chain(fastrand::u64(..LIMIT)),
        };
        std::env::set_var(VARIABLE, chain.to_string());
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
