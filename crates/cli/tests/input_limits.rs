//! Every input file `hybrid-sim` reads is bounded before it is read: a
//! trace, an rt-app file, a recording for `import ftrace`, the live file of `compare`, a
//! machine file and a decision log each refuse a file over their limit, a FIFO, `/dev/zero`
//! and a directory with an input error (exit status 2) naming the path and what it is, without
//! blocking on the FIFO or reading the device.
#![cfg(unix)]

mod common;

use core::time::Duration;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Instant;

const TRACE: &str =
    r#"{"version": 1, "tasks": [{"name": "a", "phases": [{"run_ns": 1000}, {"sleep_ns": 1000}]}]}"#;

fn scratch_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("input-limits");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A sparse file of `len` bytes: as large as the limit needs, without writing it.
fn sparse(name: &str, len: u64) -> PathBuf {
    let path = scratch_dir().join(name);
    let f = std::fs::File::create(&path).unwrap();
    f.set_len(len).unwrap();
    path
}

fn fifo(name: &str) -> PathBuf {
    let path = scratch_dir().join(name);
    let _ = std::fs::remove_file(&path);
    let status = Command::new("mkfifo").arg(&path).status().expect("mkfifo");
    assert!(status.success(), "mkfifo {}", path.display());
    path
}

/// A small valid trace, one file per test: tests run in parallel, and a test rewriting a
/// shared one (truncated first) while another's replay reads it gave an empty trace.
fn small_trace(test: &str) -> PathBuf {
    let path = scratch_dir().join(format!("small-{test}.json"));
    std::fs::write(&path, TRACE).unwrap();
    path
}

/// Runs hybrid-sim; a run that has not ended after two minutes is killed and reported as a
/// hang (a FIFO opened for reading without a writer blocks forever).
fn run(args: &[&str]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_hybrid-sim"))
        .args(args)
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run hybrid-sim");
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(120) {
            child.kill().unwrap();
            panic!("hybrid-sim {args:?} blocked");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// The input error hybrid-sim must give: exit status 2, the path and `what` on stderr.
fn refused(args: &[&str], path: &Path, what: &str) {
    let o = run(args);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {stderr}");
    assert!(
        stderr.contains(&path.display().to_string()) && stderr.contains(what),
        "{args:?}: expected the path and `{what}` in: {stderr}"
    );
}

/// The special files every reader must refuse, with what the error calls each.
fn specials(tag: &str) -> Vec<(PathBuf, &'static str)> {
    let dir = scratch_dir().join(format!("dir-{tag}"));
    std::fs::create_dir_all(&dir).unwrap();
    vec![
        (
            fifo(&format!("fifo-{tag}")),
            "is a FIFO (named pipe), not a regular file",
        ),
        (
            PathBuf::from("/dev/zero"),
            "is a character device, not a regular file",
        ),
        (dir, "is a directory, not a regular file"),
    ]
}

#[test]
fn traces_are_bounded_in_validate_and_replay() {
    let big = sparse("big-trace.json", (64 << 20) + 1);
    let too_large = "trace is 67108865 bytes, more than the 67108864 accepted";
    for cmd in ["validate", "replay"] {
        let s = big.to_str().unwrap();
        refused(&[cmd, s], &big, too_large);
        for (path, what) in specials(cmd) {
            refused(&[cmd, path.to_str().unwrap()], &path, what);
        }
    }
}

#[test]
fn rt_app_files_are_bounded() {
    let big = sparse("big-rt-app.json", (16 << 20) + 1);
    refused(
        &["import", "rt-app", big.to_str().unwrap()],
        &big,
        "rt-app file is 16777217 bytes, more than the 16777216 accepted",
    );
    for (path, what) in specials("rt-app") {
        refused(&["import", "rt-app", path.to_str().unwrap()], &path, what);
    }
}

/// A small rt-app workload padded with spaces to `len` bytes.
fn padded_rt_app(name: &str, len: usize) -> PathBuf {
    let workload = r#"{"global": {"duration": 1}, "tasks": {"a": {"loop": 1, "run": 10}}}"#;
    let path = scratch_dir().join(name);
    std::fs::write(
        &path,
        workload.to_owned() + &" ".repeat(len - workload.len()),
    )
    .unwrap();
    path
}

/// `validate` and `replay` read a file under the trace's limit, since only its text says
/// whether it is an rt-app file; one that is must then be within the rt-app limit too. The
/// files of one `import rt-app` are merged, so the limit holds for them together.
#[test]
fn rt_app_files_read_as_traces_and_split_workloads_are_bounded() {
    let big = padded_rt_app("padded-rt-app.json", (16 << 20) + 1);
    for cmd in ["validate", "replay"] {
        refused(
            &[cmd, big.to_str().unwrap()],
            &big,
            "rt-app file is 16777217 bytes, more than the 16777216 accepted",
        );
    }
    let half = padded_rt_app("half-rt-app.json", (8 << 20) + 1);
    let h = half.to_str().unwrap();
    refused(
        &["import", "rt-app", h, h],
        &half,
        "rt-app files of one workload are 16777218 bytes together, more than the 16777216 \
         accepted",
    );
    let o = run(&["import", "rt-app", h]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn recordings_are_bounded() {
    let big = sparse("big-recording.txt", (256 << 20) + 1);
    refused(
        &["import", "ftrace", big.to_str().unwrap()],
        &big,
        "recording is 268435457 bytes, more than the 268435456 accepted",
    );
    for (path, what) in specials("ftrace") {
        refused(&["import", "ftrace", path.to_str().unwrap()], &path, what);
    }
}

#[test]
fn live_files_are_bounded() {
    let trace = small_trace("live");
    let t = trace.to_str().unwrap();
    let big = sparse("big.live.json", (16 << 20) + 1);
    refused(
        &["compare", t, big.to_str().unwrap()],
        &big,
        "live file is 16777217 bytes, more than the 16777216 accepted",
    );
    for (path, what) in specials("live") {
        refused(&["compare", t, path.to_str().unwrap()], &path, what);
    }
}

#[test]
fn machine_files_are_bounded() {
    let trace = small_trace("machine");
    let t = trace.to_str().unwrap();
    let big = sparse("big-machine.toml", (1 << 20) + 1);
    let too_large = "file is 1048577 bytes, more than the 1048576 accepted";
    refused(
        &["replay", t, "--topology", big.to_str().unwrap()],
        &big,
        too_large,
    );
    refused(&["validate", big.to_str().unwrap()], &big, too_large);
    for (path, what) in specials("machine") {
        refused(
            &["replay", t, "--topology", path.to_str().unwrap()],
            &path,
            what,
        );
    }
}

#[test]
fn decision_logs_are_bounded() {
    let big = sparse("big.decisions.jsonl", (256 << 20) + 1);
    refused(
        &["decisions", big.to_str().unwrap()],
        &big,
        "decision log is 268435457 bytes, more than the 268435456 accepted",
    );
    for (path, what) in specials("decisions") {
        refused(&["decisions", path.to_str().unwrap()], &path, what);
    }
}
