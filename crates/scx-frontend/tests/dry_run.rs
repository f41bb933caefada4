//! `scx_hybridland --dry-run` on the committed fake sysfs trees and on this machine: the
//! detected topology, the knobs and the idle order it prints.

use std::path::Path;
use std::process::Command;

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
            "knobs: primary-domain=all (0-19) cluster-balance=auto auto-high-busy-pct=75 fit-margin-pct=80 slice-us=5000",
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
            "knobs: primary-domain=powersave (12-19) cluster-balance=off auto-high-busy-pct=75 fit-margin-pct=80 slice-us=5000",
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
    let file = std::env::temp_dir().join(format!("hl-left-out-{}.toml", std::process::id()));
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
    std::fs::remove_file(&file).unwrap();
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
    let file = std::env::temp_dir().join(format!("hl-emitted-{}.toml", std::process::id()));
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
    std::fs::remove_file(&file).unwrap();
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

/// Without `--dry-run` on a sysfs tree that has no `kernel/sched_ext` (a kernel without
/// sched_ext), it says so in one line and exits 1 before loading anything.
#[test]
fn without_sched_ext_one_line_and_exit_1() {
    let out = Command::new(env!("CARGO_BIN_EXE_scx_hybridland"))
        .args(["--sysfs-root", &fixture("i7-13800h")])
        .args(["--control-dir", "/nonexistent/hl-control"])
        .output()
        .expect("running scx_hybridland");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(
        lines[0].contains("no sched_ext")
            && lines[0].contains("CONFIG_SCHED_CLASS_EXT")
            && lines[0].contains("--dry-run"),
        "{stderr}"
    );
}

/// The systemd unit in `dist/` runs this binary with the flags of its `/etc/default` file, and
/// the flags its examples show are ones the binary takes.
#[test]
fn the_service_files_match_the_binary() {
    let dist = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../dist");
    let unit = std::fs::read_to_string(dist.join("scx_hybridland.service")).unwrap();
    let default = std::fs::read_to_string(dist.join("scx_hybridland.default")).unwrap();
    for want in [
        "ConditionPathIsDirectory=/sys/kernel/sched_ext",
        "Restart=on-failure",
        "EnvironmentFile=-/etc/default/scx_hybridland",
        "ExecStart=/usr/local/bin/scx_hybridland $SCX_HYBRIDLAND_FLAGS",
    ] {
        assert!(unit.lines().any(|l| l == want), "{want}");
    }
    assert!(
        default
            .lines()
            .any(|l| l.starts_with("SCX_HYBRIDLAND_FLAGS="))
    );
    let laptop = fixture("i7-13800h");
    for line in default.lines() {
        let Some(example) = line
            .strip_prefix("#   SCX_HYBRIDLAND_FLAGS=\"")
            .and_then(|l| l.split('"').next())
        else {
            continue;
        };
        if example.contains("--topology") {
            continue;
        }
        let mut args: Vec<&str> = example.split_whitespace().collect();
        args.extend(["--sysfs-root", &laptop]);
        dry_run(&args);
    }
}

/// The stats flags: `--help-stats` describes the figures and exits with nothing loaded and no
/// root; `--monitor` takes a positive interval and does not mix with scheduling flags.
#[test]
fn the_stats_flags_need_nothing_loaded() {
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_scx_hybridland"))
            .args(args)
            .output()
            .expect("running scx_hybridland")
    };
    let help = run(&["--help-stats"]);
    let text = String::from_utf8_lossy(&help.stdout);
    assert!(help.status.success(), "{text}");
    for want in [
        "[Metrics] scx_hybridland:",
        "placed",
        "no-idle went to the shared queue",
        "dispatch_retries",
        "busy_pct",
        "fw_user",
    ] {
        assert!(text.contains(want), "{want}: {text}");
    }
    let usage = String::from_utf8_lossy(&run(&["--help"]).stdout).into_owned();
    for flag in ["--stats <SECS>", "--monitor <SECS>", "--help-stats"] {
        assert!(usage.contains(flag), "{flag}: {usage}");
    }
    for bad in [
        &["--monitor", "0"][..],
        &["--monitor", "-1"],
        &["--monitor", "1", "--fifo"],
        &["--stats", "nan"],
    ] {
        let out = run(bad);
        assert_eq!(out.status.code(), Some(2), "{bad:?} was accepted");
    }
}

#[test]
fn another_policy_is_named_and_the_simulator_only_ones_are_refused() {
    // Each policy's own order, asked as the core asks it: count-cluster sends the first tasks
    // to the E clusters' four idle CPUs over a P-core's idle pair (seed 000).
    let out = dry_run(&[
        "--sysfs-root",
        &fixture("i7-13800h"),
        "--policy",
        "count-cluster",
    ]);
    assert_eq!(
        out.lines()
            .skip_while(|l| !l.starts_with("policy:"))
            .collect::<Vec<_>>(),
        [
            "policy: count-cluster",
            "slice-us=5000",
            "idle order (new tasks placed one by one on an idle machine):",
            "  idle-e-core               12 16 13 17",
            "  idle-p-core               0 2 4 6 8 10",
            "  idle-e-core               14 18",
            "  busy-sibling              1 3 5 7 9 11",
            "  idle-e-core               15 19",
        ]
    );
    // Spread draws from --seed: another seed, another order.
    let order = |seed: &str| {
        let out = dry_run(&[
            "--sysfs-root",
            &fixture("i7-13800h"),
            "--policy",
            "spread",
            "--seed",
            seed,
        ]);
        assert!(
            !out.contains("knobs:"),
            "hybridland's knobs for spread:\n{out}"
        );
        out.lines()
            .skip_while(|l| !l.starts_with("idle order"))
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    assert_eq!(order("1"), order("1"));
    assert_ne!(order("1"), order("2"));
    let out = dry_run(&["--sysfs-root", &fixture("i7-13800h")]);
    assert_lines(&out, &["policy: hybridland"]);
    for name in ["kernel-default", "summed-capacity", "no-such-policy"] {
        let out = Command::new(env!("CARGO_BIN_EXE_scx_hybridland"))
            .args([
                "--dry-run",
                "--sysfs-root",
                &fixture("i7-13800h"),
                "--policy",
                name,
            ])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{name}: {err}");
        let want = if name == "no-such-policy" {
            "unknown policy `no-such-policy` (known here: hybridland, capacity-blind, count-cluster, spread)"
        } else {
            "runs only in hybrid-sim"
        };
        assert!(err.contains(want), "{name}: {err}");
    }
    // --fifo is no policy at all: the two together are refused.
    let out = Command::new(env!("CARGO_BIN_EXE_scx_hybridland"))
        .args(["--dry-run", "--fifo", "--policy", "spread"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// Started under another name, as a binary built on the library is: its messages, its help
/// and its dry run say that name.
#[test]
fn the_program_goes_by_the_name_it_was_started_as() {
    use std::os::unix::process::CommandExt as _;
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_scx_hybridland"))
            .arg0("scx_renamed")
            .args(args)
            .output()
            .expect("running scx_hybridland as scx_renamed")
    };
    let laptop = fixture("i7-13800h");
    let out = run(&["--dry-run", "--sysfs-root", &laptop]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.starts_with("scx_renamed --dry-run: nothing is loaded\n"),
        "{text}"
    );
    let out = run(&["--sysfs-root", &laptop, "--control-dir", "/nonexistent/hl"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("scx_renamed needs Linux 6.12")
            && err.contains("`scx_renamed --dry-run` works anyway")
            && !err.contains("scx_hybridland"),
        "{err}"
    );
    let help = String::from_utf8_lossy(&run(&["--help"]).stdout).into_owned();
    assert!(
        help.starts_with("scx_renamed: a sched_ext scheduler for hybrid CPUs"),
        "{help}"
    );
    assert!(help.contains("Usage: scx_renamed [OPTIONS]"), "{help}");
    let version = String::from_utf8_lossy(&run(&["--version"]).stdout).into_owned();
    assert!(version.starts_with("scx_renamed "), "{version}");
    // A bad flag: clap's error names it too.
    let bad = run(&["--no-such-flag"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("Usage: scx_renamed [OPTIONS]"),
        "{}",
        String::from_utf8_lossy(&bad.stderr)
    );
}

/// `--help` lists every policy `--policy` takes, with what it does.
#[test]
fn the_help_lists_every_policy() {
    let out = Command::new(env!("CARGO_BIN_EXE_scx_hybridland"))
        .arg("--help")
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    for want in [
        "- hybridland: the hybridland policy:",
        "- capacity-blind: first idle CPU by number",
        "- count-cluster: spread over L2 clusters by idle-CPU count",
        "- spread: any idle CPU at random",
        "kernel-default and summed-capacity cannot run here",
    ] {
        assert!(help.contains(want), "{want}: {help}");
    }
}
