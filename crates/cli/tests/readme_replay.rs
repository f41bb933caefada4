//! The README's first replay: the command it shows is run as written (the arguments after
//! `cargo run ... --`), its output pinned with an insta snapshot, and the README must print
//! that output verbatim, so the figures a reader sees first cannot drift from what the
//! simulator gives.

use std::process::Command;

mod common;
use common::root;

#[test]
fn readme_replay_is_what_the_command_prints() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let command = readme
        .lines()
        .find(|l| l.starts_with("cargo run --release -p hybrid-sim -- replay "))
        .expect("the README shows a replay command");
    let args: Vec<&str> = command
        .split(" -- ")
        .nth(1)
        .unwrap()
        .split_whitespace()
        .collect();
    let out = Command::new(env!("CARGO_BIN_EXE_hybrid-sim"))
        .args(&args)
        .current_dir(root())
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert!(out.status.success(), "{command}: {out:?}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    insta::assert_snapshot!("readme_replay", stdout);
    let block = format!("```\n{stdout}```\n");
    assert!(
        readme.contains(&block),
        "README.md does not print what `{command}` gives; it should show:\n{block}"
    );
}
