//! `zklock revoke NODE`: ask the holder of a lock node to let go, and nothing else. The request
//! overwrites the node's data, so it is written only to a node that is a lock participant's:
//! ephemeral, sequential and named as a lock schema zklock knows.

use std::process::ExitCode;

use zookeeper_client::{Client, Error as ZkError};

use crate::nodes::layout::Kind;
use crate::output::exit::{Failure, Outcome};

/// Writes the revocation request into `node` after checking that it is a lock participant's.
pub async fn revoke(client: &Client, node: &str) -> Result<ExitCode, Failure> {
    revocable_name(node).map_err(|why| Failure::new(Outcome::Usage, format!("{node} {why}; not revoked")))?;
    let stat = match client.check_stat(node).await {
        Ok(Some(stat)) => stat,
        Ok(None) | Err(ZkError::NoNode) => {
            return Err(Failure::new(Outcome::NoHolder, format!("{node} does not exist (released?); not revoked")))
        }
        Err(err) => return Err(Failure::zookeeper("stat", node, err)),
    };
    if stat.ephemeral_owner == 0 {
        let why = "is not ephemeral, so no holder's session owns it";
        return Err(Failure::new(Outcome::Usage, format!("{node} {why}; not revoked")));
    }
    zklock::revoke(client, node).await.map_err(Failure::from_lock_error)?;
    // The request is written, which is what a script acts on: exit 0 even when the line that
    // says so cannot be printed, and say that on stderr (nothing for a reader that left).
    let said = format!("asked the holder of {node} to let go");
    if let Err(failure) = crate::output::stdout::line(&said) {
        if failure.outcome == Outcome::CannotWrite {
            crate::output::stderr::warn(&format!("{said}; {}", failure.message));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Whether `node`'s name is a lock participant's in a schema zklock knows (a read-write,
/// mutex or kazoo lock node, or a semaphore lease), or why not. An election's node is not
/// revocable: a leader latch has no revocation, and the request would overwrite its id.
fn revocable_name(node: &str) -> Result<(), &'static str> {
    let (parent, name) = node.rsplit_once('/').ok_or("is not a path")?;
    let sequential = name.len() > 10 && name[name.len() - 10..].bytes().all(|b| b.is_ascii_digit());
    if !sequential {
        return Err("is not a lock participant's node (its name has no sequence number)");
    }
    let protected = name.starts_with("_c_") || is_kazoo_protected(name);
    let lease = parent.ends_with("/leases") && name.starts_with("_c_") && name.contains("-lease-");
    match Kind::of_node(name) {
        Some(Kind::Latch) => Err("is an election's node, which cannot be revoked (stop its zklock instead)"),
        Some(_) if protected => Ok(()),
        None if lease => Ok(()),
        _ => Err("is not a lock participant's node (not named as a zklock, Curator or kazoo lock node)"),
    }
}

/// kazoo protects a lock node with its uuid as 32 hex digits before the lock name.
fn is_kazoo_protected(name: &str) -> bool {
    name.len() > 32 && name[..32].bytes().all(|b| b.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_lock_participants_nodes_are_revocable() {
        let uuid = "_c_6ba7b810-9dad-11d1-80b4-00c04fd430c8-";
        for node in [
            format!("/l/{uuid}__WRIT__0000000007"),
            format!("/l/{uuid}__READ__0000000007"),
            format!("/l/{uuid}lock-0000000001"),
            format!("/l/leases/{uuid}lease-0000000003"),
            "/l/6ba7b8109dad11d180b400c04fd430c8__lock__0000000002".to_owned(),
        ] {
            assert_eq!(revocable_name(&node), Ok(()), "{node}");
        }
        for node in [
            "/appcfg".to_owned(),
            "/l".to_owned(),
            "/l/config".to_owned(),
            "/l/lock-0000000001".to_owned(),
            format!("/l/{uuid}latch-0000000001"),
            format!("/l/{uuid}lease-0000000001"),
            format!("/l/{uuid}lock-x"),
        ] {
            assert!(revocable_name(&node).is_err(), "{node}");
        }
    }
}
