//! `hybrid-sim import ftrace` on the VM recording, on real trace-cmd and perf output, and on
//! a malformed recording.

use std::path::PathBuf;

mod common;
use common::{hybrid_sim, hybrid_sim_env, text};

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

/// Real `trace-cmd report` (default, `-N`, `-R`) and `perf script` (with and without call
/// chains) output (examples/recordings/formats/real/) imports, validates and replays.
#[test]
fn real_trace_cmd_and_perf_output_imports_validates_and_replays() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("ftrace-cli-real");
    std::fs::create_dir_all(&dir).unwrap();
    for (f, tasks, relations) in [
        ("trace-cmd-report.txt", 34, 221),
        ("trace-cmd-report-N.txt", 34, 221),
        ("trace-cmd-report-R.txt", 34, 221),
        ("perf-script.txt", 48, 161),
        ("perf-script-callchain.txt", 48, 161),
    ] {
        let out = dir.join(f.replace(".txt", ".json"));
        let out = out.to_str().unwrap();
        let input = format!("examples/recordings/formats/real/{f}");
        let o = hybrid_sim(&["import", "ftrace", &input, "-o", out]);
        assert!(o.status.success(), "{f}: {}", text(&o.stderr));
        let said = format!(
            "{tasks} task(s) from recording {input} on i7-13800h; {relations} wake-up(s) by a \
             task kept as relations"
        );
        assert!(text(&o.stdout).contains(&said), "{f}: {}", text(&o.stdout));
        let o = hybrid_sim(&["validate", out]);
        assert!(o.status.success(), "{f}: {}", text(&o.stderr));
        assert!(
            text(&o.stdout).contains(&format!("ok: trace version 2, {tasks} task(s)")),
            "{f}: {}",
            text(&o.stdout)
        );
        let o = hybrid_sim(&["replay", out, "--policy", "hybridland"]);
        assert!(o.status.success(), "{f}: {}", text(&o.stderr));
        assert!(text(&o.stdout).starts_with("trace "), "{f}");
    }
}

/// What the trace does not carry exactly as recorded (switches the recording lacks, tasks
/// folded into a loop) is said on standard error whatever RUST_LOG says, as `import rt-app`
/// says what the model cannot carry.
#[test]
fn import_notes_are_printed_whatever_the_log_level() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("ftrace-cli-notes");
    std::fs::create_dir_all(&dir).unwrap();
    // More bursts than a trace task holds (1024 phases): 600 runs and sleeps.
    let long = dir.join("long.trace");
    let mut rec = String::new();
    for k in 0..600u64 {
        let t = 1_000_000 + k * 10;
        rec.push_str(&format!(
            " <idle>-0 [000] {}.{:06}: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 \
             prev_state=R ==> next_comm=spin next_pid=5 next_prio=120\n \
             spin-5 [000] {}.{:06}: sched_switch: prev_comm=spin prev_pid=5 prev_prio=120 \
             prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120\n",
            t / 1_000_000,
            t % 1_000_000,
            (t + 4) / 1_000_000,
            (t + 4) % 1_000_000
        ));
    }
    std::fs::write(&long, rec).unwrap();
    for log in ["info", "error", "off"] {
        let o = hybrid_sim_env(
            &[
                "import",
                "ftrace",
                "examples/recordings/formats/real/trace-cmd-report.txt",
            ],
            &[("NO_COLOR", "1"), ("RUST_LOG", log)],
        );
        assert!(o.status.success(), "{log}: {}", text(&o.stderr));
        let err = text(&o.stderr);
        assert!(
            err.contains(
                "ftrace import of examples/recordings/formats/real/trace-cmd-report.txt: what \
                 the trace does not carry exactly as recorded:\n  4 sched_switch(es) missing \
                 from the recording"
            ),
            "{log}: {err}"
        );
        let o = hybrid_sim_env(
            &["import", "ftrace", long.to_str().unwrap(), "-t", "tc2"],
            &[("NO_COLOR", "1"), ("RUST_LOG", log)],
        );
        assert!(o.status.success(), "{log}: {}", text(&o.stderr));
        let err = text(&o.stderr);
        assert!(
            err.contains(
                "task \"spin-5\": more bursts than a trace task holds (1024 phases), folded \
                 into a loop"
            ),
            "{log}: {err}"
        );
        assert!(!err.contains("missing from the recording"), "{log}: {err}");
    }
}
