//! `zklock deadlocks`: sessions that each hold a lock the one before waits on, found on a real
//! server; waits in a line are no deadlock.

use crate::common;
use crate::support;

use std::collections::BTreeSet;
use std::future::Future;
use std::process::Output;
use std::time::Duration;

use common::{children, connect, server, unique_path, wait_for_children};
use support::kazoo::Kazoo;
use support::{zklock, Group};
use tokio::task::JoinHandle;
use zklock::{InterProcessMutex, InterProcessReadWriteLock, LockGuard};
use zookeeper_client::Client;

/// The exit codes of `zklock deadlocks` (the manual's EXIT STATUS).
const CERTAIN: i32 = 1;
const POSSIBLE: i32 = 2;
/// `--fail-on-deadlock`'s: the wait gave up to break a ring.
const VICTIM: i32 = 79;
const NO_LOCKS: i32 = 3;

/// Each test ends within this, or fails.
const BOUND: Duration = Duration::from_secs(60);

async fn bounded(test: impl Future<Output = ()>) {
    tokio::time::timeout(BOUND, test).await.expect("the test ended in time");
}

/// Sessions on a real server: each holds `holds` and has one task waiting on `waits`.
struct Party {
    client: Client,
    _guard: LockGuard,
    waiting: Option<JoinHandle<()>>,
}

impl Drop for Party {
    fn drop(&mut self) {
        if let Some(waiting) = self.waiting.take() {
            waiting.abort();
        }
    }
}

impl Party {
    fn session(&self) -> String {
        self.client.session_id().to_string()
    }
}

fn lock(client: &Client, path: &str, read_write: bool) -> InterProcessMutex {
    if read_write {
        InterProcessReadWriteLock::new(client, path).unwrap().write_lock().clone()
    } else {
        InterProcessMutex::new(client, path).unwrap()
    }
}

/// A session that holds `holds`, then waits on `waits` (if any) in a task of its own, once it
/// is queued there.
async fn party(holds: &str, waits: Option<&str>, read_write: bool) -> Party {
    let client = connect().await;
    let guard = lock(&client, holds, read_write).acquire().await.unwrap();
    let waiting = waits.map(|waits| {
        let mutex = lock(&client, waits, read_write);
        tokio::spawn(async move {
            let _never = mutex.acquire().await;
        })
    });
    Party { client, _guard: guard, waiting }
}

async fn deadlocks(root: &str, json: bool) -> Output {
    let mut command = zklock(&server().connect_string());
    command.arg("deadlocks").args(json.then_some("--json")).arg(root);
    let mut command = tokio::process::Command::from(command);
    command.kill_on_drop(true).output().await.unwrap()
}

/// `n` sessions in a ring, each holding lock i and waiting on lock i+1, their nodes untagged
/// (each session read whole): a possible ring, exit 2, and the one cycle names every session,
/// in text and in JSON.
async fn a_ring_is_found(name: &str, n: usize, read_write: bool) {
    let root = unique_path(name);
    let locks: Vec<String> = (0..n).map(|i| format!("{root}/app/lock-{i}")).collect();
    let mut parties = Vec::new();
    for holds in &locks {
        parties.push(party(holds, None, read_write).await);
    }
    for (i, party) in parties.iter_mut().enumerate() {
        let waits = lock(&party.client, &locks[(i + 1) % n], read_write);
        party.waiting = Some(tokio::spawn(async move {
            let _never = waits.acquire().await;
        }));
    }
    let observer = connect().await;
    for path in &locks {
        wait_for_children(&observer, path, 2).await;
    }
    let sessions: BTreeSet<String> = parties.iter().map(Party::session).collect();
    let text = deadlocks(&root, false).await;
    assert_eq!(text.status.code(), Some(POSSIBLE), "{text:?}");
    let stdout = String::from_utf8_lossy(&text.stdout);
    assert!(stdout.starts_with(&format!("possible deadlock of {n} sessions")), "{stdout}");
    for session in &sessions {
        assert!(stdout.contains(session.as_str()), "{session} in {stdout}");
    }
    let json = deadlocks(&root, true).await;
    assert_eq!(json.status.code(), Some(POSSIBLE), "{json:?}");
    let json: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(
        (&json["version"], &json["found"], &json["deadlocked"]),
        (&2.into(), &"possible".into(), &false.into()),
        "{json}"
    );
    let cycles = json["deadlocks"].as_array().unwrap();
    assert_eq!(cycles.len(), 1, "{json}");
    assert_eq!(cycles[0]["certain"], false, "{json}");
    let named: BTreeSet<String> =
        cycles[0]["sessions"].as_array().unwrap().iter().map(|s| s["session"].as_str().unwrap().to_owned()).collect();
    assert_eq!(named, sessions, "{json}");
    let waited: BTreeSet<&str> =
        cycles[0]["waits"].as_array().unwrap().iter().map(|wait| wait["lock"].as_str().unwrap()).collect();
    assert_eq!(waited, locks.iter().map(String::as_str).collect(), "{json}");
    support::assert_documented("zklock.deadlocks/2", &[json]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_sessions_each_waiting_on_the_others_mutex_are_a_deadlock() {
    bounded(a_ring_is_found("deadlocks-two", 2, false)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_sessions_in_a_ring_of_write_locks_are_a_deadlock() {
    bounded(a_ring_is_found("deadlocks-three", 3, true)).await;
}

/// Three sessions waiting in a line, each on the next one's lock; the last one's second task
/// waits on the lock its first task holds (a session waiting behind itself, not a ring): exit 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waits_in_a_line_are_no_deadlock() {
    bounded(async {
        let root = unique_path("deadlocks-line");
        let [a, b, c] = ["a", "b", "c"].map(|name| format!("{root}/{name}"));
        let _last = party(&c, Some(&c), false).await;
        let _middle = party(&b, Some(&c), false).await;
        let _first = party(&a, Some(&b), false).await;
        let observer = connect().await;
        wait_for_children(&observer, &b, 2).await;
        wait_for_children(&observer, &c, 3).await;
        let output = deadlocks(&root, false).await;
        assert_eq!(output.status.code(), Some(0), "{output:?}");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert_eq!(stdout.trim(), format!("{root}: no deadlock (3 locks read)"));
    })
    .await;
}

/// A ring through a task of a session whose nodes carry owner tags (a library lock built with
/// `fail_on_deadlock`) and a session without: the tagged session is shown as its task. The
/// untagged session is read whole, so the ring is only possible (exit 2), and no acquire fails
/// on it: it stands for the command to read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ring_through_a_task_with_an_owner_tag_names_the_task() {
    bounded(async {
        let root = unique_path("deadlocks-task");
        let [a, b] = ["a", "b"].map(|name| format!("{root}/{name}"));
        let tagged = connect().await;
        let opted = |path: &str| InterProcessMutex::builder(&tagged, path).fail_on_deadlock(&root).build().unwrap();
        let (first, second) = (opted(&a), opted(&b));
        let observer = connect().await;
        let (held, holding) = tokio::sync::oneshot::channel();
        let (go, going) = tokio::sync::oneshot::channel::<()>();
        // One task holds a and then, once the other session holds b, waits on b: the ring goes
        // through it.
        let task = tokio::spawn(async move {
            let _a = first.acquire().await.unwrap();
            let _ = held.send(());
            let _ = going.await;
            let _never = second.acquire().await;
        });
        holding.await.unwrap();
        let other = party(&b, None, false).await;
        go.send(()).unwrap();
        wait_for_children(&observer, &b, 2).await;
        let waits = lock(&other.client, &a, false);
        let waiting = tokio::spawn(async move {
            let _never = waits.acquire().await;
        });
        wait_for_children(&observer, &a, 2).await;
        let text = deadlocks(&root, false).await;
        assert_eq!(text.status.code(), Some(POSSIBLE), "{text:?}");
        let stdout = String::from_utf8_lossy(&text.stdout);
        assert!(stdout.starts_with("possible deadlock of 2 tasks or sessions"), "{stdout}");
        let tagged_session = tagged.session_id().to_string();
        let task_line = stdout.lines().find(|line| line.contains(&tagged_session) && line.contains("waits on"));
        assert!(task_line.is_some_and(|line| line.contains(" task ")), "{stdout}");
        let json = deadlocks(&root, true).await;
        let json: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
        let sessions = json["deadlocks"][0]["sessions"].as_array().unwrap().clone();
        let tasks: Vec<bool> = sessions.iter().map(|session| session["task"].is_string()).collect();
        assert_eq!(tasks.iter().filter(|tagged| **tagged).count(), 1, "{json}");
        task.abort();
        waiting.abort();
    })
    .await;
}

/// `zklock -w 40s OUTER -- sh -c 'until [ -e GO ]; …; exec zklock -w 40s INNER -- JOB'`: a
/// `zklock` whose command, once told to go, runs a `zklock` on another lock (through a shell,
/// which passes its environment on), both with `env` set.
fn chained(zk: &str, [outer, inner]: [&str; 2], go: &std::path::Path, env: &[(&str, &str)], job: &str) -> Group {
    let inner = format!(
        "until [ -e '{}' ]; do sleep 0.05; done; exec '{}' --zk '{zk}' --session-timeout 4s -w 40s '{inner}' -- {job}",
        go.display(),
        env!("CARGO_BIN_EXE_zklock"),
    );
    let mut command = zklock(zk);
    command.args(["-w", "40s", outer, "--", "sh", "-c", &inner]).envs(env.iter().copied());
    Group::spawn(command.stdout(std::process::Stdio::null()).stderr(std::process::Stdio::piped()))
}

/// Two chains started as the issue wrote them, each outer `zklock` holding its lock, then both
/// told to go: their inner ones queue on the other's lock. Returns once both are queued.
async fn two_chains(root: &str, go: &std::path::Path, env: &[(&str, &str)], job: &str) -> [Group; 2] {
    let [a, b] = ["a", "b"].map(|name| format!("{root}/{name}"));
    let zk = server().connect_string();
    let observer = connect().await;
    let chains = [chained(&zk, [&a, &b], go, env, job), chained(&zk, [&b, &a], go, env, job)];
    wait_for_children(&observer, &a, 1).await;
    wait_for_children(&observer, &b, 1).await;
    std::fs::write(go, b"").unwrap();
    chains
}

/// The chain's id a node of a `zklock` carries: the first 12 hex digits of its uuid, which is
/// of version 8 with the chain's marker.
fn chain_of(node: &str) -> String {
    let uuid = node.strip_prefix("_c_").unwrap_or_else(|| panic!("a protected node: {node}"));
    assert_eq!(&uuid[14..20], "87a6-b", "a chain's uuid: {node}");
    format!("{}{}", &uuid[..8], &uuid[9..13])
}

/// Issue 38, item 3: `zklock /a -- zklock /b -- …` beside `zklock /b -- zklock /a -- …` stayed
/// stuck until `-w` ran out, and `zklock deadlocks` said "no deadlock" (exit 0): each outer
/// `zklock` holds on one session while its command's `zklock` waits on another, and as four
/// sessions nobody that waits holds anything. Each outer `zklock` now starts a chain and passes
/// it on in ZKLOCK_CHAIN; both links' nodes carry it, and the two chains are one certain ring
/// (exit 1), in text and in JSON. Once the outer ones are stopped, no node is left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_zklock_run_by_a_zklocks_command_is_one_owner_with_it_and_their_ring_is_certain() {
    bounded(async {
        let root = unique_path("deadlocks-chain");
        let [a, b] = ["a", "b"].map(|name| format!("{root}/{name}"));
        let go = std::env::temp_dir().join(format!("zklock-go{}", root.replace('/', "_")));
        let observer = connect().await;
        let [mut one, mut two] = two_chains(&root, &go, &[], "sleep 60").await;
        wait_for_children(&observer, &a, 2).await;
        wait_for_children(&observer, &b, 2).await;
        let text = deadlocks(&root, false).await;
        assert_eq!(text.status.code(), Some(CERTAIN), "{text:?}");
        // Each queue in order: the outer link that holds, then the other chain's inner link.
        let chains_on = |path: &str| {
            let (observer, path) = (&observer, path.to_owned());
            async move {
                let mut nodes = common::children(observer, &path).await;
                nodes.sort_by_key(|node| node.rsplit('_').next().map(str::to_owned));
                nodes.iter().map(|node| chain_of(node)).collect::<Vec<String>>()
            }
        };
        let (on_a, on_b) = (chains_on(&a).await, chains_on(&b).await);
        let (chain_one, chain_two) = (on_a[0].clone(), on_b[0].clone());
        assert_eq!((&on_b[1], &on_a[1]), (&chain_one, &chain_two), "each inner link carries its outer link's chain");
        assert_ne!(chain_one, chain_two, "each outermost zklock starts a chain of its own");
        let stdout = String::from_utf8_lossy(&text.stdout);
        let ring =
            [format!("chain {chain_one} -> chain {chain_two}"), format!("chain {chain_two} -> chain {chain_one}")];
        assert!(ring.iter().any(|ring| stdout.starts_with(&format!("deadlock of 2 chains: {ring}"))), "{stdout}");
        let json = deadlocks(&root, true).await;
        assert_eq!(json.status.code(), Some(CERTAIN), "{json:?}");
        let json: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
        assert_eq!((&json["version"], &json["found"]), (&2.into(), &"certain".into()), "{json}");
        let rings = json["deadlocks"].as_array().unwrap();
        assert_eq!(rings.len(), 1, "{json}");
        assert_eq!(rings[0]["certain"], true, "{json}");
        let chains: BTreeSet<&str> =
            rings[0]["sessions"].as_array().unwrap().iter().map(|member| member["chain"].as_str().unwrap()).collect();
        assert_eq!(chains, BTreeSet::from([chain_one.as_str(), chain_two.as_str()]), "{json}");
        // Stopped, each outer zklock passes SIGTERM on to its inner one, which gives up its
        // wait; then it lets go.
        for job in [&mut one, &mut two] {
            job.signal_job(libc::SIGTERM);
            assert_eq!(job.wait(Duration::from_secs(20)).code(), Some(128 + libc::SIGTERM));
        }
        let _ = std::fs::remove_file(&go);
        assert!(common::children(&observer, &a).await.is_empty(), "no node left on {a}");
        assert!(common::children(&observer, &b).await.is_empty(), "no node left on {b}");
    })
    .await;
}

/// `--fail-on-deadlock ROOT` (here set once, in the environment every link inherits): the
/// inner `zklock` whose wait closes the ring is its victim, gives up and exits 79, and its
/// outer one passes that on and lets go; the other chain then holds, runs its job and exits 0.
/// No node is left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_fail_on_deadlock_one_chain_gives_up_with_79_and_the_other_runs() {
    bounded(async {
        let root = unique_path("deadlocks-chain-victim");
        let go = std::env::temp_dir().join(format!("zklock-go{}", root.replace('/', "_")));
        let chains = two_chains(&root, &go, &[("ZKLOCK_FAIL_ON_DEADLOCK", &root)], "true").await;
        let mut ends = Vec::new();
        for mut chain in chains {
            let status = chain.wait(Duration::from_secs(45));
            ends.push((status.code(), chain.stderr()));
        }
        let _ = std::fs::remove_file(&go);
        let codes: BTreeSet<Option<i32>> = ends.iter().map(|(code, _)| *code).collect();
        assert_eq!(codes, BTreeSet::from([Some(0), Some(VICTIM)]), "{ends:?}");
        let (_, said) = ends.iter().find(|(code, _)| *code == Some(VICTIM)).unwrap();
        assert!(said.contains("gave up waiting to break a deadlock (2 in a ring under"), "{said}");
        let observer = connect().await;
        for lock in ["a", "b"] {
            assert!(common::children(&observer, &format!("{root}/{lock}")).await.is_empty(), "no node left on {lock}");
        }
    })
    .await;
}

/// Bad input is one line and exit 64, before anything is sent: a ZKLOCK_CHAIN that is no chain's
/// id, a --fail-on-deadlock root that is no path, and --fail-on-deadlock with --semaphore (whose
/// waits are no deadlock's). Set in the environment, --fail-on-deadlock yields to a --semaphore
/// on the command line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_chain_id_or_deadlock_root_is_a_usage_error() {
    bounded(async {
        let path = unique_path("deadlocks-usage");
        let zk = server().connect_string();
        let run = |env: &[(&str, &str)], options: &[&str]| {
            let mut command = zklock(&zk);
            command.envs(env.iter().copied()).args(options).args([path.as_str(), "--", "true"]);
            command.output().unwrap()
        };
        for (env, options, said) in [
            (&[("ZKLOCK_CHAIN", "not-hex")][..], &[][..], "ZKLOCK_CHAIN=not-hex: not a chain's id"),
            (&[("ZKLOCK_CHAIN", "1234567890abc")], &[], "ZKLOCK_CHAIN=1234567890abc: not a chain's id"),
            (&[], &["--fail-on-deadlock", "locks"], "locks"),
            (&[], &["--semaphore", "2", "--fail-on-deadlock", "/"], "cannot be used together"),
        ] {
            let output = run(env, options);
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert_eq!(output.status.code(), Some(support::USAGE), "{env:?} {options:?}: {stderr}");
            assert!(stderr.contains(said) && stderr.lines().count() == 1, "{env:?} {options:?}: {stderr}");
        }
        let yields = run(&[("ZKLOCK_FAIL_ON_DEADLOCK", "/")], &["--semaphore", "2"]);
        assert_eq!(yields.status.code(), Some(0), "{yields:?}");
        let empty = run(&[("ZKLOCK_CHAIN", "")], &[]);
        assert_eq!(empty.status.code(), Some(0), "an empty ZKLOCK_CHAIN starts a chain: {empty:?}");
    })
    .await;
}

/// Issue 38, item 6: a root that does not exist (a typo) or holds no lock said "no deadlock
/// (0 locks read)" and exited 0, as a healthy tree does. It now says which, and exits 3, in
/// text and in JSON.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_root_or_a_root_without_locks_exits_3() {
    bounded(async {
        let root = unique_path("deadlocks-typo");
        let missing = deadlocks(&root, false).await;
        assert_eq!(missing.status.code(), Some(NO_LOCKS), "{missing:?}");
        assert_eq!(String::from_utf8_lossy(&missing.stdout).trim(), format!("{root}: no such node, no lock read"));
        let json = deadlocks(&root, true).await;
        assert_eq!(json.status.code(), Some(NO_LOCKS), "{json:?}");
        let json: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
        assert_eq!((&json["root_exists"], &json["found"]), (&false.into(), &"no locks".into()), "{json}");
        let client = connect().await;
        let persistent = zookeeper_client::CreateMode::Persistent.with_acls(zookeeper_client::Acls::anyone_all());
        // mkdir: the parents too, which a fresh server (this test first) does not have yet.
        client.mkdir(&root, &persistent).await.unwrap();
        client.create(&format!("{root}/config"), b"data", &persistent).await.unwrap();
        let empty = deadlocks(&root, false).await;
        assert_eq!(empty.status.code(), Some(NO_LOCKS), "{empty:?}");
        assert!(String::from_utf8_lossy(&empty.stdout).starts_with(&format!("{root}: holds no locks")), "{empty:?}");
    })
    .await;
}

/// Two real kazoo processes, each holding a kazoo `WriteLock` and queued as a `ReadLock` on the
/// other's: by kazoo's rules a reader waits behind the writer ahead, so the two sessions are a
/// possible deadlock (kazoo's nodes carry no owner tag).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kazoo_readers_behind_each_others_writers_are_a_deadlock() {
    bounded(async {
        let root = unique_path("deadlocks-kazoo-rw");
        let zk = server().connect_string();
        let (a, b) = (format!("{root}/a"), format!("{root}/b"));
        let mut first = Kazoo::start(&zk, "kazoo-1", &[&format!("write:{a}"), &format!("read:{b}")]);
        let mut second = Kazoo::start(&zk, "kazoo-2", &[&format!("write:{b}"), &format!("read:{a}")]);
        first.go();
        second.go();
        let observer = connect().await;
        for path in [&a, &b] {
            wait_for_children(&observer, path, 2).await;
        }
        let json = deadlocks(&root, true).await;
        assert_eq!(json.status.code(), Some(POSSIBLE), "{json:?}");
        let json: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
        let cycles = json["deadlocks"].as_array().unwrap();
        assert_eq!(cycles.len(), 1, "{json}");
        let waited: BTreeSet<&str> =
            cycles[0]["waits"].as_array().unwrap().iter().map(|wait| wait["lock"].as_str().unwrap()).collect();
        assert_eq!(waited, BTreeSet::from([a.as_str(), b.as_str()]), "{json}");
        let waiters: Vec<&str> =
            cycles[0]["waits"].as_array().unwrap().iter().map(|wait| wait["waiter_node"].as_str().unwrap()).collect();
        assert!(waiters.iter().all(|node| node.contains("__rlock__")), "{json}");
    })
    .await;
}

/// Whether every one of `paths` has two children (a holder and a waiter) at once, within 10 s.
async fn held_and_awaited(observer: &zookeeper_client::Client, paths: [&str; 2]) -> bool {
    for _ in 0..200 {
        let mut each = Vec::new();
        for path in paths {
            each.push(children(observer, path).await.len());
        }
        if each == [2, 2] {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

/// Issue 48, item 3: a job that runs `zklock`s side by side (`&`, `xargs -P`) passed its chain
/// to each, and they read as one owner: two such jobs, each with one `zklock` holding a lock the
/// other job's second `zklock` waits for, made a "certain" ring of two chains though nothing was
/// stuck (`deadlocks` exited 1), and with --fail-on-deadlock one job gave up with 79 for
/// nothing. An outer link now admits one inner link at a time (the others start chains of
/// their own): no ring is reported, and every job ends with 0 once the holders let go.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zklocks_a_command_runs_side_by_side_make_no_ring() {
    bounded(async {
        let root = unique_path("deadlocks-side-by-side");
        let zk = server().connect_string();
        let dir = std::env::temp_dir().join(format!("zklock-side{}", root.replace('/', "_")));
        std::fs::create_dir_all(&dir).unwrap();
        let (dir_text, bin) = (dir.display().to_string(), env!("CARGO_BIN_EXE_zklock"));
        let [x, y] = ["x", "y"].map(|name| format!("{root}/{name}"));
        let job = |own: &str, holds: &str, waits: &str| {
            let inner = format!("'{bin}' --zk '{zk}' --session-timeout 4s -w 40s");
            let script = format!(
                "{inner} '{holds}' -- sh -c 'touch {dir_text}/{own}-holds; until [ -e {dir_text}/go ]; do sleep 0.05; done' & a=$!; \
                 until [ -e {dir_text}/{own}-holds ]; do sleep 0.05; done; \
                 {inner} '{waits}' -- true & b=$!; \
                 wait $a; ra=$?; wait $b; rb=$?; echo \"$ra $rb\" > {dir_text}/{own}-codes; exit $((ra + rb))"
            );
            let mut command = zklock(&zk);
            command.env("ZKLOCK_FAIL_ON_DEADLOCK", &root).args(["-w", "40s", &format!("{root}/{own}"), "--", "sh", "-c", &script]);
            Group::spawn(command.stdout(std::process::Stdio::null()).stderr(std::process::Stdio::piped()))
        };
        let jobs = [job("one", &x, &y), job("two", &y, &x)];
        let observer = connect().await;
        if !held_and_awaited(&observer, [&x, &y]).await {
            // What the jobs said (a ring reported, a session lost) is the cause: read before
            // the panic, once they have ended.
            std::fs::write(dir.join("go"), b"").unwrap();
            let said: Vec<_> = jobs
                .into_iter()
                .zip(["one", "two"])
                .map(|(mut job, own)| {
                    let status = job.wait(Duration::from_secs(45));
                    let inner = std::fs::read_to_string(dir.join(format!("{own}-codes"))).unwrap_or_default();
                    (own, status, format!("inner zklocks' codes: {inner}"), job.stderr())
                })
                .collect();
            panic!("{x} and {y} never each had a holder and a waiter at once; the jobs: {said:#?}");
        }
        let text = deadlocks(&root, false).await;
        assert_eq!(text.status.code(), Some(0), "{text:?}");
        std::fs::write(dir.join("go"), b"").unwrap();
        for (mut job, own) in jobs.into_iter().zip(["one", "two"]) {
            let status = job.wait(Duration::from_secs(45));
            let codes = std::fs::read_to_string(dir.join(format!("{own}-codes"))).unwrap_or_default();
            assert_eq!(status.code(), Some(0), "{own}: the side-by-side zklocks ended with {codes}: {}", job.stderr());
        }
        let _ = std::fs::remove_dir_all(&dir);
    })
    .await;
}
