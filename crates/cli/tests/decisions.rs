//! `hybrid-sim decisions`: a decision log written as the live loop writes it (each call to the
//! core logged, then the dispatches and nudges it sent) replays identically; the same log with
//! one knob changed parts at a named line; a broken file is refused with its line.

mod common;
use common::{hybrid_sim, hybrid_sim_to_full, random_round, root, scratch};

use hybridland_policy::rng::Pcg32;
use hybridland_policy::{
    Affinity, ClusterBalance, CpuId, CpuSet, PolicyConfig, SchedCore, Slot, TaskId,
};
use hybridland_sim::machine_file::Machine;
use hybridland_trace::decisions::{CoreSettings, DecisionLog, Entry, FORMAT, Header, VERSION};

/// A loop's worth of calls on the VM's machine (4 E-cores, 2 P-cores with SMT) under
/// hybridland with cluster balance on, logged as `scx_hybridland --record` logs them.
fn live_like_log() -> DecisionLog {
    let machine_text =
        std::fs::read_to_string(root().join("scripts/vm/topology-2p-smt-4e.toml")).unwrap();
    let topo = *Machine::from_toml_str(&machine_text, "vm")
        .unwrap()
        .topology;
    let knobs = PolicyConfig {
        cluster_balance: ClusterBalance::On,
        ..PolicyConfig::default()
    };
    let config = hybridland_policy::CoreConfig::DEFAULT;
    let mut log = DecisionLog::new(Header {
        format: FORMAT.into(),
        version: VERSION,
        machine: machine_text,
        policy: "hybridland".into(),
        seed: 0,
        knobs,
        policy_knobs: Default::default(),
        core: CoreSettings::from(&config),
        max_tasks: 64,
        helper: Some(TaskId(999)),
        max_bytes: 1 << 20,
        truncated: false,
    });
    let storage = vec![Slot::EMPTY; Slot::count_for(64)];
    let mut core = SchedCore::new(topo.clone(), &knobs, config, storage).unwrap();
    core.set_helper(Some(TaskId(999)));
    let all = *topo.cpus();
    let pinned: CpuSet = [CpuId(0), CpuId(1)].into_iter().collect();
    let mut rng = Pcg32::new(21, 0);
    let mut now = 1_000_000u64;
    let mut last_cpu = [None::<CpuId>; 12];
    for _ in 0..400 {
        now += 1_000_000 + u64::from(rng.below(3_000_000));
        let affinity = |task: u32| match task % 6 {
            0 => Affinity::Cpus(&pinned),
            1 => Affinity::Unknown,
            _ => Affinity::Cpus(&all),
        };
        random_round(
            &mut core,
            &mut rng,
            now,
            &mut last_cpu,
            &all,
            affinity,
            &mut |e| log.push(e.clone()),
        );
    }
    log
}

/// The dispatches the log says the loop sent.
fn sent_count(log: &DecisionLog) -> usize {
    log.iter()
        .filter(|e| matches!(e, Entry::Sent { .. }))
        .count()
}

/// `log` written as `name` in `dir`.
fn write(log: &DecisionLog, dir: &std::path::Path, name: &str) -> std::path::PathBuf {
    let path = dir.join(name);
    log.write_to(std::fs::File::create(&path).unwrap()).unwrap();
    path
}

#[test]
fn a_logged_run_replays_identically_and_a_changed_knob_parts_from_it() {
    let log = live_like_log();
    let sent = sent_count(&log);
    assert!(sent > 500, "{sent}");
    let dir = scratch();
    let path = write(&log, dir.path(), "run.decisions.jsonl");
    let file = path.to_str().unwrap();

    let out = hybrid_sim(&["decisions", file]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains(&format!(
            "dispatches sent: {sent}, replayed identically: {sent}"
        )),
        "{text}"
    );
    assert!(text.contains("every dispatch and nudge agrees"), "{text}");

    // The same inputs with P-cores first: the core decides otherwise, and says where.
    let out = hybrid_sim(&["decisions", file, "--set", "primary_domain=powersave"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("first difference at line "), "{text}");
    assert!(
        text.contains("the loop sent:") && text.contains("the replayed core:"),
        "{text}"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("parts from the log at line"));

    // Either report lost to a full disk is an output failure (exit 3), as for every command.
    for extra in [&[][..], &["--set", "primary_domain=powersave"][..]] {
        let mut args = vec!["decisions", file];
        args.extend_from_slice(extra);
        let out = hybrid_sim_to_full(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{args:?} > /dev/full: {err}");
        assert!(err.contains("standard output: cannot write"), "{err}");
    }
}

/// `-vv` shows each dispatch the core decides again (what `--help` promises), `-vvv` the idle
/// CPUs behind it; a plain run logs none.
#[test]
fn verbose_runs_log_a_line_per_replayed_dispatch() {
    let log = live_like_log();
    let sent = sent_count(&log);
    let dir = scratch();
    let path = write(&log, dir.path(), "verbose.decisions.jsonl");
    let file = path.to_str().unwrap();
    let lines = |args: &[&str], what: &str| {
        let out = hybrid_sim(args);
        assert_eq!(out.status.code(), Some(0));
        String::from_utf8_lossy(&out.stderr)
            .lines()
            .filter(|l| l.contains(what))
            .count()
    };
    assert_eq!(lines(&["decisions", file], " ns task "), 0);
    assert_eq!(lines(&["decisions", "-vv", file], " ns task "), sent);
    assert_eq!(lines(&["decisions", "-vv", file], "idle cpus:"), 0);
    assert_eq!(lines(&["decisions", "-vvv", file], "idle cpus:"), sent);
}

#[test]
fn a_broken_log_is_refused_with_its_line() {
    let dir = scratch();
    let path = write(&live_like_log(), dir.path(), "broken.decisions.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines[3] = r#"{"in":"queued","now":"soon"}"#;
    std::fs::write(&path, lines.join("\n")).unwrap();
    let out = hybrid_sim(&["decisions", path.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("line 4:"), "{err}");

    // A trace is not a decision log.
    let out = hybrid_sim(&["decisions", "examples/traces/seed004-webgl.json"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("not a decision log"), "{err}");
}
