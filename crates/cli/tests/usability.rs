//! What a user expects: decision lines at -vv, no colour codes off a terminal, one
//! --json shape, per-CPU busy time, validate's replay limits, --set errors naming the key,
//! 2^64 as an integer, a trace's machine file beside the trace, knob ranges and defaults.

use std::path::PathBuf;

mod common;
use common::{hybrid_sim, text, write_and_replay_json};

fn scratch_dir(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("usability")
        .join(name);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

const LONE: &str = "examples/traces/seed000-lone.json";

#[test]
fn vv_logs_each_decision_without_colour_codes_off_a_terminal() {
    let v = hybrid_sim(&["-v", "replay", LONE]);
    let vv = hybrid_sim(&["-vv", "replay", LONE]);
    assert!(v.status.success() && vv.status.success());
    let (v, vv) = (text(&v.stderr), text(&vv.stderr));
    assert!(!v.contains(" task "), "-v has no decision lines: {v}");
    let decision = vv
        .lines()
        .find(|l| l.contains(" task ") && l.contains("-> run on cpu"))
        .unwrap_or_else(|| panic!("no decision line in: {vv}"));
    assert!(decision.contains("(step idle-p-core)"), "{decision}");
    assert!(!vv.contains('\u{1b}'), "ANSI codes in a pipe: {vv:?}");
}

#[test]
fn json_is_an_array_for_one_policy_with_per_cpu_busy_time() {
    let o = hybrid_sim(&["replay", LONE, "--topology", "i7-13800h", "--json"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let reports: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let reports = reports.as_array().expect("an array");
    assert_eq!(reports.len(), 1);
    let cpus = reports[0]["cpus"].as_array().expect("per-CPU stats");
    assert_eq!(cpus.len(), 20);
    let busy: u64 = cpus.iter().map(|c| c["busy_ns"].as_u64().unwrap()).sum();
    let by_kind: u64 = reports[0]["kinds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["busy_ns"].as_u64().unwrap())
        .sum();
    assert!(busy > 0);
    assert_eq!(
        busy, by_kind,
        "per-CPU busy time adds up to the per-kind figures"
    );
}

#[test]
fn validate_refuses_what_replay_always_would_naming_file_and_task() {
    let dir = scratch_dir("validate");
    let path = dir.join("trillion.json");
    std::fs::write(
        &path,
        r#"{"version": 1, "tasks": [{"name": "spin", "phases": [{"loop": {"times": 1000000,
            "phases": [{"loop": {"times": 1000000, "phases": [{"run_ns": 1}]}}]}}]}]}"#,
    )
    .unwrap();
    let path = path.to_str().unwrap();
    for cmd in ["validate", "replay"] {
        let o = hybrid_sim(&[cmd, path]);
        assert_eq!(o.status.code(), Some(2), "{cmd}");
        let err = text(&o.stderr);
        assert!(
            err.contains("trillion.json: tasks[0] \"spin\": needs 1000000000001 events"),
            "{cmd}: {err}"
        );
    }
}

#[test]
fn set_errors_name_the_key_and_value_given() {
    for (item, key) in [
        ("fit_margin_pct=0", "bad value `0` for `fit_margin_pct`"),
        (
            "auto_low_busy_pct=90",
            "bad value `90` for `auto_low_busy_pct`",
        ),
    ] {
        let o = hybrid_sim(&["replay", LONE, "--set", item]);
        assert_eq!(o.status.code(), Some(2));
        assert!(text(&o.stderr).contains(key), "{item}: {}", text(&o.stderr));
    }
}

#[test]
fn two_to_the_64_is_reported_as_the_integer_written() {
    let dir = scratch_dir("big");
    let path = dir.join("seed.json");
    std::fs::write(
        &path,
        r#"{"version": 1, "seed": 18446744073709551616, "tasks": []}"#,
    )
    .unwrap();
    let o = hybrid_sim(&["validate", path.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let err = text(&o.stderr);
    assert!(
        err.contains("integer `18446744073709551616` is out of range"),
        "{err}"
    );
}

#[test]
fn a_traces_machine_file_is_found_beside_the_trace() {
    let dir = scratch_dir("beside");
    std::fs::write(
        dir.join("box.toml"),
        "name = \"box\"\n[[groups]]\nkind = \"efficiency\"\ncapacity = 1024\ncores = 3\n",
    )
    .unwrap();
    let trace = dir.join("t.json");
    // The working directory is the repository root, where no box.toml is.
    let reports = write_and_replay_json(
        &trace,
        r#"{"version": 1, "machine": "box.toml", "tasks": [{"name": "a", "phases": [{"run_ns": 1000}]}]}"#,
    );
    assert_eq!(reports[0]["machine"], "box");
}

/// A trace's `machine` names a preset or a file beside the trace, nothing else: not an
/// absolute path, not `..`, not a symbolic link out of the trace's directory; a file in a
/// directory below the trace's is beside it.
#[test]
fn a_traces_machine_field_cannot_leave_the_traces_directory() {
    let outside = scratch_dir("machine-outside");
    let machine = "name = \"box\"\n[[groups]]\nkind = \"efficiency\"\ncapacity = 1024\ncores = 3\n";
    std::fs::write(outside.join("box.toml"), machine).unwrap();
    let dir = scratch_dir("machine-field");
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::write(dir.join("sub/box.toml"), machine).unwrap();
    let link = dir.join("link.toml");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(outside.join("box.toml"), &link).unwrap();
    let absolute = outside.join("box.toml").display().to_string();
    let trace_naming = |name: &str, file: &str| {
        let trace = dir.join(file);
        let doc = serde_json::json!({"version": 1, "machine": name,
            "tasks": [{"name": "a", "phases": [{"run_ns": 1000}]}]});
        std::fs::write(&trace, doc.to_string()).unwrap();
        trace
    };
    let ok = trace_naming("sub/box.toml", "ok.json");
    let o = hybrid_sim(&["replay", ok.to_str().unwrap(), "--json"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    for (name, file, why) in [
        (
            "../machine-outside/box.toml",
            "up.json",
            "climbs out with `..`",
        ),
        (absolute.as_str(), "abs.json", "is an absolute path"),
        ("link.toml", "link.json", "outside the trace's directory"),
        ("/dev/zero", "zero.json", "is an absolute path"),
    ] {
        let trace = trace_naming(name, file);
        for cmd in ["replay", "validate"] {
            let o = hybrid_sim(&[cmd, trace.to_str().unwrap()]);
            let err = text(&o.stderr);
            assert_eq!(o.status.code(), Some(2), "{cmd} {name}: {err}");
            assert!(
                err.contains(&format!("{}: `machine` \"{name}\"", trace.display()))
                    && err.contains(why),
                "{cmd} {name}: {err}"
            );
        }
    }
}

#[test]
fn policies_lists_knob_values_and_defaults() {
    let o = hybrid_sim(&["policies"]);
    assert!(o.status.success());
    let out = text(&o.stdout);
    let fit = out
        .lines()
        .find(|l| l.starts_with("fit_margin_pct"))
        .expect("a fit_margin_pct row");
    assert!(
        fit.contains("1..=100") && fit.trim_end().ends_with("80"),
        "{fit}"
    );
    assert!(out.contains("slice_us"), "{out}");
    // Which run live: the scheduler core's, not the pull-balancing baselines.
    let live = |name: &str| {
        let row = out
            .lines()
            .find(|l| l.starts_with(&format!("{name} ")))
            .unwrap();
        row.split_whitespace().nth(1).unwrap().to_owned()
    };
    assert_eq!(live("spread"), "yes");
    assert_eq!(live("hybridland"), "yes");
    assert_eq!(live("kernel-default"), "no");
    assert_eq!(live("summed-capacity"), "no");
}
