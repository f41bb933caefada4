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
