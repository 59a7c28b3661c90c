"""The mutants of scripts/explore-mutants: each reverts one fix of a hole found where two
features meet. A mutant that no longer applies fails loudly: update it with the code."""
import sys
root = sys.argv[1]; which = sys.argv[2]
def edit(path, old, new):
    p = f"{root}/{path}"
    s = open(p).read()
    assert old in s, (which, path, old[:60])
    open(p, "w").write(s.replace(old, new, 1))
if which == "ghost-multi":  # issue 29 item 1: the own-node watch sent beside the predecessor's
    p = f"{root}/src/queue/turn.rs"
    s = open(p).read()
    start = s.index("async fn handoff(client: &Client, node: &LockNode, predecessor: &str) -> Result<bool> {")
    end = s.index("/// What `future` resolves to if it is ready at its first poll.")
    s = s[:start] + '''async fn handoff(client: &Client, node: &LockNode, predecessor: &str) -> Result<bool> {
    let own = client.get_and_watch_data(&node.path);
    let ahead = client.get_and_watch_data(predecessor);
    let own = match own.await {
        Ok((_data, _stat, watcher)) => watcher,
        Err(ZkError::NoNode) => return Err(Error::LockNodeDeleted { path: node.path.clone() }),
        Err(_) => return Ok(false),
    };
    let mut own_fired = Box::pin(own.changed());
    match ahead.await {
        Ok((_data, _stat, watcher)) => {
            if !changed(watcher).await? {
                return Ok(false);
            }
        }
        Err(ZkError::NoNode) => {}
        Err(_) => return Ok(false),
    }
    if ready_now(own_fired.as_mut()).is_some() {
        return Err(Error::LockNodeDeleted { path: node.path.clone() });
    }
    Ok(true)
}

''' + s[end:]
    open(p, "w").write(s)
elif which == "handoff-downgrade":  # item 2
    edit("src/lock/cohort.rs", "node.is_held() && !node.is_revocation_requested() && !node.is_downgraded()", "node.is_held() && !node.is_revocation_requested()")
elif which == "handoff-unwatched":  # item 3
    edit("src/lock/cohort.rs", "Some(node) => Some(within(deadline, node.watched()).await?),", "Some(_node) => Some(true),")
elif which == "handoff-revoked":  # item 4
    edit("src/lock/cohort.rs", "node.is_held() && !node.is_revocation_requested() && !node.is_downgraded()", "node.is_held() && !node.is_downgraded()")
elif which == "session-try-waits":  # item 5
    edit("src/queue/session.rs", "            Source::Session(session) if patience == Patience::NoWait => {\n                let client = session.client();\n                (!matches!(ended_session(&client), Some(Error::SessionExpired))).then_some(client)\n            }\n", "")
elif which == "session-no-ride-over":  # item 8
    edit("src/queue/session.rs", "matches!((outcome, &self.0), (Err(Error::SessionExpired), Source::Session(_)))", "matches!((outcome, &self.0), (Err(Error::SessionClosed), Source::Client(_))) && false")
elif which == "downgrade-deleted":  # found by the explorer
    edit("src/queue/node.rs", "            stands_beside(spec.client, level, replies.beside).await?;", "            let _ = (level, replies.beside);")
elif which == "multi-stale":  # found by the explorer: a multi-lock returns a lock lost meanwhile
    edit("src/lock/multi.rs", "            if guards.iter().all(LockGuard::is_held) {", "            if !guards.is_empty() {")
else:
    raise SystemExit(f"unknown mutation {which}")
