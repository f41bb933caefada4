//! `hybrid-sim decisions`: a decision log written as the live loop writes it (each call to the
//! core logged, then the dispatches and nudges it sent) replays identically; the same log with
//! one knob changed parts at a named line; a broken file is refused with its line.

mod common;
use common::{hybrid_sim, hybrid_sim_to_full, root};

use hybridland_policy::rng::Pcg32;
use hybridland_policy::{
    Affinity, Arrival, ClusterBalance, CpuId, CpuSet, LastRun, PolicyConfig, Queued, SchedCore,
    Slot, Snapshot, UtilSource, Waiting, Waker,
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
        core: CoreSettings::from(&config),
        max_tasks: 64,
        helper: Some(999),
        max_bytes: 1 << 20,
        truncated: false,
    });
    let storage = vec![Slot::EMPTY; Slot::count_for(64)];
    let mut core = SchedCore::new(topo.clone(), &knobs, config, storage).unwrap();
    core.set_helper(Some(999));
    let all = *topo.cpus();
    let pinned: CpuSet = [CpuId(0), CpuId(1)].into_iter().collect();
    let mut rng = Pcg32::new(21, 0);
    let mut now = 1_000_000u64;
    let mut last_cpu = [None::<CpuId>; 12];
    for _ in 0..400 {
        now += 1_000_000 + u64::from(rng.below(3_000_000));
        let waiting = u64::from(rng.below(4));
        log.push(Entry::Backlog { waiting });
        core.handle_backlog(waiting);
        let batch = 1 + rng.below(3);
        for _ in 0..batch {
            let task = 100 + rng.below(12);
            let i = (task - 100) as usize;
            let slice_end = last_cpu[i].is_some() && rng.below(3) == 0;
            let q = Queued {
                task,
                arrival: if slice_end {
                    Arrival::SliceEnd {
                        waiting: if rng.below(2) == 0 {
                            Waiting::Nobody
                        } else {
                            Waiting::OwnQueue
                        },
                    }
                } else {
                    Arrival::Wakeup {
                        waker: (rng.below(2) == 0).then_some(Waker {
                            task: None,
                            cpu: CpuId(rng.below(8) as u16),
                        }),
                    }
                },
                cpu: last_cpu[i],
                last_run: last_cpu[i].map(|_| LastRun {
                    start_ns: now - 900_000,
                    stop_ns: now - 100_000 * u64::from(1 + rng.below(5)),
                }),
                weight: 100,
                affinity: match task % 6 {
                    0 => Affinity::Cpus(&pinned),
                    1 => Affinity::Unknown,
                    _ => Affinity::Cpus(&all),
                },
                util: UtilSource::Estimate,
            };
            log.push(Entry::queued(now, &q));
            core.handle_queued(now, &q).unwrap();
        }
        let idle: CpuSet = all.iter().filter(|_| rng.below(3) != 0).collect();
        let queued: CpuSet = all.iter().filter(|_| rng.below(8) == 0).collect();
        let snap = Snapshot {
            idle: &idle,
            queued: Some(&queued),
            caller_cpu: Some(CpuId(rng.below(8) as u16)),
        };
        log.push(Entry::snapshot(now, &snap));
        core.handle_snapshot(now, &snap);
        if core.wants_recheck() {
            let again: CpuSet = idle.iter().filter(|_| rng.below(4) != 0).collect();
            let snap = Snapshot {
                idle: &again,
                queued: Some(&queued),
                caller_cpu: None,
            };
            log.push(Entry::recheck(&snap));
            core.handle_recheck(&snap);
        }
        while let Some(d) = core.poll_dispatch() {
            log.push(Entry::sent(&d));
            if let (Some(c), Some(slot)) = (
                d.target.cpu(),
                last_cpu.get_mut(d.task.wrapping_sub(100) as usize),
            ) {
                *slot = Some(c);
            }
        }
        if core.poll_timeout().is_some_and(|at| now >= at) {
            log.push(Entry::Tick { now });
            core.handle_tick(now);
            if let Some(n) = core.poll_nudge() {
                log.push(Entry::Nudged {
                    cpu: n.cpu.0,
                    task: n.task,
                });
            }
        }
        if rng.below(40) == 0 {
            let task = 100 + rng.below(12);
            log.push(Entry::Exit { task });
            let _held = core.handle_exit(task);
            last_cpu[(task - 100) as usize] = None;
        }
    }
    log
}

/// The dispatches the log says the loop sent.
fn sent_count(log: &DecisionLog) -> usize {
    log.iter()
        .filter(|e| matches!(e, Entry::Sent { .. }))
        .count()
}

fn write(log: &DecisionLog, name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("hybridland-decisions-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    log.write_to(std::fs::File::create(&path).unwrap()).unwrap();
    path
}

#[test]
fn a_logged_run_replays_identically_and_a_changed_knob_parts_from_it() {
    let log = live_like_log();
    let sent = sent_count(&log);
    assert!(sent > 500, "{sent}");
    let path = write(&log, "run.decisions.jsonl");
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
    let path = write(&log, "verbose.decisions.jsonl");
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
    let path = write(&live_like_log(), "broken.decisions.jsonl");
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
