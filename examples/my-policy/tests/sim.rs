//! `my-policy-sim` replays a bundled trace under the example policy beside hybridland: light
//! threads land on E-cores under little-first, on P-cores under hybridland.

use std::path::Path;
use std::process::Command;

/// A replay's placements by step for `policy`: [idle-p-core, idle-e-core, busy-sibling,
/// no-idle].
fn steps(text: &str, policy: &str) -> Vec<u64> {
    let line = text
        .lines()
        .find(|l| l.starts_with(&format!("{policy} placements by step:")))
        .unwrap_or_else(|| panic!("no steps for {policy} in:\n{text}"));
    line.split(", ")
        .map(|part| part.rsplit(' ').next().unwrap().parse().unwrap())
        .collect()
}

#[test]
fn the_example_policy_replays_beside_hybridland() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = Command::new(env!("CARGO_BIN_EXE_my-policy-sim"))
        .args([
            "replay",
            "examples/traces/seed004-webgl.json",
            "--policy",
            "little-first,hybridland",
        ])
        .current_dir(&root)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (little, hybrid) = (steps(&text, "little-first"), steps(&text, "hybridland"));
    // [idle-p-core, idle-e-core, busy-sibling, no-idle]
    assert!(little[1] > little[0], "little-first: {little:?}");
    assert_eq!(hybrid[1], 0, "hybridland: {hybrid:?}");
    // The built-in command does not know it.
    let listed = Command::new(env!("CARGO_BIN_EXE_my-policy-sim"))
        .arg("policies")
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&listed.stdout).contains("little-first"));
}

/// The example's third policy keeps a count for each task in the task's own value: a sleeper
/// that wakes 20 times is placed on E-cores for its first 8 placements and on P-cores after;
/// with `--set after=1000` never on a P-core.
#[test]
fn graduate_counts_each_tasks_placements_in_its_value() {
    let dir = std::env::temp_dir().join(format!("my-policy-graduate-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let trace = dir.join("sleeper.json");
    std::fs::write(
        &trace,
        r#"{"version": 1, "machine": "i7-13800h", "tasks": [
            {"name": "sleeper", "phases": [{"loop": {"times": 20, "phases": [{"run_ns": 500000}, {"sleep_ns": 5000000}]}}]}
        ]}"#,
    )
    .unwrap();
    let replay = |set: &[&str]| -> Vec<u64> {
        let out = Command::new(env!("CARGO_BIN_EXE_my-policy-sim"))
            .arg("replay")
            .arg(&trace)
            .args(["--policy", "graduate"])
            .args(set)
            .env("NO_COLOR", "1")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        steps(&text, "graduate")
    };
    // [idle-p-core, idle-e-core, busy-sibling, no-idle]
    let default = replay(&[]);
    assert_eq!((default[0], default[1]), (12, 8), "{default:?}");
    let never = replay(&["--set", "after=1000"]);
    assert_eq!((never[0], never[1]), (0, 20), "{never:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}
