//! The command line beyond the dry run's report: no sched_ext, the service files' flags, the
//! stats flags, `--policy` and its help, and the name the program was started as.

use super::{assert_lines, dry_run, fixture};
use std::path::Path;
use std::process::Command;

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
    // A bad flag with no near name (for one, clap suggests that name with a usage line of its
    // own): clap's error names the program too.
    let bad = run(&["--frobnicate"]);
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
