//! `scx_my_policy` (the `live` feature) takes `--policy little-first` (a dry run here;
//! scripts/vm-check.sh loads it into a sched_ext kernel and checks where it places).

use std::path::Path;
use std::process::Command;

#[test]
fn the_live_scheduler_takes_the_example_policy() {
    let sysfs = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../crates/scx-frontend/tests/fixtures/i7-13800h");
    let run = |policy: &str| {
        Command::new(env!("CARGO_BIN_EXE_scx_my_policy"))
            .arg("--dry-run")
            .arg("--sysfs-root")
            .arg(&sysfs)
            .args(["--policy", policy])
            .output()
            .unwrap()
    };
    let out = run("little-first");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.lines().any(|l| l == "policy: little-first"), "{text}");
    // Under its own name, with its own fill order: the E-cores first, smallest id first, then
    // each P-core's first thread and its sibling.
    assert!(
        text.starts_with("scx_my_policy --dry-run: nothing is loaded\n"),
        "{text}"
    );
    for line in [
        "  idle-e-core               12 13 14 15 16 17 18 19",
        "  idle-p-core               0",
        "  busy-sibling              1",
    ] {
        assert!(text.lines().any(|l| l == line), "{line}: {text}");
    }
    // Its --help lists it with its description.
    let help = Command::new(env!("CARGO_BIN_EXE_scx_my_policy"))
        .arg("--help")
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&help.stdout)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        help.starts_with(
            "scx_my_policy: a sched_ext scheduler built on the scx_hybridland library"
        ) && help.contains(&format!(
            "- little-first: {}",
            my_policy::POLICY.description
        )),
        "{help}"
    );
    // Unknown names list it among those known.
    let out = run("little-last");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("hybridland, capacity-blind, count-cluster, spread, little-first"),
        "{err}"
    );
}
