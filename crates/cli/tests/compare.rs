//! `hybrid-sim compare` on a recording from the project's VM (scripts/vm-fidelity.sh: a lone
//! spinner beside a 30 fps frame task under `scx_hybridland --record`, on the machine
//! `scx_hybridland --dry-run --emit-topology` wrote there), `import ftrace --live`, and
//! malformed live files.

mod common;

use common::{hybrid_sim, text};
use std::path::PathBuf;

const FIX: &str = "crates/cli/tests/fixtures/fidelity";

fn fixture(name: &str) -> String {
    format!("{FIX}/{name}")
}

fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("compare-cli");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn compare(live: &str, extra: &[&str]) -> std::process::Output {
    let trace = fixture("lone-frame-hybridland.trace.json");
    let topo = fixture("emitted-topology.toml");
    let mut args = vec!["compare", trace.as_str(), live, "--topology", topo.as_str()];
    args.extend_from_slice(extra);
    hybrid_sim(&args)
}

/// The live file's CPU-time share of a kind, computed here from its raw figures.
fn live_share(kind: &str) -> f64 {
    let live: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(common::root().join(fixture("lone-frame-hybridland.live.json")))
            .unwrap(),
    )
    .unwrap();
    let kinds = live["kinds"].as_array().unwrap();
    let total: f64 = kinds.iter().map(|k| k["busy_ns"].as_f64().unwrap()).sum();
    let of = kinds.iter().find(|k| k["kind"] == kind).unwrap();
    of["busy_ns"].as_f64().unwrap() * 100.0 / total
}

#[test]
fn a_recorded_run_replays_beside_its_live_figures() {
    let live = fixture("lone-frame-hybridland.live.json");
    let o = compare(&live, &[]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    for label in [
        "CPU time performance (%)",
        "CPU time efficiency (%)",
        "placements idle-p-core (%)",
        "placements no-idle (%)",
        "running in efficiency 0,2 (tasks)",
        "running in performance 6-7 (tasks)",
        "migrations (/s)",
    ] {
        assert!(out.contains(label), "{label} missing:\n{out}");
    }
    assert!(out.contains("hybridland (sim) vs scx_hybridland"), "{out}");
    // Deterministic: the same bytes again.
    assert_eq!(compare(&live, &[]).stdout, o.stdout);

    let j = compare(&live, &["--json"]);
    assert!(j.status.success(), "{}", text(&j.stderr));
    let c: serde_json::Value = serde_json::from_str(&text(&j.stdout)).unwrap();
    let rows = c["rows"].as_array().unwrap();
    let row = |group: &str, name: &str| {
        rows.iter()
            .find(|r| r["group"] == group && r["name"] == name)
            .unwrap_or_else(|| panic!("no row {group} {name}"))
    };
    let p = row("cpu-time", "performance");
    assert!((p["live"].as_f64().unwrap() - live_share("performance")).abs() < 1e-9);
    let diff = p["sim"].as_f64().unwrap() - p["live"].as_f64().unwrap();
    assert!((p["diff"].as_f64().unwrap() - diff).abs() < 1e-9);
    assert_eq!(p["within_target"], diff.abs() <= 10.0);
    // Shares of one group add up to 100 on both sides.
    for group in ["cpu-time", "placements"] {
        for side in ["sim", "live"] {
            let sum: f64 = rows
                .iter()
                .filter(|r| r["group"] == group)
                .map(|r| r[side].as_f64().unwrap())
                .sum();
            assert!((sum - 100.0).abs() < 1e-6, "{group} {side}: {sum}");
        }
    }
    assert_eq!(c["policy"], "hybridland");
    // The replay used the live scheduler's knobs.
    assert!(
        c["policy_config"]
            .as_str()
            .unwrap()
            .contains("cluster_balance=auto"),
        "{}",
        c["policy_config"]
    );
}

#[test]
fn a_malformed_live_file_is_an_input_error_naming_the_field() {
    let good =
        std::fs::read_to_string(common::root().join(fixture("lone-frame-hybridland.live.json")))
            .unwrap();
    let cases = [
        (
            good.replacen("\"busy_ns\": ", "\"busy_ns\": -", 1),
            "kinds[0].busy_ns",
        ),
        (
            good.replace("\"idle-e-core\"", "\"idle-x-core\""),
            "steps[1].step",
        ),
        (
            good.replace("\"window_ns\"", "\"window\""),
            "unknown field `window`",
        ),
        (
            good.replacen("\"version\": 1", "\"version\": 9", 1),
            "version 9",
        ),
        (good[..good.len() / 2].to_owned(), "EOF"),
    ];
    for (i, (body, needle)) in cases.iter().enumerate() {
        let path = scratch(&format!("bad-{i}.live.json"));
        std::fs::write(&path, body).unwrap();
        let o = compare(path.to_str().unwrap(), &[]);
        assert_eq!(o.status.code(), Some(2), "case {i}: {}", text(&o.stderr));
        let err = text(&o.stderr);
        assert!(err.contains(needle), "case {i}: {needle} not in {err}");
        assert!(err.contains(path.to_str().unwrap()), "case {i}: {err}");
    }
}

#[test]
fn a_tracepoint_recording_gives_live_figures_for_kernel_default() {
    let trace = scratch("busybox.json");
    let live = scratch("busybox.live.json");
    let topo = "scripts/vm/topology-2p-smt-4e.toml";
    let o = hybrid_sim(&[
        "import",
        "ftrace",
        "examples/recordings/vm-busybox.trace",
        "-t",
        topo,
        "-o",
        trace.to_str().unwrap(),
        "--live",
        live.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let o = hybrid_sim(&[
        "compare",
        trace.to_str().unwrap(),
        live.to_str().unwrap(),
        "-t",
        topo,
        "--policy",
        "kernel-default",
        "--json",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let c: serde_json::Value = serde_json::from_str(&text(&o.stdout)).unwrap();
    let rows = c["rows"].as_array().unwrap();
    // No placements on either side to compare; CPU time, four clusters and migrations.
    assert!(rows.iter().all(|r| r["group"] != "placements"));
    assert_eq!(rows.iter().filter(|r| r["group"] == "occupancy").count(), 4);
    let live_total: f64 = rows
        .iter()
        .filter(|r| r["group"] == "cpu-time")
        .map(|r| r["live"].as_f64().unwrap())
        .sum();
    assert!((live_total - 100.0).abs() < 1e-6);
}

#[test]
fn hybrid_sim_validate_accepts_the_recorded_trace() {
    let trace = fixture("lone-frame-hybridland.trace.json");
    let topo = fixture("emitted-topology.toml");
    let o = hybrid_sim(&["validate", &trace, "--topology", &topo]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    // The live file is not a trace: validate says so instead of accepting it.
    let live = fixture("lone-frame-hybridland.live.json");
    let o = hybrid_sim(&["validate", &live]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stdout));
}

#[test]
fn a_recording_names_its_policy_and_the_replay_follows_it() {
    // As `scx_hybridland --record` writes it since `--policy`: the policy beside the knobs,
    // not among them.
    let fixture_text =
        std::fs::read_to_string(common::root().join(fixture("lone-frame-hybridland.live.json")))
            .unwrap();
    let mut live: serde_json::Value = serde_json::from_str(&fixture_text).unwrap();
    live["policy"] = "spread".into();
    let path = scratch("spread.live.json");
    std::fs::write(&path, live.to_string()).unwrap();
    let path = path.to_str().unwrap();

    let json = |extra: &[&str]| -> serde_json::Value {
        let mut args = vec!["--json"];
        args.extend_from_slice(extra);
        let o = compare(path, &args);
        assert!(o.status.success(), "{}", text(&o.stderr));
        serde_json::from_str(&text(&o.stdout)).unwrap()
    };
    let named = json(&[]);
    let spread = json(&["--policy", "spread"]);
    let hybridland = json(&["--policy", "hybridland"]);
    assert_eq!(named, spread, "the live file's policy is the default");
    assert_ne!(named, hybridland, "--policy wins over it");
}

#[test]
fn the_replayed_policy_draws_from_the_live_runs_seed() {
    // capacity-blind scans from a CPU drawn from its seed: live that is `--seed`, which the
    // live file carries, and the replay gives the same seed to the policy's draws.
    let fixture_text =
        std::fs::read_to_string(common::root().join(fixture("lone-frame-hybridland.live.json")))
            .unwrap();
    let mut live: serde_json::Value = serde_json::from_str(&fixture_text).unwrap();
    live["policy"] = "capacity-blind".into();
    let write = |name: &str, live: &serde_json::Value| {
        let path = scratch(name);
        std::fs::write(&path, live.to_string()).unwrap();
        path.to_str().unwrap().to_owned()
    };
    let unseeded = write("cb.live.json", &live);
    live["policy_seed"] = 3.into();
    let seeded = write("cb-seed3.live.json", &live);

    let json = |path: &str, extra: &[&str]| -> serde_json::Value {
        let mut args = vec!["--json"];
        args.extend_from_slice(extra);
        let o = compare(path, &args);
        assert!(o.status.success(), "{}", text(&o.stderr));
        serde_json::from_str(&text(&o.stdout)).unwrap()
    };
    let from_live = json(&seeded, &[]);
    assert_eq!(
        from_live,
        json(&unseeded, &["--set", "policy_seed=3"]),
        "the live file's seed is the policy's"
    );
    assert_ne!(
        from_live,
        json(&unseeded, &[]),
        "without it the policy draws from the trace's seed, and scans from another CPU"
    );
    assert_ne!(
        from_live,
        json(&seeded, &["--set", "policy_seed=0"]),
        "--set policy_seed= wins over the live file"
    );
    let o = compare(&seeded, &[]);
    assert!(
        text(&o.stdout).contains("the policy's draws: seed 3, the live run's --seed"),
        "{}",
        text(&o.stdout)
    );
}
