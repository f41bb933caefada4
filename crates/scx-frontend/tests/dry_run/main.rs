//! `scx_hybridland --dry-run` on the committed fake sysfs trees and on this machine: the
//! detected topology, the knobs and the idle order it prints (here), a machine file read or
//! written instead of sysfs (`topology_files`), and the rest of the command line: the flags,
//! the policies, the service files and the program's name (`command_line`).

mod command_line;
mod topology_files;

use std::path::Path;
use std::process::Command;

/// A fresh empty directory `hl-test-*` of a test's own under Cargo's directory for
/// integration tests' files, removed when dropped (a failed assertion unwinding drops it too):
/// the test holds it for as long as its files are used.
fn scratch() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("hl-test-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap()
}

fn dry_run(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_scx_hybridland"))
        .arg("--dry-run")
        .args(args)
        .output()
        .expect("running scx_hybridland");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{args:?} failed: {}\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
        .display()
        .to_string()
}

fn assert_lines(text: &str, want: &[&str]) {
    for line in want {
        assert!(
            text.lines().any(|l| l.trim_end() == *line),
            "missing line `{line}` in:\n{text}"
        );
    }
}

#[test]
fn laptop_6p_8e() {
    let out = dry_run(&["--sysfs-root", &fixture("i7-13800h")]);
    assert_lines(
        &out,
        &[
            "  capacity from acpi_cppc/highest_perf",
            "  kinds from devices/cpu_core/cpus (0-11) and devices/cpu_atom/cpus (12-19)",
            "  clusters from topology/cluster_cpus_list",
            "cpus: 20 (0-19), cores: 14, clusters: 8, llcs: 1, nodes: 1, smt: yes, hybrid: yes",
            "performance: 0-11 (capacity 1024)",
            "efficiency: 12-19 (capacity 600)",
            "  0-1 2-3 4-5 6-7 8-9 10-11",
            "  6: 12-15 efficiency",
            "  7: 16-19 efficiency",
            "knobs: primary-domain=all (0-19) cluster-balance=auto auto-high-busy-pct=75 fit-margin-pct=80 wake-affine=on slice-us=5000",
            // Favoured P-cores (CPPC highest_perf 70) first, then the E clusters alternately,
            // SMT siblings last.
            "  idle-p-core               4 6 0 2 8 10",
            "  idle-e-core               12 16 13 17 14 18 15 19",
            "  busy-sibling              5 7 1 3 9 11",
        ],
    );
}

#[test]
fn laptop_knobs_change_the_order() {
    let out = dry_run(&[
        "--sysfs-root",
        &fixture("i7-13800h"),
        "-m",
        "powersave",
        "--cluster-balance",
        "off",
    ]);
    assert_lines(
        &out,
        &[
            "knobs: primary-domain=powersave (12-19) cluster-balance=off auto-high-busy-pct=75 fit-margin-pct=80 wake-affine=on slice-us=5000",
            "  idle-e-core               12 13 14 15 16 17 18 19",
            "  idle-p-core (overflow)    4 6 0 2 8 10",
            "  busy-sibling (overflow)   5 7 1 3 9 11",
        ],
    );
}

#[test]
fn atom_server_24() {
    let out = dry_run(&[
        "--sysfs-root",
        &fixture("atom-24"),
        "--cluster-balance",
        "on",
    ]);
    assert_lines(
        &out,
        &[
            "cpus: 24 (0-23), cores: 24, clusters: 6, llcs: 1, nodes: 1, smt: no, hybrid: no",
            "performance: 0-23 (capacity 1024)",
            "  0: 0-3 performance",
            "  5: 20-23 performance",
            "  idle-p-core               0 4 8 12 16 20 1 5 9 13 17 21 2 6 10 14 18 22 3 7 11 15 19 23",
        ],
    );
    let off = dry_run(&[
        "--sysfs-root",
        &fixture("atom-24"),
        "--cluster-balance",
        "off",
    ]);
    assert_lines(
        &off,
        &[
            "  idle-p-core               0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23",
        ],
    );
}

#[test]
fn big_little_board() {
    let out = dry_run(&["--sysfs-root", &fixture("big-little-2-3")]);
    assert_lines(
        &out,
        &[
            "  capacity from cpu_capacity",
            "cpus: 5 (0-4), cores: 5, clusters: 2, llcs: 1, nodes: 1, smt: no, hybrid: yes",
            "performance: 3-4 (capacity 1024)",
            "efficiency: 0-2 (capacity 446)",
            "  0: 0-2 efficiency",
            "  1: 3-4 performance",
            "  idle-p-core               3 4",
            "  idle-e-core               0 1 2",
        ],
    );
}

#[test]
fn symmetric_box() {
    let out = dry_run(&["--sysfs-root", &fixture("symmetric-4c8t")]);
    assert_lines(
        &out,
        &[
            "  no clusters larger than a core",
            "cpus: 8 (0-7), cores: 4, clusters: 4, llcs: 1, nodes: 1, smt: yes, hybrid: no",
            "performance: 0-7 (capacity 1024)",
            "  0,4 1,5 2,6 3,7",
            "  idle-p-core               0 1 2 3",
            "  busy-sibling              4 5 6 7",
        ],
    );
}

#[test]
fn this_machine() {
    // Whatever this machine is, detection works without root and prints every section.
    let out = dry_run(&[]);
    for head in ["source: sysfs at /sys", "cpus: ", "knobs: ", "idle order"] {
        assert!(out.contains(head), "missing `{head}` in:\n{out}");
    }
}

#[test]
fn bad_input_fails_with_a_message() {
    let out = Command::new(env!("CARGO_BIN_EXE_scx_hybridland"))
        .args([
            "--dry-run",
            "--sysfs-root",
            &fixture("big-little-2-3"),
            "-m",
            "0-9",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("primary domain"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
