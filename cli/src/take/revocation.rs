//! How a holder answers a request to let go (`zklock revoke`): the same for a command run under
//! the lock and for a hold without one.

use crate::cli::OnRevoke;

/// How a holder answers: it writes its own data back, then does what `--on-revoke` says.
#[derive(Debug)]
pub struct Revocation {
    pub policy: OnRevoke,
    /// What the request overwrote in our node, written back so that `zklock list` still shows
    /// who holds.
    pub own_data: String,
}
