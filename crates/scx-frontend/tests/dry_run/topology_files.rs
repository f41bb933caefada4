//! Machine files instead of sysfs: `--topology` overrides the detected machine (and warns
//! about CPUs its clusters leave out), and `--emit-topology` writes the one the simulator
//! replays.

use super::{assert_lines, dry_run, scratch};
use std::path::Path;
use std::process::Command;

#[test]
fn topology_file_overrides_sysfs() {
    let file =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/vm/topology-2p-smt-4e.toml");
    let out = dry_run(&[
        "--topology",
        &file.display().to_string(),
        "--cluster-balance",
        "on",
    ]);
    assert_lines(
        &out,
        &[
            "cpus: 8 (0-7), cores: 6, clusters: 4, llcs: 1, nodes: 1, smt: yes, hybrid: yes",
            "performance: 4-7 (capacity 1024)",
            "efficiency: 0-3 (capacity 640)",
            "  idle-p-core               4 6",
            // Clusters {0,2} and {1,3}: balance alternates between them.
            "  idle-e-core               0 1 2 3",
            "  busy-sibling              5 7",
        ],
    );
}

/// A machine file that leaves CPUs out of its cluster lists is used as the format says, with a
/// warning on standard error and in the report that names them and what was assumed.
#[test]
fn a_topology_file_that_leaves_cpus_out_warns() {
    let dir = scratch();
    let file = dir.path().join("left-out.toml");
    std::fs::write(
        &file,
        "clusters = [\"0-3\"]\n[[cpus]]\nlist = \"0-7\"\nkind = \"efficiency\"\ncapacity = 600\n",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_scx_hybridland"))
        .args(["--dry-run", "--topology", file.to_str().unwrap()])
        .env("RUST_LOG", "warn")
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stderr}");
    let warning = "`clusters` leaves out CPUs 4-7, efficiency CPUs of capacity 600 as in \
                   clusters[0] (0-3), so each of their cores was taken as an L2 cluster of its \
                   own (4 clusters: 4, 5, 6, 7); list them in `clusters`, each with the CPUs it \
                   shares an L2 with (alone in its list to keep it apart)";
    assert!(
        stderr.contains(&format!("{}: {warning}", file.display())),
        "{stderr}"
    );
    assert_lines(
        &stdout,
        &[
            &format!("  warning: {warning}"),
            "cpus: 8 (0-7), cores: 8, clusters: 5, llcs: 1, nodes: 1, smt: no, hybrid: no",
        ],
    );
}

/// `--emit-topology -` writes the detected machine alone on standard output, as the committed
/// example the simulator's tests replay; a file gets the same text and the usual report.
#[test]
fn emit_topology_writes_what_the_simulator_replays() {
    // Relative to this crate, as the example was written.
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_scx_hybridland"))
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .args(args)
            .output()
            .expect("running scx_hybridland")
    };
    let laptop = ["--sysfs-root", "tests/fixtures/i7-13800h"];
    let out = run(&[&["--dry-run", "--emit-topology", "-"][..], &laptop].concat());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let emitted = String::from_utf8(out.stdout).unwrap();
    let example = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/topologies/detected-i7-13800h.toml");
    assert_eq!(
        emitted,
        std::fs::read_to_string(&example).unwrap(),
        "regenerate {} with `scx_hybridland --dry-run --emit-topology - --sysfs-root \
         tests/fixtures/i7-13800h` run in crates/scx-frontend",
        example.display()
    );
    let dir = scratch();
    let file = dir.path().join("emitted.toml");
    let out = run(&[
        &["--dry-run", "--emit-topology", file.to_str().unwrap()][..],
        &laptop,
    ]
    .concat());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("idle order"));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), emitted);
    // Read back as the live scheduler's own --topology: the same report.
    let again = run(&[
        "--dry-run",
        "--topology",
        "../../examples/topologies/detected-i7-13800h.toml",
    ]);
    let from_sysfs = run(&[&["--dry-run"][..], &laptop].concat());
    let body = |o: &std::process::Output| {
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .skip_while(|l| !l.starts_with("cpus:"))
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    assert_eq!(body(&again), body(&from_sysfs));
    // Only with --dry-run: it describes, it does not schedule.
    let refused = run(&[&["--emit-topology", "-"][..], &laptop].concat());
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("--dry-run"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
}
