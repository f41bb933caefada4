//! The README's command blocks cannot drift from the project: every line of its fenced `sh`
//! blocks, and every `cargo` command it writes in inline code, is checked against what exists.
//!
//! - `hybrid-sim ARGS` (as `cargo run -p hybrid-sim -- ARGS`, `target/release/hybrid-sim ARGS`
//!   or `hybrid-sim ARGS`) runs against the built binary and must succeed; `new-policy` writes
//!   its crate under a temporary directory standing for `~` (scripts/tests/new-policy.sh
//!   runs the whole block, building the crate and its test);
//! - any other `cargo run`, `cargo build` or `cargo install` must name a package of the
//!   workspace (`-p NAME`), one of its binaries (`--bin NAME`) or a directory holding a
//!   package (`--path DIR`);
//! - `target/release/scx_hybridland` and `scx_my_policy` (the same flags, `main_with`) may use
//!   only flags the live scheduler defines (`crates/scx-frontend/src/opts.rs`: it needs clang
//!   to build, so it is not run here);
//! - scripts and installed files must exist.
//!
//! The README also keeps its promise to be short: at most about 200 lines, with the main
//! command and the test command in its first 40.

use std::path::Path;
use std::process::Command;

mod common;
use common::root;

const MAIN_COMMAND: &str = "cargo run --release -p hybrid-sim -- replay examples/traces/seed004-webgl.json --policy hybridland,kernel-default,spread";

fn readme() -> String {
    std::fs::read_to_string(root().join("README.md")).unwrap()
}

/// The lines of the README's fenced `sh` blocks, with their comments and a leading `$ `
/// dropped and continuation lines joined.
fn sh_lines(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_sh = false;
    let mut pending = String::new();
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with("```") {
            in_sh = !in_sh && t == "```sh";
            continue;
        }
        if !in_sh {
            continue;
        }
        let code = t.split(" #").next().unwrap().trim();
        if code.is_empty() || code.starts_with('#') {
            continue;
        }
        if let Some(head) = code.strip_suffix('\\') {
            pending.push_str(head.trim_end());
            pending.push(' ');
            continue;
        }
        pending.push_str(code);
        let mut cmd = core::mem::take(&mut pending);
        if let Some(rest) = cmd.strip_prefix("$ ") {
            cmd = rest.to_string();
        }
        out.push(cmd);
    }
    out
}

/// The workspace's packages: name, directory, binaries.
fn packages() -> Vec<(String, String, Vec<String>)> {
    let manifest = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    let members = manifest
        .lines()
        .find(|l| l.starts_with("members"))
        .expect("the workspace lists its members");
    members
        .split('"')
        .skip(1)
        .step_by(2)
        .map(|dir| {
            let text = std::fs::read_to_string(root().join(dir).join("Cargo.toml")).unwrap();
            let mut name = None;
            let mut bins = Vec::new();
            let mut section = "";
            for l in text.lines() {
                let l = l.trim();
                if l.starts_with('[') {
                    section = if l == "[package]" {
                        "package"
                    } else if l == "[[bin]]" {
                        "bin"
                    } else {
                        ""
                    };
                    continue;
                }
                if let Some(v) = l.strip_prefix("name = ") {
                    let v = v.trim_matches('"').to_string();
                    match section {
                        "package" => name = Some(v),
                        "bin" => bins.push(v),
                        _ => {}
                    }
                }
            }
            (name.expect("a package name"), dir.to_string(), bins)
        })
        .collect()
}

/// The value after `flag` in `words`.
fn value<'a>(words: &[&'a str], flag: &str) -> Option<&'a str> {
    words
        .iter()
        .position(|w| *w == flag)
        .and_then(|i| words.get(i + 1).copied())
}

fn run_hybrid_sim(line: &str, args: &[&str]) {
    if args.first() == Some(&"new-policy") {
        return run_new_policy(line, args);
    }
    let out = Command::new(env!("CARGO_BIN_EXE_hybrid-sim"))
        .args(args)
        .current_dir(root())
        .env("NO_COLOR", "1")
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "README: `{line}` fails: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `hybrid-sim new-policy NAME ~/DIR` with `~` a temporary directory, not the user's home:
/// the crate is written (scripts/tests/new-policy.sh builds it and runs its test, as the
/// README's block says).
fn run_new_policy(line: &str, args: &[&str]) {
    let tmp = common::scratch();
    let home = tmp.path();
    let args: Vec<String> = args
        .iter()
        .map(|a| match a.strip_prefix("~/") {
            Some(rest) => home.join(rest).to_string_lossy().into_owned(),
            None => (*a).to_owned(),
        })
        .collect();
    let out = Command::new(env!("CARGO_BIN_EXE_hybrid-sim"))
        .args(&args)
        .current_dir(root())
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    let made = std::fs::read_dir(home).map(|d| d.count()).unwrap_or(0);
    let crate_dir = args.get(2).map(std::path::PathBuf::from);
    let has_manifest = crate_dir.is_some_and(|d| d.join("Cargo.toml").is_file());
    assert!(
        out.status.success() && has_manifest && made == 1,
        "README: `{line}` made no crate in ~: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A `cargo` command of the README: its package, binary or path exists.
fn check_cargo(line: &str, words: &[&str]) {
    let packages = packages();
    let sub = words.get(1).copied().unwrap_or("");
    assert!(
        [
            "run", "build", "install", "test", "bench", "fmt", "clippy", "doc"
        ]
        .contains(&sub),
        "README: `{line}`: a cargo command this test does not know"
    );
    let cargo_args = match words.iter().position(|w| *w == "--") {
        Some(i) => &words[..i],
        None => words,
    };
    if let Some(p) = value(cargo_args, "-p") {
        let pkg = packages.iter().find(|(n, _, _)| n == p);
        let Some((_, _, bins)) = pkg else {
            panic!("README: `{line}`: no package {p} in the workspace")
        };
        if let Some(b) = value(cargo_args, "--bin") {
            assert!(
                bins.iter().any(|x| x == b),
                "README: `{line}`: package {p} has no binary {b}"
            );
        }
    }
    if let Some(dir) = value(cargo_args, "--path") {
        assert!(
            packages.iter().any(|(_, d, _)| d == dir),
            "README: `{line}`: {dir} is not a package of the workspace"
        );
    }
    if sub == "install" {
        assert!(
            value(cargo_args, "--path").is_some(),
            "README: `{line}`: cargo install without --path installs from elsewhere"
        );
    }
}

/// The long flags the live scheduler defines: its `Opts` fields, as clap derives them.
fn live_flags() -> Vec<String> {
    let src = std::fs::read_to_string(root().join("crates/scx-frontend/src/opts.rs")).unwrap();
    let start = src.find("struct Opts {").expect("opts.rs defines Opts");
    let body = &src[start..];
    let body = &body[..body.find("\n}").unwrap()];
    let mut flags: Vec<String> = body
        .lines()
        .map(str::trim)
        .filter_map(|l| {
            l.strip_prefix("pub(crate) ")
                .or_else(|| l.strip_prefix("pub "))
        })
        .filter_map(|l| l.split_once(':'))
        .filter(|(name, _)| name.chars().all(|c| c.is_ascii_lowercase() || c == '_'))
        .map(|(name, _)| format!("--{}", name.replace('_', "-")))
        .collect();
    flags.extend(["--help", "--version"].map(String::from));
    flags
}

fn check_live(line: &str, words: &[&str]) {
    let flags = live_flags();
    for w in words.iter().filter(|w| w.starts_with("--")) {
        assert!(
            flags.iter().any(|f| f == w),
            "README: `{line}`: the live scheduler has no flag {w}"
        );
    }
}

fn check_line(line: &str) {
    let line = line.strip_prefix("sudo ").unwrap_or(line);
    // Only the first command of a pipeline or a `&&` chain is checked; the others are
    // system tools (tee, systemctl).
    let first = line
        .split(" | ")
        .next()
        .unwrap()
        .split(" && ")
        .next()
        .unwrap();
    let words: Vec<&str> = first.split_whitespace().collect();
    match words[0] {
        "cargo" => {
            check_cargo(line, &words);
            if words.get(1) == Some(&"run") && value(&words, "-p") == Some("hybrid-sim") {
                let i = words.iter().position(|w| *w == "--").unwrap();
                run_hybrid_sim(line, &words[i + 1..]);
            }
        }
        "hybrid-sim" | "target/release/hybrid-sim" => run_hybrid_sim(line, &words[1..]),
        "target/release/scx_hybridland" | "target/release/scx_my_policy" => {
            check_live(line, &words)
        }
        "source" => assert!(
            root().join(words[1]).is_file(),
            "README: `{line}`: no {}",
            words[1]
        ),
        "install" => {
            for w in words.iter().filter(|w| w.starts_with("dist/")) {
                assert!(root().join(w).is_file(), "README: `{line}`: no {w}");
            }
        }
        // `cd` into the crate `new-policy` made just before.
        "echo" | "systemctl" | "cat" | "cd" => {}
        w if w.starts_with("scripts/") => {
            let p = root().join(w);
            assert!(p.is_file(), "README: `{line}`: no {w}");
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                let mode = p.metadata().unwrap().permissions().mode();
                assert!(mode & 0o111 != 0, "README: `{line}`: {w} is not executable");
            }
        }
        // An environment assignment before a command: check the command.
        w if w.contains('=') && !w.starts_with('-') => {
            let rest = first.split_once(' ').map(|(_, r)| r).unwrap_or("");
            check_line(rest)
        }
        other => panic!("README: `{line}`: a command this test does not know ({other})"),
    }
}

#[test]
fn readme_is_short_and_starts_with_the_two_commands() {
    let text = readme();
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines.len() <= 210,
        "README.md has {} lines; keep it near 200",
        lines.len()
    );
    let head = &lines[..40.min(lines.len())];
    assert!(
        head.contains(&MAIN_COMMAND),
        "README.md's first 40 lines must show `{MAIN_COMMAND}`"
    );
    assert!(
        head.iter().any(|l| l.trim() == "scripts/test.sh"),
        "README.md's first 40 lines must show `scripts/test.sh`"
    );
}

#[test]
fn every_readme_command_line_exists_or_runs() {
    let lines = sh_lines(&readme());
    assert!(lines.len() >= 10, "too few command lines found: {lines:?}");
    for line in &lines {
        check_line(line);
    }
}

#[test]
fn every_cargo_command_in_the_readme_prose_names_a_package() {
    let text = readme();
    // Prose only: the fenced blocks' own backticks would pair up the wrong spans.
    let mut prose = String::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced {
            prose.push_str(line);
            prose.push('\n');
        }
    }
    let mut seen = 0;
    for span in prose.split('`').skip(1).step_by(2) {
        if span.starts_with("cargo ") {
            let words: Vec<&str> = span.split_whitespace().collect();
            check_cargo(span, &words);
            seen += 1;
        }
    }
    assert!(
        seen >= 3,
        "the README names how to build and install the binaries"
    );
    for bin in ["target/release/hybrid-sim", "target/release/scx_hybridland"] {
        assert!(text.contains(bin), "the README says where {bin} is");
    }
    assert!(Path::new(env!("CARGO_BIN_EXE_hybrid-sim")).is_file());
}

#[test]
fn the_parser_reads_what_the_readme_writes() {
    let text = "```sh\n$ hybrid-sim a \\\n    b # c\n# only a comment\nsudo x\n```\n```\nno\n```\n";
    assert_eq!(sh_lines(text), ["hybrid-sim a b", "sudo x"]);
}
