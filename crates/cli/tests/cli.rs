//! The `hybrid-sim` binary end to end: output shape, determinism, and exit status 2 with a
//! message naming the place for every kind of bad input.

use std::path::PathBuf;
use std::process::Output;

mod common;
use common::{hybrid_sim, root};

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A file under the target directory's temp area, unique per test.
fn scratch(name: &str, contents: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("cli-tests");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, contents).unwrap();
    path
}

const WEBGL: &str = "examples/traces/seed004-webgl.json";

#[test]
fn replay_compares_policies_side_by_side() {
    let o = hybrid_sim(&["replay", WEBGL, "--policy", "hybridland,spread"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    let header = text
        .lines()
        .find(|l| l.starts_with("metric"))
        .expect("table header");
    assert!(
        header.contains("hybridland") && header.contains("spread"),
        "{header}"
    );
    let fps = text
        .lines()
        .find(|l| l.starts_with("render: fps mean"))
        .expect("fps row");
    assert!(fps.contains("(x"), "ratios to the first policy: {fps}");
    assert!(text.contains("placements by step: waker-cpu"), "{text}");
}

#[test]
fn the_replay_table_shows_every_frame_task() {
    let o = hybrid_sim(&["replay", WEBGL, "--policy", "hybridland,spread", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let reports: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let o = hybrid_sim(&["replay", WEBGL, "--policy", "hybridland,spread"]);
    let text = stdout(&o);
    let row = |label: &str| -> Vec<String> {
        let line = text
            .lines()
            .find(|l| l.starts_with(label))
            .unwrap_or_else(|| panic!("no row `{label}`:\n{text}"));
        // The label, then each policy's figure (a ratio after it is dropped).
        line[label.len()..]
            .split("  ")
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .map(|c| c.split(" (x").next().unwrap().to_owned())
            .collect()
    };
    // The WebGL trace's three frame tasks, each with its own figures from the report.
    for task in ["render", "compositor", "audio"] {
        let mut fps = Vec::new();
        let mut missed = Vec::new();
        for r in reports.as_array().unwrap() {
            let t = r["tasks"]
                .as_array()
                .unwrap()
                .iter()
                .find(|t| t["name"] == task)
                .unwrap();
            fps.push(format!("{:.2}", t["frames"]["fps_mean"].as_f64().unwrap()));
            missed.push(t["frames"]["missed_deadlines"].to_string());
        }
        assert_eq!(row(&format!("{task}: fps mean")), fps, "{task}");
        assert_eq!(row(&format!("{task}: missed deadlines")), missed, "{task}");
    }
    assert!(
        !text.contains("js-worker: fps"),
        "not a frame task:\n{text}"
    );
}

#[test]
fn the_replay_table_names_the_frame_tasks_it_has_no_room_for() {
    let trace = scratch(
        "ten-frame-tasks.json",
        r#"{"version": 1, "name": "ten", "duration_ns": 200000000, "tasks": [
            {"name": "game", "copies": 10,
             "frames": {"period_ns": 16666667, "work_ns": 1000000, "count": 10}}]}"#,
    );
    let o = hybrid_sim(&["replay", trace.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    for i in 0..8 {
        assert!(text.contains(&format!("game.{i}: fps mean")), "{text}");
        assert!(
            text.contains(&format!("game.{i}: missed deadlines")),
            "{text}"
        );
    }
    assert!(!text.contains("game.8: fps"), "{text}");
    assert!(
        text.contains("2 more frame task(s) not in the table (game.8, game.9)"),
        "{text}"
    );
}

#[test]
fn no_task_finished_says_so() {
    let o = hybrid_sim(&[
        "replay",
        "examples/traces/seed000-10-threads.json",
        "--policy",
        "hybridland,spread",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    let line = text
        .lines()
        .find(|l| l.starts_with("mean turnaround"))
        .unwrap();
    assert_eq!(line.matches("none finished").count(), 2, "{text}");
    assert!(!line.contains("0.00"), "{line}");
}

#[test]
fn json_output_is_byte_identical_across_runs() {
    let args = ["replay", WEBGL, "--policy", "hybridland,spread", "--json"];
    let a = hybrid_sim(&args);
    let b = hybrid_sim(&args);
    assert!(a.status.success(), "{}", stderr(&a));
    assert_eq!(a.stdout, b.stdout);
    let reports: serde_json::Value = serde_json::from_slice(&a.stdout).unwrap();
    assert_eq!(reports.as_array().map(Vec::len), Some(2));
}

#[test]
fn topology_show_prints_the_idle_order() {
    let o = hybrid_sim(&["topology", "show", "i7-13800h"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("1. idle-p-core: 0 2 4 6 8 10"), "{text}");
    assert!(
        text.contains("2. idle-e-core: 12 16 13 17 14 18 15 19"),
        "{text}"
    );
    assert!(text.contains("3. busy-sibling: 1 3 5 7 9 11"), "{text}");
    let o = hybrid_sim(&[
        "topology",
        "show",
        "i7-13800h",
        "--set",
        "primary_domain=powersave",
    ]);
    assert!(
        stdout(&o).contains("1. idle-e-core: 12 16"),
        "{}",
        stdout(&o)
    );
    let o = hybrid_sim(&["topology", "list"]);
    for preset in [
        "i7-13800h",
        "adl-desktop",
        "rpl-desktop",
        "mtl-laptop",
        "atom24",
        "tc2",
        "symmetric",
    ] {
        assert!(stdout(&o).contains(preset), "{preset} missing");
    }
}

#[test]
fn validate_accepts_every_bundled_example_and_refuses_the_invalid_ones() {
    let listing = |dir: &str| -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(root().join(dir))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        v.sort();
        v
    };
    let good = listing("examples/traces");
    assert!(good.len() >= 8, "{good:?}");
    for path in good {
        let o = hybrid_sim(&["validate", path.to_str().unwrap()]);
        assert!(o.status.success(), "{}: {}", path.display(), stderr(&o));
        // The version the file says: 1 for the older examples, 2 for one with relations.
        let version = if path.ends_with("wake-chain.json") {
            2
        } else {
            1
        };
        assert!(
            stdout(&o).contains(&format!(": ok: trace version {version}")),
            "{}",
            stdout(&o)
        );
    }
    let bad = listing("examples/traces/invalid");
    assert!(!bad.is_empty());
    for path in bad {
        let o = hybrid_sim(&[
            "validate",
            path.to_str().unwrap(),
            "--topology",
            "i7-13800h",
        ]);
        assert_eq!(
            o.status.code(),
            Some(2),
            "{}: {}",
            path.display(),
            stdout(&o)
        );
        let name = path.file_name().unwrap().to_str().unwrap();
        assert!(stderr(&o).contains(name), "{name}: {}", stderr(&o));
    }
    for topo in [
        "examples/topologies/i7-13800h.toml",
        "examples/topologies/tc2.toml",
        "scripts/vm/topology-2p-smt-4e.toml",
    ] {
        let o = hybrid_sim(&["topology", "show", topo]);
        assert!(o.status.success(), "{topo}: {}", stderr(&o));
    }
}

/// Each case: a trace text, and what the error must mention.
const BAD_TRACES: &[(&str, &str, &[&str])] = &[
    (
        "wrong-type.json",
        r#"{"version": 1, "tasks": [{"name": "a", "phases": [{"run_ns": "lots"}]}]}"#,
        &["wrong-type.json:1:", "run_ns"],
    ),
    (
        "unknown-field.json",
        r#"{"version": 1, "tasks": [{"name": "a", "colour": "red", "phases": [{"run_ns": 1}]}]}"#,
        &["unknown-field.json:1:", "colour"],
    ),
    (
        "negative.json",
        "{\"version\": 1,\n \"tasks\": [{\"name\": \"a\", \"phases\": [{\"run_ns\": -5}]}]}",
        &["negative.json:2:", "run_ns"],
    ),
    (
        "truncated.json",
        r#"{"version": 1, "tasks": [{"name": "a", "phases": [{"run_"#,
        &["truncated.json:1:"],
    ),
    (
        "cpu-outside.json",
        r#"{"version": 1, "tasks": [{"name": "a", "allowed_cpus": "0,99", "phases": [{"run_ns": 1}]}]}"#,
        &["cpu-outside.json", "99"],
    ),
    (
        "version.json",
        r#"{"version": 7, "tasks": []}"#,
        &["version.json", "version 7"],
    ),
];

#[test]
fn malformed_traces_exit_2_naming_the_place() {
    for (name, text, needles) in BAD_TRACES {
        let path = scratch(name, text);
        for cmd in ["replay", "validate"] {
            let mut args = vec![cmd, path.to_str().unwrap()];
            if cmd == "validate" {
                args.extend(["--topology", "i7-13800h"]);
            }
            let o = hybrid_sim(&args);
            assert_eq!(o.status.code(), Some(2), "{cmd} {name}: {}", stderr(&o));
            assert!(
                o.stdout.is_empty(),
                "{cmd} {name}: nothing half-run, got {}",
                stdout(&o)
            );
            let err = stderr(&o);
            for needle in *needles {
                assert!(
                    err.contains(needle),
                    "{cmd} {name}: `{needle}` not in: {err}"
                );
            }
        }
    }
}

#[test]
fn bad_flags_and_names_exit_2() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["replay", WEBGL, "--topology", "pentium-pro"],
            "unknown topology `pentium-pro`",
        ),
        (
            &["replay", WEBGL, "--policy", "hybridland,fastest"],
            "fastest",
        ),
        (
            &["replay", WEBGL, "--set", "cluster_balance=sideways"],
            "cluster_balance",
        ),
        (&["replay", WEBGL, "--set", "colour=red"], "colour"),
        (&["replay", WEBGL, "--set", "nonsense"], "KEY=VALUE"),
        (&["replay", "examples/traces/missing.json"], "missing.json"),
        (
            &["topology", "show", "no/such/file.toml"],
            "no/such/file.toml",
        ),
    ];
    for (args, needle) in cases {
        let o = hybrid_sim(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains(needle),
            "{args:?}: `{needle}` not in {}",
            stderr(&o)
        );
    }
}

#[test]
fn contradictory_topology_file_exits_2() {
    let path = scratch(
        "split-core.toml",
        "cores = [\"0-1\"]\n[[cpus]]\nlist = \"0\"\nkind = \"performance\"\ncapacity = 1024\n\n[[cpus]]\nlist = \"1\"\nkind = \"efficiency\"\ncapacity = 600\n",
    );
    let o = hybrid_sim(&["topology", "show", path.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("different core kinds"),
        "{}",
        stderr(&o)
    );
}
