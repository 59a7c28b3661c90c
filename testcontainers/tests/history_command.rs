//! `zklock-history` as a user runs it on a file of their own: 0 for a clean history, 1 and each
//! broken rule for a broken one (a hold with no invoke before it too, for a writer of invokes),
//! 66 for a line that is not an event, 64 with no file.

use std::process::Command;

fn run(lines: &[&str]) -> (Option<i32>, String) {
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), lines.join("\n")).unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_zklock-history")).arg(file.path()).output().unwrap();
    (output.status.code(), String::from_utf8_lossy(&output.stdout).into_owned())
}

const HOLD_A: &str = r#"{"at_us":0,"client":"a","resource":"/locks/x","event":"ok","mode":"exclusive","token":7}"#;
const RELEASE_A: &str = r#"{"at_us":10,"client":"a","resource":"/locks/x","event":"release"}"#;

#[test]
fn a_clean_history_exits_0_and_a_broken_one_1_with_the_rule() {
    let hold_b = r#"{"at_us":10,"client":"b","resource":"/locks/x","event":"ok","mode":"exclusive","token":8}"#;
    let (code, out) = run(&[HOLD_A, RELEASE_A, hold_b]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("0 invokes, 2 holds, 0 fenced writes, 0 violations"), "{out}");

    let overlapping = r#"{"at_us":5,"client":"b","resource":"/locks/x","event":"ok","mode":"exclusive","token":8}"#;
    let (code, out) = run(&[HOLD_A, overlapping, RELEASE_A]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("b (8) began to hold while a (7) held"), "{out}");
}

#[test]
fn a_hold_whose_acquire_was_never_invoked_exits_1_once_its_client_writes_invokes() {
    let invoke_a = r#"{"at_us":0,"client":"a","resource":"/locks/x","event":"invoke"}"#;
    let (code, out) = run(&[invoke_a, HOLD_A, RELEASE_A]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("1 invokes, 1 holds"), "{out}");

    let again = r#"{"at_us":20,"client":"a","resource":"/locks/x","event":"ok","mode":"exclusive","token":9}"#;
    let (code, out) = run(&[invoke_a, HOLD_A, RELEASE_A, again]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("a's hold with token 9 began with no acquire invoked before it"), "{out}");
}

#[test]
fn a_line_that_is_no_event_exits_66_and_no_file_64() {
    let (code, _) = run(&[HOLD_A, "{\"event\": \"ok\"}"]);
    assert_eq!(code, Some(66));
    let status = Command::new(env!("CARGO_BIN_EXE_zklock-history")).status().unwrap();
    assert_eq!(status.code(), Some(64));
}
