//! Reaching ZooKeeper: credentials, TLS, options from the environment, and bad input.

use crate::common;
use crate::support;

use std::process::{Command, Stdio};
use std::time::Duration;

use common::interop::temp_log;
use common::{server, unique_path};
use support::{bare_zklock, hold, wait_with_timeout, zklock, NOT_ALLOWED, TIMED_OUT, UNAVAILABLE, USAGE};
use zklock_testcontainers::{ServerOptions, ZooKeeperServer};
use zookeeper_client::{Acls, Client, CreateMode};

/// A path whose ACL lets only one digest user create: an anonymous zklock is refused (77), the
/// same with the user's credentials from --auth, ZKLOCK_AUTH or --auth-file runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_digest_protected_path_needs_the_credentials() {
    let zk = server().connect_string();
    let path = unique_path("cli-secure");
    let owner = Client::connector().with_auth("digest", b"deployer:secret").connect(&zk).await.unwrap();
    let parent = &path[..path.rfind('/').unwrap()];
    owner.mkdir(parent, &CreateMode::Persistent.with_acls(Acls::anyone_all())).await.unwrap();
    owner.create(&path, b"", &CreateMode::Persistent.with_acls(Acls::creator_all())).await.unwrap();
    let run = |command: &mut Command| command.args([&path, "--", "true"]).output().unwrap();
    let anonymous = run(&mut zklock(&zk));
    assert_eq!(anonymous.status.code(), Some(NOT_ALLOWED), "{anonymous:?}");
    assert_eq!(anonymous.stderr.iter().filter(|b| **b == b'\n').count(), 1, "{anonymous:?}");
    // The one line says why, the server's refusal included (the library's error leaves it to
    // its source).
    assert!(String::from_utf8_lossy(&anonymous.stderr).contains("not authorized"), "{anonymous:?}");
    let stranger = run(zklock(&zk).args(["--auth", "digest:deployer:wrong"]));
    assert_eq!(stranger.status.code(), Some(NOT_ALLOWED), "{stranger:?}");
    assert!(run(zklock(&zk).args(["--auth", "digest:deployer:secret"])).status.success());
    assert!(run(zklock(&zk).env("ZKLOCK_AUTH", "digest:deployer:secret")).status.success());
    let auth_file = temp_log("cli-secure-auth");
    std::fs::write(&auth_file, "# the deploy user\ndigest:deployer:secret\n").unwrap();
    assert!(run(zklock(&zk).arg("--auth-file").arg(&auth_file)).status.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_option_also_comes_from_the_environment_named_in_help() {
    let help = String::from_utf8(bare_zklock().arg("--help").output().unwrap().stdout).unwrap();
    for name in ["ZKLOCK_ZK", "ZKLOCK_AUTH", "ZKLOCK_AUTH_FILE", "ZKLOCK_TLS_CA", "ZKLOCK_TIMEOUT", "ZKLOCK_NONBLOCK"] {
        assert!(help.contains(&format!("env: {name}")), "{name} missing from --help");
    }
    let path = unique_path("cli-env-options");
    let (_holder, _) = hold(&server().connect_string(), &[], &path);
    let busy = bare_zklock()
        .env("ZKLOCK_ZK", server().connect_string())
        .env("ZKLOCK_NONBLOCK", "true")
        .env("ZKLOCK_CONFLICT_EXIT_CODE", "9")
        .args([&path, "--", "true"])
        .status()
        .unwrap();
    assert_eq!(busy.code(), Some(9));
    let fallback =
        bare_zklock().env("ZK_CONNECT", server().connect_string()).args(["-n", &path, "--", "true"]).status().unwrap();
    assert_eq!(fallback.code(), Some(TIMED_OUT), "ZK_CONNECT still names the servers");
}

#[test]
fn bad_input_is_one_line_and_a_documented_code() {
    let zk = "127.0.0.1:1";
    for args in [
        vec!["/x"],
        vec!["--", "true"],
        vec!["relative", "--", "true"],
        vec!["--timeout", "soon", "/x", "--", "true"],
        vec!["--auth", "digest", "/x", "--", "true"],
        vec!["--tls-ca", "/no/such/ca.pem", "/x", "--", "true"],
    ] {
        let output = zklock(zk).args(&args).output().unwrap();
        assert_eq!(output.status.code(), Some(USAGE), "{args:?}");
        assert_eq!(String::from_utf8_lossy(&output.stderr).lines().count(), 1, "{args:?}: {output:?}");
    }
    let output = zklock(zk).args(["--connect-timeout", "1s", "/x", "--", "true"]).output().unwrap();
    assert_eq!(output.status.code(), Some(UNAVAILABLE), "unreachable ZooKeeper");
    assert_eq!(String::from_utf8_lossy(&output.stderr).lines().count(), 1);
    let output = zklock(&server().connect_string())
        .args(["/zklock-tests/cli-missing", "--", "/no/such/command"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(127));
}

/// `-w -1` is a duration below zero, said so (clap took `-1` for an option and suggested
/// `-- -1`, which would make `-1` the command); and every form the command prints in its
/// messages (`1m30s`, `3.3s`) is one its options read (issue 39: `--timeout 1m30s` exited 64).
#[test]
fn durations_read_what_the_command_prints_and_refuse_negatives_plainly() {
    for args in [["-w", "-1"], ["--timeout", "-1s"], ["--kill-after", "-2"]] {
        let output = zklock("127.0.0.1:1").args(args).args(["/x", "--", "true"]).output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(USAGE), "{args:?}");
        assert!(stderr.contains("a duration >= 0") && !stderr.contains("-- -1"), "{args:?}: {stderr}");
    }
    let zk = server().connect_string();
    let path = unique_path("cli-durations");
    for duration in ["1m30s", "3.3s", "1h0m5s", "250ms", "1.5", "2min"] {
        let output = zklock(&zk).args(["--timeout", duration, "--kill-after", duration, &path, "--", "true"]).output();
        let output = output.unwrap();
        assert!(output.status.success(), "{duration}: {}", String::from_utf8_lossy(&output.stderr));
    }
}

/// TLS end to end, against a server with a TLS port (the harness makes a throwaway CA): with
/// `--tls-ca` the command runs under the lock; without it, plaintext to the TLS port cannot
/// connect, and zklock says so with exit 69.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tls_port_is_reached_with_its_ca_and_not_without() {
    let mut options = ServerOptions::default();
    options.tls = true;
    let server = ZooKeeperServer::start_with(&options).await.unwrap();
    let secure = server.secure_connect_string().expect("a TLS port");
    let ca = server.tls_ca_pem().expect("the CA's certificate");
    let path = unique_path("cli-tls");
    let output =
        zklock(&secure).arg("--tls-ca").arg(ca).arg(&path).args(["--", "sh", "-c", "echo \"$ZKLOCK_NODE\""]).output();
    let output = output.unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(String::from_utf8_lossy(&output.stdout).starts_with(&format!("{path}/")));
    let plaintext = zklock(&secure).args(["--connect-timeout", "3s"]).arg(&path).args(["--", "true"]).output();
    assert_eq!(plaintext.unwrap().status.code(), Some(UNAVAILABLE));
}

#[test]
fn malformed_connect_strings_are_usage_errors_that_say_why() {
    for (zk, says) in [
        ("127.0.0.1:abc", "port"),
        ("", "empty"),
        ("zk1:2181,", "no host"),
        ("127.0.0.1:0", "port"),
        ("zk1:2181;zk2:2181", "commas"),
    ] {
        let output = bare_zklock().args(["--zk", zk, "list", "/x"]).output().unwrap();
        assert_eq!(output.status.code(), Some(USAGE), "{zk:?}: {output:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains(says), "{zk:?}: {stderr}");
    }
}

#[test]
fn a_refused_connection_fails_at_once_saying_so() {
    let mut command = bare_zklock();
    let command = command.args(["--zk", "127.0.0.1:1", "--connect-timeout", "120s", "list", "/x"]);
    let mut child = command.stderr(Stdio::piped()).spawn().unwrap();
    // Well within the connect timeout: the client alone retried until it passed.
    let status = wait_with_timeout(&mut child, Duration::from_secs(30));
    let stderr = std::io::read_to_string(child.stderr.take().unwrap()).unwrap();
    assert_eq!(status.code(), Some(UNAVAILABLE), "{stderr}");
    assert!(stderr.contains("connection refused"), "{stderr}");
}

#[test]
fn an_empty_zklock_zk_falls_back_to_zk_connect() {
    let path = unique_path("connection-empty-env");
    let listed =
        bare_zklock().env("ZKLOCK_ZK", "").env("ZK_CONNECT", server().connect_string()).args(["list", &path]).output();
    let listed = listed.unwrap();
    assert_eq!(listed.status.code(), Some(1), "reached the server, where nobody holds: {listed:?}");
}

#[test]
fn a_missing_chroot_is_named() {
    let zk = format!("{}/zklock-no-such-chroot", server().connect_string());
    let output = zklock(&zk).args(["/x", "true"]).output().unwrap();
    assert_eq!(output.status.code(), Some(UNAVAILABLE), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("chroot /zklock-no-such-chroot does not exist"), "{stderr}");
}

/// The test server grants at most 60 s.
#[test]
fn a_session_timeout_the_server_shortens_is_said_in_one_line() {
    let asked = ["--zk", &server().connect_string(), "--session-timeout", "1h", "list", "/x"];
    let output = bare_zklock().args(asked).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("granted a session timeout of 1m"), "{stderr}");
}

/// A waiter whose session expires in an outage says which lock it waited for, why the session
/// went and that nothing was held, not only "zookeeper session expired" (issue 48, item 5); 69.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_whose_session_expired_in_an_outage_says_what_happened() {
    let zk = server().connect_string();
    let path = unique_path("cli-waiter-expired");
    let (_holder, _) = hold(&zk, &[], &path);
    let proxy = zklock_testcontainers::Proxy::start(server().address()).unwrap();
    let mut waiter =
        support::Group::spawn(zklock(&proxy.connect_string()).args([&path, "--", "true"]).stderr(Stdio::piped()));
    let observer = common::connect().await;
    common::wait_for_children(&observer, &path, 2).await;
    proxy.cut();
    // The server expires the waiter's session (4 s) and its node goes; healed, the waiter hears.
    common::wait_for_children(&observer, &path, 1).await;
    proxy.heal();
    assert_eq!(waiter.wait(Duration::from_secs(30)).code(), Some(UNAVAILABLE));
    let stderr = waiter.stderr();
    assert!(stderr.contains(&format!("{path}: the ZooKeeper session expired while waiting")), "{stderr}");
    assert!(stderr.contains("longer than the session timeout, 4s") && stderr.contains("nothing was held"), "{stderr}");
}
