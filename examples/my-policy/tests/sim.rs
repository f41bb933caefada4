//! `my-policy-sim` replays a bundled trace under the example policy beside hybridland: light
//! threads land on E-cores under little-first, on P-cores under hybridland.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// A replay's placements by step for `policy`, by the step's name (`idle-p-core`...).
fn steps(text: &str, policy: &str) -> BTreeMap<String, u64> {
    let prefix = format!("{policy} placements by step: ");
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("no steps for {policy} in:\n{text}"));
    line.split(", ")
        .map(|part| {
            let (name, count) = part.rsplit_once(' ').unwrap();
            (name.to_owned(), count.parse().unwrap())
        })
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
    assert!(
        little["idle-e-core"] > little["idle-p-core"],
        "little-first: {little:?}"
    );
    assert_eq!(hybrid["idle-e-core"], 0, "hybridland: {hybrid:?}");
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
    let replay = |set: &[&str]| -> BTreeMap<String, u64> {
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
    let p_and_e = |s: &BTreeMap<String, u64>| (s["idle-p-core"], s["idle-e-core"]);
    let default = replay(&[]);
    assert_eq!(p_and_e(&default), (12, 8), "{default:?}");
    let never = replay(&["--set", "after=1000"]);
    assert_eq!(p_and_e(&never), (0, 20), "{never:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}
