//! `hybrid-sim import ftrace` on the VM recording, and a malformed recording.

use std::path::PathBuf;

mod common;
use common::{hybrid_sim, text};

#[test]
fn the_vm_recording_imports_and_replays_on_its_machine() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("ftrace-cli");
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("vm-busybox.json");
    let o = hybrid_sim(&[
        "import",
        "ftrace",
        "examples/recordings/vm-busybox.trace",
        "--topology",
        "scripts/vm/topology-2p-smt-4e.toml",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(
        text(&o.stdout).contains("56 task(s) from recording examples/recordings/vm-busybox.trace on vm-2p-smt-4e; 5 wake-up(s) by a task kept as relations; events skipped: none"),
        "{}",
        text(&o.stdout)
    );
    // The machine file is not beside the trace, so the trace cannot name it (a trace's
    // `machine` is a preset or a file beside it): the import says so, and replay is told.
    assert!(
        text(&o.stderr).contains("so the trace does not name it; replay it with --topology"),
        "{}",
        text(&o.stderr)
    );
    let o = hybrid_sim(&[
        "replay",
        out.to_str().unwrap(),
        "--topology",
        "scripts/vm/topology-2p-smt-4e.toml",
        "--policy",
        "hybridland,spread",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(text(&o.stdout).starts_with("trace vm-busybox on vm-2p-smt-4e (seed 0)"));
}

#[test]
fn a_malformed_recording_names_the_line() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("ftrace-cli");
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.trace");
    std::fs::write(
        &bad,
        "# tracer: nop\n  a-1 [000] 1.000000: sched_wakeup: comm=a pid=1\ngarbage here\n",
    )
    .unwrap();
    let o = hybrid_sim(&["import", "ftrace", bad.to_str().unwrap(), "-t", "tc2"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("bad.trace:3: not an event line"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn perf_script_with_call_chains_and_trace_cmd_report_import() {
    for f in ["perf-script-callchain.txt", "trace-cmd-report.txt"] {
        let o = hybrid_sim(&[
            "import",
            "ftrace",
            &format!("examples/recordings/formats/{f}"),
            "--topology",
            "scripts/vm/topology-2p-smt-4e.toml",
        ]);
        assert!(o.status.success(), "{f}: {}", text(&o.stderr));
        assert!(text(&o.stdout).starts_with("{\n  \"version\": 2,"), "{f}");
    }
}
