//! `hybrid-sim import rt-app` and `hybrid-sim replay` of an rt-app file.

use std::path::PathBuf;
use std::process::Output;

mod common;
use common::text;

/// Without colour, whatever the terminal.
fn hybrid_sim(args: &[&str]) -> Output {
    common::hybrid_sim_env(args, &[("NO_COLOR", "1")])
}

fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("rt-app-cli");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

const EXAMPLE: &str = "examples/rt-app/laptop-mix.json";

#[test]
fn replay_reads_an_rt_app_file_and_warns_once_about_the_lock() {
    let o = hybrid_sim(&["replay", EXAMPLE]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    assert!(
        out.starts_with("trace laptop-mix on i7-13800h (seed 0)"),
        "{out}"
    );
    assert!(out.contains("fps mean"), "{out}");
    let err = text(&o.stderr);
    assert_eq!(err.matches("WARN").count(), 1, "{err}");
    assert!(
        err.contains("task \"worker\" phase \"idle\": lock dropped"),
        "{err}"
    );
    assert!(
        err.contains("task \"worker\" phase \"idle\": unlock dropped"),
        "{err}"
    );
}

#[test]
fn strict_turns_the_warning_into_exit_2() {
    let o = hybrid_sim(&["replay", EXAMPLE, "--strict"]);
    assert_eq!(o.status.code(), Some(2));
    let err = text(&o.stderr);
    assert!(
        err.contains("--strict refuses them") && err.contains("lock dropped"),
        "{err}"
    );
    let out = scratch("strict.json");
    let o = hybrid_sim(&[
        "import",
        "rt-app",
        EXAMPLE,
        "-o",
        out.to_str().unwrap(),
        "--strict",
    ]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn import_writes_a_trace_that_replays_like_the_rt_app_file() {
    let out = scratch("laptop-mix.trace.json");
    let o = hybrid_sim(&["import", "rt-app", EXAMPLE, "-o", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(
        text(&o.stdout).contains("6 task(s) from rt-app file"),
        "{}",
        text(&o.stdout)
    );
    let direct = hybrid_sim(&["replay", EXAMPLE, "--json"]);
    let via_trace = hybrid_sim(&["replay", out.to_str().unwrap(), "--json"]);
    assert!(via_trace.status.success(), "{}", text(&via_trace.stderr));
    assert_eq!(text(&direct.stdout), text(&via_trace.stdout));
    // Without -o the trace goes to standard output.
    let o = hybrid_sim(&["import", "rt-app", EXAMPLE]);
    assert!(text(&o.stdout).starts_with("{\n  \"version\": 1,"));
}

#[test]
fn a_bad_rt_app_file_names_the_place() {
    let bad = scratch("bad-rt-app.json");
    std::fs::write(&bad, "{\"tasks\": {\"a\": {\"loop\": 1, \"run\": -3}}}").unwrap();
    let o = hybrid_sim(&["replay", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("bad-rt-app.json: tasks.a.run: must be a non-negative integer"),
        "{}",
        text(&o.stderr)
    );
}
