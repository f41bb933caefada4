//! `hybrid-sim` under a real address-space limit. `replay`: a valid trace
//! of many tiny runs used to abort out of memory because superseded slice ends stayed in the
//! event heap; its memory now depends on tasks and CPUs only. Every input at its documented
//! maximum is read in 1 GiB: a trace of 200,000 tasks (`validate`,
//! `replay`), a recording (`import ftrace`), an rt-app file (`import rt-app`) and a decision
//! log (`decisions`), each generated just under its size limit in a directory removed after.
//!
//! Here: the tiny runs, the trace at the task limit, and what the generated inputs share (a
//! counting writer, the 1 GiB run; each test's scratch directory is `common`'s); the imports'
//! inputs are generated in `imports`, the decision log in `decisions`.
#![cfg(unix)]

#[path = "../common/mod.rs"]
mod common;

mod decisions;
mod imports;

use common::scratch;
use std::ffi::OsStr;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

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

/// `contents` written as `name` in `dir`.
fn write_in(dir: &Path, name: &str, contents: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, contents).unwrap();
    path
}

#[test]
fn tiny_runs_replay_within_a_memory_limit() {
    let dir = scratch();
    let trace = write_in(dir.path(), "tiny-runs.json", TRACE);
    let topology = write_in(dir.path(), "plain-64.toml", TOPOLOGY);
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

/// 1 GiB of address space: the documented maxima must be read within it.
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
    let dir = scratch();
    let trace = write_in(dir.path(), "max-tasks.json", &max_tasks_trace());
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

/// A buffered file that counts what was written to it, so a generator can stop just under a
/// limit without holding the text.
struct Counted {
    file: std::io::BufWriter<std::fs::File>,
    bytes: u64,
}

impl Counted {
    fn create(path: &Path) -> Self {
        Self {
            file: std::io::BufWriter::new(std::fs::File::create(path).unwrap()),
            bytes: 0,
        }
    }

    fn finish(mut self) -> u64 {
        self.file.flush().unwrap();
        self.bytes
    }
}

impl Write for Counted {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.file.write(buf)?;
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

/// `hybrid-sim ARGS` with 1 GiB of address space for it alone (`ulimit -v` in the shell, then
/// exec), its output captured.
fn within_one_gib(args: &[&OsStr]) -> Output {
    Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -v {ONE_GIB_KIB} && exec \"$0\" \"$@\""))
        .arg(env!("CARGO_BIN_EXE_hybrid-sim"))
        .args(args)
        .env_remove("RUST_LOG")
        .output()
        .expect("run hybrid-sim under sh")
}

fn assert_ran(o: &Output, what: &str) {
    assert!(
        o.status.success(),
        "{what} under a 1 GiB limit: {:?}\n{}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Bytes a generator leaves free below a limit: it stops between two rounds, never in one.
const MARGIN: u64 = 64 << 10;
