//! What happens to the command when the lock is lost, zklock is killed or signalled, or runs in
//! a terminal.

use crate::common;
use crate::support;

use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::interop::temp_log;
use common::{connect, eventually, server, unique_path, wait_for_children};
use support::{bare_zklock, bare_zklock_free, log_has, read, wait_with_timeout, zklock, Group, LOST};
use zklock_testcontainers::Proxy;

/// The promise of issue 13: a lost lock's command, which ignores SIGTERM and left a grandchild
/// running, is gone before the next holder's command starts. Each process of both commands
/// writes timestamped lines to one file, so an overlap shows as an A line after the first B line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_lock_kills_the_whole_group_before_the_next_holder_runs() {
    let path = unique_path("cli-no-overlap");
    let proxy = Proxy::start(server().address()).unwrap();
    let log = temp_log("cli-no-overlap");
    let shown = log.display();
    let stubborn = format!(
        "trap '' TERM; \
         (while :; do echo \"A grandchild $(date +%s.%N)\" >> {shown}; sleep 0.05; done) & \
         while :; do echo \"A child $(date +%s.%N)\" >> {shown}; sleep 0.05; done"
    );
    let mut first = Group::spawn(
        bare_zklock()
            .args(["--zk", &proxy.connect_string(), "--session-timeout", "6s", &path, "--", "sh", "-c", &stubborn])
            .stderr(Stdio::piped()),
    );
    let client = connect().await;
    log_has(&log, "A grandchild").await;
    let next = format!("echo \"B start $(date +%s.%N)\" >> {shown}; echo \"B end $(date +%s.%N)\" >> {shown}");
    let mut second = Group::spawn(zklock(&server().connect_string()).args([&path, "--", "sh", "-c", &next]));
    wait_for_children(&client, &path, 2).await;
    proxy.blackhole(); // the first session will expire on the server; the second holds then
    assert_eq!(first.wait(Duration::from_secs(60)).code(), Some(LOST));
    assert!(second.wait(Duration::from_secs(60)).success());
    let text = read(&log);
    let lines: Vec<&str> = text.lines().collect();
    let b_start = lines.iter().position(|line| line.starts_with("B start")).expect("the next holder ran");
    assert!(lines[..b_start].iter().any(|line| line.starts_with("A grandchild")));
    let late: Vec<&&str> = lines[b_start..].iter().filter(|line| line.starts_with('A')).collect();
    assert!(late.is_empty(), "the lost command ran beside the next holder: {late:?}\n{text}");
    let stderr = first.stderr();
    assert!(stderr.contains("lock lost"), "{stderr}");
    println!("{stderr}{}", lines[b_start.saturating_sub(4)..].join("\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_killed_with_sigkill_hands_over_within_the_session_timeout() {
    let path = unique_path("cli-sigkill");
    let zk = server().connect_string();
    let mut holder = Group::spawn(zklock(&zk).arg(&path).args(["--", "sleep", "60"]));
    let client = connect().await;
    wait_for_children(&client, &path, 1).await;
    let mut next = zklock(&zk).arg(&path).args(["--", "true"]).spawn().unwrap();
    wait_for_children(&client, &path, 2).await;
    holder.0.kill().unwrap(); // SIGKILL to zklock alone: its session dies with it, unannounced
    let started = Instant::now();
    let status = wait_with_timeout(&mut next, Duration::from_secs(30));
    assert!(status.success());
    // Session timeout 4 s, plus scheduling slack.
    assert!(started.elapsed() < Duration::from_secs(12), "handed over after {:?}", started.elapsed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_lock_stops_the_command_and_exits_with_the_loss_code() {
    let path = unique_path("cli-lost");
    let proxy = Proxy::start(server().address()).unwrap();
    let log = temp_log("cli-lost");
    let mut run = Group::spawn(
        zklock(&proxy.connect_string())
            .args(["--kill-after", "2s"])
            .arg(&path)
            .arg("--")
            .args([
                "sh",
                "-c",
                &format!(
                    // The group's SIGTERM may have ended the sleep first: its kill stays quiet.
                    "trap 'echo stopped >> {log}; kill $! 2>/dev/null; exit 0' TERM; echo started >> {log}; sleep 60 & wait",
                    log = log.display()
                ),
            ])
            .stderr(Stdio::piped()),
    );
    // The command runs only once zklock knows it holds: cutting it off any earlier (its node
    // already on the server, the reply not yet back) would end its acquire, not a hold.
    eventually("the command started", || async { read(&log).contains("started") }).await;
    proxy.blackhole(); // the session will expire on the server
    assert_eq!(run.wait(Duration::from_secs(30)).code(), Some(LOST));
    assert!(read(&log).contains("stopped"), "the command got SIGTERM");
    let stderr = run.stderr();
    assert!(stderr.contains("lock lost"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line per loss: {stderr}");
}

/// A terminal sends Ctrl-C to its whole foreground job: zklock's group. The command has a group
/// of its own, so it gets each signal once, from zklock, and holds the lock until it exits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_signal_to_the_job_reaches_the_command_once_and_the_lock_outlives_it() {
    let zk = server().connect_string();
    let client = connect().await;
    for (signal, name) in [
        (libc::SIGINT, "INT"),
        (libc::SIGTERM, "TERM"),
        (libc::SIGHUP, "HUP"),
        (libc::SIGQUIT, "QUIT"),
        (libc::SIGUSR1, "USR1"),
        (libc::SIGUSR2, "USR2"),
    ] {
        let path = unique_path("cli-signals");
        let log = temp_log(&format!("cli-signals-{name}"));
        let stop = log.with_extension("stop");
        let _ = std::fs::remove_file(&stop);
        let (log_shown, stop_shown) = (log.display(), stop.display());
        let script = format!(
            "trap 'echo got >> {log_shown}' {name}; echo ready >> {log_shown}; \
             while [ ! -e {stop_shown} ]; do sleep 0.05; done"
        );
        let mut zklock = zklock(&zk);
        zklock.args([&path, "--", "sh", "-c", &script]);
        // Whoever ran these tests may ignore the signal (`nohup` ignores SIGHUP), and zklock
        // and the shell keep a signal ignored at their start, by design: reset it for zklock.
        // SAFETY: signal() is async-signal-safe, and only sets this one disposition in the child.
        unsafe {
            zklock.pre_exec(move || {
                libc::signal(signal, libc::SIG_DFL);
                Ok(())
            });
        }
        let mut run = Group::spawn(&mut zklock);
        log_has(&log, "ready").await;
        run.signal_job(signal);
        log_has(&log, "got").await;
        tokio::time::sleep(Duration::from_millis(300)).await; // room for a second delivery
        assert_eq!(common::children(&client, &path).await.len(), 1, "{name}: held while the command runs");
        std::fs::write(&stop, "").unwrap();
        assert!(run.wait(Duration::from_secs(20)).success(), "{name}");
        assert_eq!(read(&log).matches("got").count(), 1, "{name} reached the command once");
        assert!(common::children(&client, &path).await.is_empty(), "{name}: released after the command");
        let _ = std::fs::remove_file(&stop);
    }
}

/// In a terminal the command is the foreground job while it runs, as under a shell: it can read
/// the terminal (a background group would stop on SIGTTIN for ever), and the terminal's Ctrl-C
/// reaches it once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_in_a_terminal_reads_it_and_gets_ctrl_c_once() {
    let path = unique_path("cli-terminal");
    let log = temp_log("cli-terminal");
    let shown = log.display();
    let command = format!(
        "trap 'echo got INT >> {shown}' INT; \
         while :; do read line; echo \"read $line\" >> {shown}; [ \"$line\" = second ] && break; done"
    );
    let zklock_line = format!(
        "{} --zk {} {path} -- sh -c \"{}\"",
        env!("CARGO_BIN_EXE_zklock"),
        server().connect_string(),
        command.replace('"', "\\\"").replace('$', "\\$")
    );
    let mut terminal = Group::spawn(
        bare_zklock_free(Command::new("script")).args(["-qec", &zklock_line, "/dev/null"]).stdin(Stdio::piped()),
    );
    let mut keyboard = terminal.0.stdin.take().unwrap();
    std::io::Write::write_all(&mut keyboard, b"first\n").unwrap();
    log_has(&log, "read first").await;
    std::io::Write::write_all(&mut keyboard, b"\x03").unwrap(); // Ctrl-C
    log_has(&log, "got INT").await;
    tokio::time::sleep(Duration::from_millis(300)).await; // room for a second delivery
    let typed = std::io::Write::write_all(&mut keyboard, b"second\n");
    assert!(typed.is_ok(), "{typed:?}: {:?} {}", terminal.0.try_wait(), read(&log));
    assert!(terminal.wait(Duration::from_secs(20)).success());
    let text = read(&log);
    assert_eq!(text.matches("got INT").count(), 1, "{text}");
    assert!(text.contains("read second"), "{text}");
}

/// A command that ends while ZooKeeper is out of reach: zklock exits with its status at once,
/// instead of waiting for a server it cannot reach (the node goes when the session expires, as
/// nothing can delete it sooner). The session is long, so waiting for it would be seen.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_that_ends_while_zookeeper_is_unreachable_exits_with_its_status_at_once() {
    let path = unique_path("cli-unreachable-end");
    let proxy = Proxy::start(server().address()).unwrap();
    let log = temp_log("cli-unreachable-end");
    let stop = log.with_extension("stop");
    let _ = std::fs::remove_file(&stop);
    let command =
        format!("echo started >> {}; while [ ! -e {} ]; do sleep 0.05; done; exit 3", log.display(), stop.display());
    let zk = proxy.connect_string();
    let mut run =
        Group::spawn(bare_zklock().args(["--zk", &zk, "--session-timeout", "60s", &path, "sh", "-c", &command]));
    log_has(&log, "started").await;
    proxy.cut(); // zklock's client learns at once that it is disconnected
    tokio::time::sleep(Duration::from_millis(300)).await;
    std::fs::write(&stop, "").unwrap();
    assert_eq!(run.wait(Duration::from_secs(15)).code(), Some(3), "the command's status, without waiting");
}
