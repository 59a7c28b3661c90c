//! `--auth` protects the lock: the nodes zklock creates take the parent's ACL (or `--acl`), and
//! a lock anyone could take or break is refused; a second, unauthenticated client proves it.

use crate::common;
use crate::support;

use std::time::Duration;

use common::{connect, server, unique_path};
use support::{hold, zklock, NOT_ALLOWED, USAGE};
use zookeeper_client::{Acls, Client, CreateMode, Error as ZkError};

const AUTH: &str = "digest:deployer:secret";

async fn deployer() -> Client {
    Client::connector().with_auth("digest", b"deployer:secret").connect(&server().connect_string()).await.unwrap()
}

/// `base`, digest-only (the deployer may do anything, nobody else anything), under an open
/// tests' root.
async fn locked_down(base: &str) -> Client {
    let owner = deployer().await;
    let root = &base[..base.rfind('/').unwrap()];
    owner.mkdir(root, &CreateMode::Persistent.with_acls(Acls::anyone_all())).await.unwrap();
    owner.create(base, b"", &CreateMode::Persistent.with_acls(Acls::creator_all())).await.unwrap();
    owner
}

/// The holder authenticated under a digest-only parent: an anonymous client can neither delete
/// its node, nor queue in the lock path, nor take the lock with zklock (77, not busy).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_a_digest_only_parent_an_anonymous_client_can_neither_take_nor_break_the_lock() {
    let base = unique_path("cli-acl-parent");
    let owner = locked_down(&base).await;
    let lock = format!("{base}/deploy");
    let zk = server().connect_string();
    for options in [vec![], vec!["--semaphore", "2"]] {
        let lock = format!("{lock}{}", options.len());
        let mut args = vec!["--auth", AUTH];
        args.extend(&options);
        let (mut holder, node) = hold(&zk, &args, &lock);
        let anonymous = connect().await;
        assert_eq!(anonymous.delete(&node, None).await, Err(ZkError::NoAuth), "{options:?}: deleted the holder's node");
        let queue = &node[..node.rfind('/').unwrap()];
        let jump = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
        let created = anonymous.create(&format!("{queue}/_c_x-lock-"), b"", &jump).await.map(|_| ());
        assert_eq!(created, Err(ZkError::NoAuth), "{options:?}: queued in the lock path");
        let mut intruder = zklock(&zk);
        let taken = intruder.args(&options).args(["-n", &lock, "--", "true"]).output().unwrap();
        assert_eq!(taken.status.code(), Some(NOT_ALLOWED), "{options:?}: {taken:?}");
        assert!(owner.check_stat(&node).await.unwrap().is_some(), "{options:?}: the holder's node is there");
        holder.signal_job(libc::SIGTERM);
        assert_eq!(holder.wait(Duration::from_secs(20)).code(), Some(support::TERMINATED), "{options:?}");
    }
}

/// With --auth, a lock path that would be open to anyone is refused before anything is created;
/// `--acl auth::cdrwa` makes it the creator's, and an anonymous client is then kept out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_auth_a_lock_open_to_anyone_is_refused_and_acl_closes_it() {
    let zk = server().connect_string();
    let lock = unique_path("cli-acl-open");
    let refused = zklock(&zk).args(["--auth", AUTH, &lock, "--", "true"]).output().unwrap();
    assert_eq!(refused.status.code(), Some(USAGE), "{refused:?}");
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("world:anyone") && stderr.contains("--acl"), "{stderr}");
    let anonymous = connect().await;
    assert_eq!(anonymous.check_stat(&lock).await.unwrap(), None, "nothing created");
    let given = ["--auth", AUTH, "--acl", "auth::cdrwa,world:anyone:r"];
    let (mut holder, node) = hold(&zk, &given, &lock);
    assert_eq!(anonymous.delete(&node, None).await, Err(ZkError::NoAuth));
    let (acls, _) = anonymous.get_acl(&lock).await.unwrap();
    assert!(acls.iter().any(|acl| acl.scheme() == "digest"), "{acls:?}");
    holder.signal_job(libc::SIGTERM);
    assert_eq!(holder.wait(Duration::from_secs(20)).code(), Some(support::TERMINATED));
    let open = zklock(&zk).args(["--auth", AUTH, "--acl", "world:anyone:cdrwa", &lock, "--", "true"]).output();
    assert_eq!(open.unwrap().status.code(), Some(USAGE), "an open --acl is refused too");
}
