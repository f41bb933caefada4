//! `hybrid-sim replay` under a real address-space limit (issue 13, defect 1): a valid trace
//! of many tiny runs used to abort out of memory because superseded slice ends stayed in the
//! event heap; its memory now depends on tasks and CPUs only.
#![cfg(unix)]

use std::path::PathBuf;
use std::process::Command;

/// 128 MiB of address space. Before the fix the trace below needed about 200 MB of event
/// heap and aborted (exit 134) at this limit; the replay now runs in under 10 MB.
const LIMIT_KIB: u32 = 128 * 1024;

/// 60 tasks, each 100,000 x {run 1 ns, sleep 1 ns}: 12 million events.
const TRACE: &str = r#"{"version": 1, "name": "tiny-runs", "tasks": [{"name": "t", "copies": 60,
    "phases": [{"loop": {"times": 100000, "phases": [{"run_ns": 1}, {"sleep_ns": 1}]}}]}]}"#;

/// 64 equal cores, no SMT, no shared L2: nothing slows the tasks down, so they all end before
/// the first 5 ms slice would.
const TOPOLOGY: &str = r#"name = "plain-64"
description = "64 equal cores"
[[groups]]
kind = "performance"
capacity = 1024
cores = 64
cores_per_cluster = 1
"#;

fn scratch(name: &str, contents: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("memory-limit");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, contents).unwrap();
    path
}

#[test]
fn tiny_runs_replay_within_a_memory_limit() {
    let trace = scratch("tiny-runs.json", TRACE);
    let topology = scratch("plain-64.toml", TOPOLOGY);
    // `ulimit -v` in the shell, then exec: the limit applies to hybrid-sim alone.
    let o = Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -v {LIMIT_KIB} && exec \"$0\" \"$@\""))
        .arg(env!("CARGO_BIN_EXE_hybrid-sim"))
        .arg("replay")
        .arg(&trace)
        .arg("--topology")
        .arg(&topology)
        .arg("--json")
        .output()
        .expect("run hybrid-sim under sh");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        o.status.success(),
        "hybrid-sim under a {LIMIT_KIB} KiB limit: {:?}\n{stderr}",
        o.status
    );
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON report");
    // --json is an array of reports, one per policy.
    let summary = &report[0]["summary"];
    assert_eq!(summary["tasks_finished"], 60, "{summary}");
    assert!(summary["events"].as_u64() >= Some(12_000_000), "{summary}");
    // 60 tasks and 64 CPUs: a few hundred entries, not one per superseded slice.
    assert!(
        summary["peak_queued_events"].as_u64() <= Some(500),
        "{summary}"
    );
}

/// 1 GiB of address space: the documented maxima must be read within it (issue 24, item 7).
const ONE_GIB_KIB: u32 = 1024 * 1024;

/// A trace at the documented task limit (200,000 tasks, about 60 MB of compact JSON): each
/// task eight runs and sleeps of a few microseconds, so the text is dense in small values,
/// the shape that costs most when a document is held as a tree.
fn max_tasks_trace() -> String {
    use core::fmt::Write as _;
    let mut text = String::from(r#"{"version":1,"tasks":["#);
    for i in 0..200_000u64 {
        if i > 0 {
            text.push(',');
        }
        write!(text, r#"{{"name":"w{i}","phases":["#).unwrap();
        for j in 0..8 {
            if j > 0 {
                text.push(',');
            }
            write!(
                text,
                r#"{{"run_ns":{}}},{{"sleep_ns":{}}}"#,
                1000 + (i + j) % 97,
                2000 + (i * j) % 89
            )
            .unwrap();
        }
        text.push_str("]}");
    }
    text.push_str("]}");
    text
}

/// `validate` and `replay` of a trace at the task limit under 1 GiB of address space. Before
/// the trace was told from an rt-app file without building a tree of the whole document,
/// both peaked at 1.26 GB resident (debug build) and aborted under this limit; now 217 MB and
/// 322 MB.
#[test]
fn a_trace_at_the_task_limit_validates_and_replays_within_one_gib() {
    let trace = scratch("max-tasks.json", &max_tasks_trace());
    assert!(std::fs::metadata(&trace).unwrap().len() > 55_000_000);
    for args in [&["validate"][..], &["replay", "--json"][..]] {
        let o = Command::new("sh")
            .arg("-c")
            .arg(format!("ulimit -v {ONE_GIB_KIB} && exec \"$0\" \"$@\""))
            .arg(env!("CARGO_BIN_EXE_hybrid-sim"))
            .args(&args[..1])
            .arg(&trace)
            .args(&args[1..])
            .output()
            .expect("run hybrid-sim under sh");
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(
            o.status.success(),
            "hybrid-sim {args:?} under a 1 GiB limit: {:?}\n{stderr}",
            o.status
        );
        let stdout = String::from_utf8_lossy(&o.stdout);
        if args[0] == "validate" {
            assert!(
                stdout.contains("ok: trace version 1, 200000 task(s)"),
                "{stdout}"
            );
        } else {
            let report: serde_json::Value = serde_json::from_str(&stdout).expect("JSON report");
            assert_eq!(
                report[0]["summary"]["tasks_finished"], 200_000,
                "{stdout:.400}"
            );
        }
    }
}
