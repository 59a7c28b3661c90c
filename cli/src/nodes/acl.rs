//! Which ACL the nodes zklock creates get, and the refusal of a lock anyone may take.
//!
//! ZooKeeper checks CREATE and DELETE on a node's parent: whoever may create in the lock path
//! may queue (take the lock), whoever may delete there may delete the holder's node. So the
//! lock path's ACL is the lock's protection. Nodes zklock creates take `--acl`, else the ACL of
//! the nearest node that exists on the way to the lock path (the lock path itself, or the parent
//! that someone locked down): a digest-only parent makes a digest-only lock.

use zklock::AclProvider;
use zookeeper_client::{Acl, AuthId, Client, Error as ZkError, Permission};

use crate::nodes::layout::SEMAPHORE_FOLDERS;
use crate::output::exit::{Failure, Outcome};

/// Parses one `--acl` entry, as zkCli's setAcl writes it: `SCHEME:ID:PERMS`, PERMS letters of
/// `cdrwa` (`auth::cdrwa` is the authenticated creator, `world:anyone:r` everyone reading).
pub fn parse_acl(text: &str) -> Result<Acl, String> {
    let bad = || format!("{text:?}: an ACL is SCHEME:ID:PERMS, e.g. auth::cdrwa or world:anyone:r");
    let (scheme, rest) = text.split_once(':').ok_or_else(bad)?;
    let (id, letters) = rest.rsplit_once(':').ok_or_else(bad)?;
    if scheme.is_empty() || letters.is_empty() {
        return Err(bad());
    }
    let mut permission = Permission::NONE;
    for letter in letters.chars() {
        permission = permission
            | match letter {
                'r' => Permission::READ,
                'w' => Permission::WRITE,
                'c' => Permission::CREATE,
                'd' => Permission::DELETE,
                'a' => Permission::ADMIN,
                _ => return Err(format!("{text:?}: permissions are letters of cdrwa, not {letter:?}")),
            };
    }
    Ok(Acl::new(permission, AuthId::new(scheme, id)))
}

/// The ACL for the nodes zklock creates at `path` (`asked` from `--acl`, else inherited), after
/// refusing, when we `authenticate`, a lock path that anyone could queue in or delete from.
pub async fn for_path(client: &Client, path: &str, asked: &[Acl], authenticate: bool) -> Result<AclProvider, Failure> {
    let (nearest, found) = nearest_acl(client, path).await?;
    let acls = if asked.is_empty() { found.clone() } else { asked.to_vec() };
    if authenticate {
        let how = match asked.is_empty() {
            true => "give --acl (e.g. --acl auth::cdrwa,world:anyone:r) or lock the parent down",
            false => "--acl must not give world:anyone more than r",
        };
        refuse_open(path, &acls, how)?;
        // Nodes that exist keep their ACL whatever we create with.
        let how = "setAcl it (e.g. to auth::cdrwa,world:anyone:r)";
        if nearest == path {
            refuse_open(path, &found, how)?;
        }
        for folder in SEMAPHORE_FOLDERS {
            let folder = format!("{path}/{folder}");
            if let Some(existing) = acl_of(client, &folder).await? {
                refuse_open(&folder, &existing, how)?;
            }
        }
    }
    Ok(AclProvider::uniform(acls))
}

/// The path and ACL of `path`, or of its nearest ancestor that exists.
async fn nearest_acl(client: &Client, path: &str) -> Result<(String, Vec<Acl>), Failure> {
    let mut at = path.to_owned();
    loop {
        if let Some(acls) = acl_of(client, &at).await? {
            return Ok((at, acls));
        }
        at = match at.rfind('/') {
            Some(0) | None => "/".to_owned(),
            Some(slash) => at[..slash].to_owned(),
        };
    }
}

async fn acl_of(client: &Client, path: &str) -> Result<Option<Vec<Acl>>, Failure> {
    match client.get_acl(path).await {
        Ok((acls, _)) => Ok(Some(acls)),
        Err(ZkError::NoNode) => Ok(None),
        Err(err) => Err(Failure::zookeeper("get ACL of", path, err)),
    }
}

/// Whether the ACL lets anyone, authenticated or not, change what is under a node or the node.
pub fn open_to_anyone(acls: &[Acl]) -> bool {
    let changes = [Permission::CREATE, Permission::DELETE, Permission::WRITE, Permission::ADMIN];
    acls.iter()
        .any(|acl| acl.scheme() == "world" && acl.id() == "anyone" && changes.iter().any(|&p| acl.permission().has(p)))
}

/// Refuses, saying `how` to fix it, a node under which anyone could take the lock or delete its
/// holder's node.
fn refuse_open(path: &str, acls: &[Acl], how: &str) -> Result<(), Failure> {
    if !open_to_anyone(acls) {
        return Ok(());
    }
    Err(Failure::new(
        Outcome::Usage,
        format!("{path} would let anyone take the lock or delete its holder's node (world:anyone); with --auth, {how}"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acls_read_as_zkcli_writes_them() {
        let creator = parse_acl("auth::cdrwa").unwrap();
        assert_eq!((creator.scheme(), creator.id(), creator.permission()), ("auth", "", Permission::ALL));
        let digest = parse_acl("digest:deployer:x1Y=:rw").unwrap();
        assert_eq!(digest.id(), "deployer:x1Y=");
        assert_eq!(digest.permission(), Permission::READ | Permission::WRITE);
        assert!(parse_acl("world:anyone").is_err());
        assert!(parse_acl("world:anyone:x").is_err());
        assert!(parse_acl(":anyone:r").is_err());
    }

    #[test]
    fn only_anyone_changing_something_is_open() {
        assert!(!open_to_anyone(&[parse_acl("world:anyone:r").unwrap(), parse_acl("auth::cdrwa").unwrap()]));
        assert!(open_to_anyone(&[parse_acl("world:anyone:rc").unwrap()]));
        assert!(open_to_anyone(&[parse_acl("world:anyone:d").unwrap()]));
        assert!(!open_to_anyone(&[parse_acl("ip:10.0.0.0/8:cdrwa").unwrap()]));
    }
}
