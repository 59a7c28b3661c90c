"""The mutants of scripts/explore-mutants, and its results: each mutant reverts one fix of a hole
found where two features meet. A mutant that no longer applies fails loudly: update it with the
code.
  explore-mutants.py list                              the mutants' names, one a line
  explore-mutants.py apply TREE MUTANT                 breaks TREE's code as MUTANT says
  explore-mutants.py check TREE                        applies every mutant to a copy of TREE's
                                                       src/ (CI: a mutant that no longer applies)
  explore-mutants.py record FILE MUTANT LOG SECONDS COMMIT
                                                       writes MUTANT's row of FILE's table (CONTRIBUTING.md) from
                                                       the explorer's LOG (its explore: lines)
"""
import datetime
import re
import sys

SESSION = "src/client/session.rs"
COHORT = "src/lock/cohort.rs"
HELD = "src/hold/held_node.rs"
PASSES = "node.is_held() && !node.is_revocation_requested() && !node.is_downgraded()"

# name -> (the item of issue 29, or who found it; the fix that is reverted; its edits, each a
# file and a text replaced in it)
MUTANTS = {
    "ghost-multi": ("1", "a waiter deleted with its predecessor in one `multi` holds (own-node watch sent beside the predecessor's)", []),
    "handoff-downgrade": ("2", "local handoff after a downgrade", [(COHORT, PASSES, "node.is_held() && !node.is_revocation_requested()")]),
    "handoff-unwatched": ("3", "local handoff of a node deleted before its watch answered", [
        (COHORT, "Some(node) => Some(within(deadline, node.known_to_exist()).await?),", "Some(_node) => Some(true),")]),
    # Issue 43 reverted: a watch answered before a disconnection is trusted after it.
    "handoff-disconnected": ("issue 43", "local handoff of a node deleted while the connection was down (the watch's old answer trusted)", [
        (HELD, "        if self.signal.armed_unbroken() {\n", "        if !self.signal.armed_unbroken() || true {\n")]),
    "handoff-revoked": ("4", "local handoff of a revoked node", [(COHORT, PASSES, "node.is_held() && !node.is_downgraded()")]),
    "session-try-waits": ("5", "a try on a `Session` with no live session waits for the next", [
        (SESSION, "            Source::Session(session) if patience == Patience::NoWait => {\n                let client = session.client();\n"
         "                if matches!(check_session_ended(&client), Some(Error::SessionExpired)) {\n                    return Ok(None);\n"
         "                }\n                Arc::new(client)\n            }\n", "")]),
    # c53e384 reverted: a Session starts as Connected, and follows only its client's changes.
    "session-from-expired": ("6", "`Session::from_client` given an expired client says `Connected` and never reconnects", [
        (SESSION, "            Some(SessionEnd::Expired) => ConnectionState::Lost,\n", ""),
        (SESSION, "    let mut state = states.state();\n    loop {", "    let mut state = SessionState::SyncConnected;\n    loop {")]),
    # 414c4d4 reverted: Reconnected does not count the sessions lost.
    "session-expiries-uncounted": ("7", "`Reconnected` does not count the expiries (a late `subscribe()` reader cannot tell a loss)", [
        (SESSION, "                    expiries += 1;\n", "")]),
    "session-no-ride-over": ("8", "an acquire on a `Session` fails with the expiry it could ride over", [
        (SESSION, "matches!((outcome, &self.source), (Err(Error::SessionExpired), Source::Session(_)))",
         "matches!((outcome, &self.source), (Err(Error::SessionClosed), Source::Client(_))) && false")]),
    "downgrade-deleted": ("explorer", "a downgrade beside a deleted write node", [
        ("src/queue/node.rs", "            Box::pin(stands_beside(spec.client, spec.retry, level, beside)).await?;", "            let _ = (level, beside);")]),
    # Issue 38 item 1 reverted: the scan reads a queue of marked election nodes (a selector's) as a lock.
    "deadlock-election-read": ("issue 38 item 1", "the deadlock scan reads a leader selector's queue as a mutex's (its election mark ignored)", [
        ("src/queue/deadlock.rs", "if !contenders.iter().any(|node| NodeMark::of_node(node) == Some(NodeMark::Election)) {",
         "if !contenders.iter().any(|node| NodeMark::of_node(node) == Some(NodeMark::Election)) || true {")]),
    # Issue 38 item 2 reverted: a waiter's edges go to the holders only, not to the nodes waiting ahead.
    "deadlock-waiter-holders-only": ("issue 38 item 2", "a waiter's edges go only to holders (a reader behind its own task's read and a waiting writer: no ring)", [
        ("src/rules/wait_for.rs", "for holder in ahead.filter(|node| vertex(node) != vertex(waiter)) {",
         "for holder in ahead.filter(|node| vertex(node) != vertex(waiter) && node.behind.is_empty()) {")]),
    # Issue 38 item 3 reverted: a chain's node is read as its session's, as before chains were.
    "deadlock-chain-unread": ("issue 38 item 3", "a chain's node is read as its session's (`zklock /a -- zklock /b` beside `zklock /b -- zklock /a`: no ring)", [
        ("src/rules/wait_for.rs", "Some(Tag::Chain(chain)) => Vertex::Chain(chain),", "Some(Tag::Chain(_)) => Vertex::Session(node.session),")]),
    # Issue 38 item 5 reverted: one refused listing stops the queue view for good.
    "queue-view-freezes": ("issue 38 item 5", "one refused listing stops a waiter's queue view for good", [
        ("src/queue/position.rs", "            let (children, watcher) = match retry_transient(retry, || client.list_and_watch_children(lock_path)).await {\n",
         "            let (children, watcher) = match client.list_and_watch_children(lock_path).await {\n"),
        ("src/queue/position.rs", "                    failures.pause().await;\n                    continue;\n",
         "                    let _ = &mut failures;\n                    return std::future::pending().await;\n")]),
    "multi-stale": ("explorer", "a multi-lock returning a lock lost while it waited", [
        ("src/lock/multi.rs", "            if guards.iter().all(LockGuard::is_held) {", "            if !guards.is_empty() {")]),
}


def edit(root, which, path, old, new):
    p = f"{root}/{path}"
    s = open(p).read()
    assert old in s, (which, path, old[:60])
    open(p, "w").write(s.replace(old, new, 1))


def apply(root, which):
    if which == "ghost-multi":  # the own-node watch sent beside the predecessor's
        p = f"{root}/src/queue/turn.rs"
        s = open(p).read()
        start = s.index("async fn succeeds_predecessor(client: &Client, retry: RetryPolicy, node: &LockNode, predecessor: &str) -> Result<bool> {")
        end = s.index("/// What `future` resolves to if it is ready at its first poll.")
        s = s[:start] + '''async fn succeeds_predecessor(client: &Client, retry: RetryPolicy, node: &LockNode, predecessor: &str) -> Result<bool> {
    let _ = retry;
    let own = client.get_and_watch_data(&node.path);
    let ahead = client.get_and_watch_data(predecessor);
    let own = match own.await {
        Ok((_data, _stat, watcher)) => watcher,
        Err(ZkError::NoNode) => return Err(Error::LockLost(LossReason::NodeDeleted)),
        Err(_) => return Ok(false),
    };
    let mut own_fired = Box::pin(own.changed());
    match ahead.await {
        Ok((_data, _stat, watcher)) => {
            let event = watcher.changed().await;
            if let Some(end) = SessionEnd::of_state(event.session_state) {
                return Err(end.error());
            }
            if event.event_type != EventType::NodeDeleted {
                return Ok(false);
            }
        }
        Err(ZkError::NoNode) => {}
        Err(_) => return Ok(false),
    }
    if ready_now(own_fired.as_mut()).is_some() {
        return Err(Error::LockLost(LossReason::NodeDeleted));
    }
    Ok(true)
}

''' + s[end:]
        open(p, "w").write(s)
    elif which in MUTANTS:
        for path, old, new in MUTANTS[which][2]:
            edit(root, which, path, old, new)
    else:
        raise SystemExit(f"unknown mutant {which}")


def check(root):
    """Applies each mutant to a fresh copy of `root`'s src/: the code changed under a mutant's
    text fails here, in CI, not when someone next runs the mutants."""
    import shutil
    import tempfile
    for which in MUTANTS:
        with tempfile.TemporaryDirectory() as copy:
            shutil.copytree(f"{root}/src", f"{copy}/src")
            apply(copy, which)
    print(f"explore-mutants: all {len(MUTANTS)} mutants apply")


BEGIN = "<!-- explore-mutants: begin (written by scripts/explore-mutants; edits here are overwritten) -->"
END = "<!-- explore-mutants: end -->"
HEADER = [
    "| mutant | issue 29 item | fix reverted | found | cases | seconds | seed | shrunk to | what broke | run at |",
    "|---|---|---|---|---|---|---|---|---|---|",
]


def plain(violation):
    """A violation without the run's unique paths and timings, so that rows compare."""
    violation = re.sub(r"/zklock-tests/explore-\d+-\d+-\d+/([a-z-]+)", r"\1", violation)
    violation = re.sub(r"/_c_[0-9a-f-]+-(__READ__|__WRIT__|lock-|lease-)?\d+", "/(node)", violation)
    violation = re.sub(r"\d+(\.\d+)?(ms|µs|ns|s)\b", "…", violation)
    return violation.replace("|", "/")[:160]


def record(readme, which, log, seconds, commit):
    text = open(log, errors="replace").read()
    item, fix, _ = MUTANTS[which]
    found = re.search(r"explore: found cases=(\d+) seconds=([\d.]+) seed=(\d+)", text)
    if found:
        cases, took, seed = found.groups()
        shrunk = re.search(r"explore: shrunk to (\d+) steps", text)
        broke = re.search(r"explore: broke: (.*)", text)
        cells = ["yes", cases, f"{float(took):.0f}", seed,
                 f"{shrunk.group(1)} steps" if shrunk else "(shrinking cut at 180 s)",
                 plain(broke.group(1)) if broke else ""]
    else:
        summary = re.search(r"explore: seed=(\d+) cases=(\d+) steps=\d+ in (\d+)s", text)
        seed, cases, took = summary.groups() if summary else ("", "", "")
        why = "no invariant broke" if summary else "the run did not end (cut at 180 s)"
        cells = ["**no**", cases, took, seed, "", why]
    today = datetime.date.today().isoformat()
    row = f"| `{which}` | {item} | {fix} | " + " | ".join(cells) + f" | {commit}, {today} |"
    s = open(readme).read()
    head, rest = s.split(BEGIN, 1)
    block, tail = rest.split(END, 1)
    rows = {}
    for line in block.splitlines():
        name = re.match(r"\| `([a-z-]+)` \|", line)
        if name:
            rows[name.group(1)] = line
    rows[which] = row
    order = [name for name in MUTANTS if name in rows]
    lines = [
        "",
        f"Each mutant searched for at most {seconds} s, the CI budget (cases counted from one, the "
        "failing case included; the shrinking within six reruns, all cut at 180 s):",
        "",
        *HEADER,
        *[rows[name] for name in order],
        "",
    ]
    open(readme, "w").write(head + BEGIN + "\n".join(lines) + END + tail)
    print(row)


if __name__ == "__main__":
    command = sys.argv[1] if len(sys.argv) > 1 else ""
    if command == "list":
        print("\n".join(MUTANTS))
    elif command == "apply":
        apply(sys.argv[2], sys.argv[3])
    elif command == "check":
        check(sys.argv[2])
    elif command == "record":
        record(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6])
    else:
        raise SystemExit(__doc__)
