//! The manual: each subcommand's help, the completion scripts and the manual page say what
//! zklock takes, and only that.

use crate::support;

use std::process::Stdio;

use support::{bare_zklock, USAGE};

fn stdout_of(args: &[&str]) -> String {
    let output = bare_zklock().args(args).stderr(Stdio::null()).output().unwrap();
    assert!(output.status.success(), "{args:?}: {output:?}");
    String::from_utf8(output.stdout).unwrap()
}

/// The `--json` line of each subcommand's help that takes it names that subcommand, so that
/// `deadlocks -h` does not leave deadlocks out of what `--json` covers.
#[test]
fn the_json_help_names_each_subcommand_that_prints_json() {
    for subcommand in ["list", "leader", "deadlocks", "hold", "elect"] {
        let help = stdout_of(&[subcommand, "-h"]);
        let line =
            help.lines().find(|line| line.trim_start().starts_with("--json")).unwrap_or_else(|| panic!("{help}"));
        assert!(line.split([',', ' ']).any(|word| word == subcommand), "{subcommand} -h: {line}");
    }
}

/// `zklock revoke -h` lists revoke's options (how to connect), not a lock's or an election's;
/// such an option is still refused there with where it goes.
#[test]
fn a_subcommands_help_lists_only_its_own_options() {
    let cases: [(&str, &[&str], &[&str]); 4] = [
        ("revoke", &["--zk", "--auth", "--quiet"], &["--semaphore", "--json", "--kill-after", "--id", "--retake"]),
        ("list", &["--zk", "--json"], &["--semaphore", "--nonblock", "--on-revoke"]),
        ("hold", &["--semaphore", "--nonblock", "--retake", "--json"], &["--id", "--kill-after", "--command"]),
        ("completions", &["--help"], &["--zk", "--auth", "--json"]),
    ];
    for (subcommand, listed, not_listed) in cases {
        let help = stdout_of(&[subcommand, "-h"]);
        for option in listed {
            assert!(help.contains(option), "{subcommand} -h lacks {option}: {help}");
        }
        for option in not_listed {
            assert!(!help.contains(option), "{subcommand} -h lists {option}: {help}");
        }
    }
    let refused = bare_zklock().args(["revoke", "--semaphore", "2", "/l/n"]).output().unwrap();
    assert_eq!(refused.status.code(), Some(USAGE), "{refused:?}");
    assert!(String::from_utf8_lossy(&refused.stderr).contains("goes with"), "{refused:?}");
}

/// `zklock completions <TAB>` offers the shells, not forty options that do not apply there.
#[test]
fn completing_completions_offers_the_shells() {
    let shells = "bash elvish fish powershell zsh";
    let script = std::env::temp_dir().join(format!("zklock-completion-{}.bash", std::process::id()));
    std::fs::write(&script, stdout_of(&["completions", "bash"])).unwrap();
    let complete = format!(
        "source {}; COMP_WORDS=(zklock completions ''); COMP_CWORD=2; _zklock zklock '' completions; \
         echo \"${{COMPREPLY[@]}}\"",
        script.display()
    );
    let offered = std::process::Command::new("bash").args(["-c", &complete]).output().unwrap();
    std::fs::remove_file(&script).unwrap();
    let offered = String::from_utf8(offered.stdout).unwrap();
    assert_eq!(offered.trim(), format!("-h --help {shells}"), "bash");
    let fish = stdout_of(&["completions", "fish"]);
    let offer = fish.lines().find(|line| line.contains("using_subcommand completions") && line.contains(" -a "));
    assert!(offer.is_some_and(|line| line.contains(shells)), "fish: {fish}");
    assert!(stdout_of(&["completions", "zsh"]).contains(&format!("({shells})")), "zsh");
}

/// The manual page has the sections a man page has (not clap's "EXTRA"), names no page that
/// is not generated, lists every variable --help names, and renders without a groff warning.
#[test]
fn the_manual_page_has_exit_status_environment_and_examples() {
    let page = stdout_of(&["manpage"]);
    let sections: Vec<&str> = page.lines().filter_map(|line| line.strip_prefix(".SH ")).collect();
    for section in ["\"EXIT STATUS\"", "ENVIRONMENT", "EXAMPLES", "OPTIONS", "SUBCOMMANDS"] {
        assert!(sections.contains(&section), "{section} in {sections:?}");
    }
    assert!(!sections.contains(&"EXTRA"), "{sections:?}");
    assert!(!page.contains("(1)"), "a reference to another page: {page}");
    let help = stdout_of(&["--help"]);
    let environment = &page[page.find(".SH ENVIRONMENT").unwrap()..page.find(".SH EXAMPLES").unwrap()];
    let named = help.split("[env: ").skip(1).map(|rest| rest.split(['=', ']']).next().unwrap().to_owned());
    for name in named.chain(["ZK_CONNECT", "NO_COLOR", "ZKLOCK_FENCING_TOKEN"].map(str::to_owned)) {
        assert!(environment.contains(&format!("\\fB{}\\fR", name.replace('-', "\\-"))), "{name} in {environment}");
    }
    let path = std::env::temp_dir().join(format!("zklock-{}.1", std::process::id()));
    std::fs::write(&path, &page).unwrap();
    let groff = std::process::Command::new("groff").args(["-man", "-Tutf8", "-ww", "-z"]).arg(&path).output();
    std::fs::remove_file(&path).unwrap();
    let groff = groff.expect("groff, to check the page");
    assert!(groff.status.success() && groff.stderr.is_empty(), "{}", String::from_utf8_lossy(&groff.stderr));
}

/// The manual page's JSON section lists each document's schema and every field docs/cli.md
/// documents for it, with the same type.
#[test]
fn the_manual_page_lists_the_documented_json_fields() {
    let page = stdout_of(&["manpage"]);
    let json = &page[page.find(".SH JSON").expect("a JSON section")..page.find(".SH EXAMPLES").unwrap()];
    for schema in ["zklock.list/1", "zklock.deadlocks/2"] {
        assert!(json.contains(&format!("(schema {schema})")), "{schema} in {json}");
        for (path, kind) in support::documented_fields(schema) {
            assert!(json.contains(&format!("\\fB{path}\\fR ({kind})")), "{path} ({kind}) in {json}");
        }
    }
}

/// docs/cli.md, the guide's page, says what the manual page says: every exit code the page lists
/// is in its list of exit codes, and it names every option the page lists (by its long or its
/// short name), so that neither is edited alone.
#[test]
fn docs_cli_md_names_every_exit_code_and_option_of_the_manual_page() {
    let docs = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/cli.md")).unwrap();
    let page = stdout_of(&["manpage"]).replace("\\-", "-");
    let exit_status = &page[page.find(".SH \"EXIT STATUS\"").unwrap()..page.find(".SH ENVIRONMENT").unwrap()];
    let docs_codes = &docs[docs.find("Exit codes:").expect("docs/cli.md lists the exit codes")..];
    let docs_codes = &docs_codes[..docs_codes.find("\n\n").unwrap_or(docs_codes.len())];
    let words: Vec<&str> = docs_codes.split(|c: char| !c.is_ascii_alphanumeric() && c != '+').collect();
    let codes = exit_status.lines().filter_map(|line| line.strip_prefix("\\fB")?.strip_suffix("\\fR"));
    for code in codes.flat_map(|code| code.split('/')) {
        assert!(
            words.contains(&code),
            "exit code {code} of the manual page is not in docs/cli.md's list: {docs_codes}"
        );
    }
    let options = page.lines().filter(|line| line.starts_with("\\fB-"));
    for line in options {
        let names: Vec<&str> = line
            .split("\\fB")
            .filter_map(|part| part.split("\\fR").next())
            .filter(|name| name.starts_with('-'))
            .collect();
        if names.iter().any(|name| ["--help", "--version"].contains(name)) {
            continue;
        }
        assert!(
            names.iter().any(|name| docs.contains(&format!("`{name}")) || docs.contains(&format!(" {name} "))),
            "docs/cli.md names none of {names:?}"
        );
    }
}
