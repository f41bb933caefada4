//! Every bundled trace parses, names a machine that exists and replays under every policy;
//! the bundled topology files describe the same machines as the presets.

mod util;

use hybridland_sim::{PolicyKind, Report, load_topology_file, presets};
use std::path::PathBuf;
use util::{load_trace, replay, traces_dir};

fn example_traces() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(traces_dir())
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".json"))
        .collect();
    names.sort();
    names
}

#[test]
fn every_example_replays_under_every_policy() {
    let names = example_traces();
    assert!(names.len() >= 10, "{names:?}");
    for name in names {
        let trace = load_trace(&name);
        for kind in PolicyKind::ALL {
            let report = replay(&trace, kind.name(), &[], None);
            if trace.duration_ns.is_none() {
                assert_eq!(
                    report.summary.tasks_finished,
                    report.summary.tasks,
                    "{name} under {}",
                    kind.name()
                );
            }
            // Floats may differ in the last digit through a JSON round trip; the rest may not.
            let back: Report = serde_json::from_str(&report.to_json_pretty()).unwrap();
            assert!(
                back.summary.makespan_ns == report.summary.makespan_ns
                    && back.tasks.len() == report.tasks.len()
                    && back.wake_latency == report.wake_latency,
                "{name} under {}: report does not read back",
                kind.name()
            );
        }
    }
}

#[test]
fn topology_files_match_the_presets() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/topologies");
    for (file, preset) in [("i7-13800h.toml", "i7-13800h"), ("tc2.toml", "tc2")] {
        let from_file = load_topology_file(&dir.join(file)).unwrap_or_else(|e| panic!("{e}"));
        let builtin = presets::lookup(preset).unwrap();
        assert_eq!(from_file.topology, builtin.topology, "{file}");
        assert_eq!(from_file.model, builtin.model, "{file}");
    }
}
