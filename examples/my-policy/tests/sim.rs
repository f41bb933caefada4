//! `my-policy-sim` replays a bundled trace under the example policy beside hybridland: light
//! threads land on E-cores under little-first, on P-cores under hybridland.

use std::path::Path;
use std::process::Command;

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
    let steps = |policy: &str| -> Vec<u64> {
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("{policy} placements by step:")))
            .unwrap_or_else(|| panic!("no steps for {policy} in:\n{text}"));
        line.split(", ")
            .map(|part| part.rsplit(' ').next().unwrap().parse().unwrap())
            .collect()
    };
    let (little, hybrid) = (steps("little-first"), steps("hybridland"));
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
