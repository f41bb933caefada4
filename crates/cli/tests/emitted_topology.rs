//! A machine `scx_hybridland --dry-run --emit-topology` wrote replays in the simulator as it
//! is. `examples/topologies/detected-i7-13800h.toml` is the file it writes for its i7-13800H
//! fake sysfs tree (scx_hybridland's `tests/dry_run/` fails if the two ever differ), with no
//! `[model]` table.

use std::path::PathBuf;

mod common;
use common::{hybrid_sim, root, text, write_and_replay_json};

const EMITTED: &str = "examples/topologies/detected-i7-13800h.toml";

#[test]
fn an_emitted_machine_replays_on_the_default_model() {
    let o = hybrid_sim(&[
        "replay",
        "examples/traces/seed000-10-threads.json",
        "--topology",
        EMITTED,
        "--policy",
        "hybridland",
        "--json",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let reports: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let r = &reports[0];
    assert_eq!(r["machine"], "detected-i7-13800h");
    // Seed 000's shape on the detected laptop: six threads on the six P-cores, two in each
    // E-cluster, over the trace's 2 s.
    let clusters = r["clusters"].as_array().unwrap();
    assert_eq!(clusters.len(), 8);
    for c in &clusters[..6] {
        assert_eq!(c["avg_running"], 1.0, "{c}");
    }
    for c in &clusters[6..] {
        assert_eq!(c["avg_running"], 2.0, "{c}");
    }
    // No [model] table: the default model's 2 W per busy P-core, 6 cores for 2 s.
    assert_eq!(r["kinds"][0]["kind"], "performance");
    assert_eq!(r["kinds"][0]["energy_j"], 24.0);
    let shown = hybrid_sim(&["topology", "show", EMITTED]);
    let out = text(&shown.stdout);
    assert!(shown.status.success(), "{}", text(&shown.stderr));
    assert!(
        out.contains("20 CPUs, 14 cores, 8 clusters, 1 LLC(s), 1 node(s)"),
        "{out}"
    );
}

/// A trace whose `machine` field names an emitted file beside it replays on that machine.
#[test]
fn a_trace_can_name_an_emitted_machine() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("emitted-topology");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(root().join(EMITTED), dir.join("laptop.toml")).unwrap();
    let trace = dir.join("lone.json");
    let reports = write_and_replay_json(
        &trace,
        r#"{"version": 1, "machine": "laptop.toml", "tasks": [{"name": "lone", "phases": [{"run_ns": 1000000000}]}]}"#,
    );
    assert_eq!(reports[0]["machine"], "laptop");
    // A lone task on a capacity-1024 P-core: its reference second.
    assert_eq!(reports[0]["summary"]["makespan_ns"], 1_000_000_000u64);
}
