//! Small replays whose results follow from the machine model by hand: SMT slowdown, L2
//! contention, sleeps and loops, frames, pools, energy, the horizon and the shared queue.

use hybridland_sim::{Knobs, Report, Trace, presets, replay};

fn run(machine: &str, trace: &str, policy: &str) -> Report {
    let machine = presets::lookup(machine).unwrap();
    let trace = Trace::from_json_str(trace, "inline.json").unwrap_or_else(|e| panic!("{e}"));
    replay(&machine, &trace, policy, &Knobs::new()).unwrap_or_else(|e| panic!("{e}"))
}

fn finish(r: &Report, task: &str) -> u64 {
    r.task(task).unwrap().finish_ns.unwrap()
}

#[test]
fn smt_siblings_slow_each_other_down() {
    let r = run(
        "symmetric",
        r#"{"version": 1, "tasks": [
            {"name": "a", "allowed_cpus": "0", "phases": [{"run_ns": 600000000}]},
            {"name": "b", "allowed_cpus": "1", "phases": [{"run_ns": 600000000}]}]}"#,
        "hybridland",
    );
    // 40% lost while the sibling runs: 0.6 s of work takes 1 s.
    assert_eq!(finish(&r, "a"), 1_000_000_000);
    assert_eq!(finish(&r, "b"), 1_000_000_000);
    let apart = run(
        "symmetric",
        r#"{"version": 1, "tasks": [
            {"name": "a", "allowed_cpus": "0", "phases": [{"run_ns": 600000000}]},
            {"name": "b", "allowed_cpus": "2", "phases": [{"run_ns": 600000000}]}]}"#,
        "hybridland",
    );
    assert_eq!(finish(&apart, "a"), 600_000_000);
}

#[test]
fn cache_sensitive_tasks_contend_only_inside_a_cluster() {
    let together = run(
        "atom24",
        r#"{"version": 1, "tasks": [
            {"name": "a", "allowed_cpus": "0", "cache_sensitivity_pct": 100, "phases": [{"run_ns": 1000000000}]},
            {"name": "b", "allowed_cpus": "1", "cache_sensitivity_pct": 100, "phases": [{"run_ns": 1000000000}]}]}"#,
        "hybridland",
    );
    // 9% slower, to the fixed-point precision.
    assert!(
        finish(&together, "a").abs_diff(1_090_000_000) < 10,
        "{}",
        finish(&together, "a")
    );
    let apart = run(
        "atom24",
        r#"{"version": 1, "tasks": [
            {"name": "a", "allowed_cpus": "0", "cache_sensitivity_pct": 100, "phases": [{"run_ns": 1000000000}]},
            {"name": "b", "allowed_cpus": "4", "cache_sensitivity_pct": 100, "phases": [{"run_ns": 1000000000}]}]}"#,
        "hybridland",
    );
    assert_eq!(finish(&apart, "a"), 1_000_000_000);
    let insensitive = run(
        "atom24",
        r#"{"version": 1, "tasks": [
            {"name": "a", "allowed_cpus": "0", "cache_sensitivity_pct": 100, "phases": [{"run_ns": 1000000000}]},
            {"name": "b", "allowed_cpus": "1", "phases": [{"run_ns": 1000000000}]}]}"#,
        "hybridland",
    );
    assert_eq!(finish(&insensitive, "a"), 1_000_000_000);
}

#[test]
fn loops_of_run_and_sleep() {
    let r = run(
        "tc2",
        r#"{"version": 1, "tasks": [{"name": "a", "start_ns": 5000000,
            "phases": [{"loop": {"times": 10, "phases": [{"run_ns": 1000000}, {"sleep_ns": 9000000}]}}]}]}"#,
        "hybridland",
    );
    let t = r.task("a").unwrap();
    // Every wake-up, the first at 5 ms included, finds the A15 idle since an earlier time:
    // it pays the interrupt (2 us) and the performance core's idle exit (10 us) first.
    let wake = 2_000 + 10_000;
    assert_eq!(t.finish_ns, Some(105_000_000 + 10 * wake));
    assert_eq!(t.turnaround_ns, Some(100_000_000 + 10 * wake));
    assert_eq!(t.wakeups, 10);
    assert_eq!(t.ran_performance_ns, 10_000_000);
    assert_eq!(r.wake_latency.count, 10);
    assert_eq!(r.wake_latency.max_ns, wake);
}

/// The wake-up cost of docs/machine-model.md ("Wake-up cost"): a task woken onto an idle CPU
/// waits `wakeup_irq_ns` + its kind's `idle_exit_ns`; onto a CPU whose SMT sibling is busy,
/// the interrupt alone; both constants can be set.
#[test]
fn a_wakeup_onto_an_idle_cpu_pays_the_interrupt_and_the_idle_exit() {
    let trace = |cpus: &str| {
        format!(
            r#"{{"version": 1, "tasks": [
            {{"name": "a", "allowed_cpus": "{cpus}", "start_ns": 1000000,
              "phases": [{{"loop": {{"times": 4, "phases": [{{"run_ns": 1000000}}, {{"sleep_ns": 4000000}}]}}}}]}},
            {{"name": "spin", "allowed_cpus": "1", "phases": [{{"run_ns": 50000000}}]}}]}}"#
        )
    };
    // i7-13800H: CPU 2 is a P-core thread whose sibling (3) stays idle, CPU 0's sibling
    // (1) runs `spin` throughout; CPU 12 is an E-core.
    let p = run("i7-13800h", &trace("2"), "hybridland");
    // Four wake-ups of `a` and the arrival of `spin` at 0 (no cost: every CPU is awake then).
    assert_eq!(p.wake_latency.count, 5);
    assert_eq!(p.wake_latency.p50_ns, 2_000 + 10_000);
    assert_eq!(p.wake_latency.max_ns, 2_000 + 10_000);
    let awake = run("i7-13800h", &trace("0"), "hybridland");
    assert_eq!(
        awake.wake_latency.max_ns, 2_000,
        "the core is awake: the interrupt only"
    );
    let e = run("i7-13800h", &trace("12"), "hybridland");
    assert_eq!(e.wake_latency.max_ns, 2_000 + 15_000);
    let machine = presets::lookup("i7-13800h").unwrap();
    let mut knobs = Knobs::new();
    knobs.set("wakeup_irq_ns", "0").unwrap();
    knobs.set("idle_exit_ns.performance", "0").unwrap();
    let t = Trace::from_json_str(&trace("2"), "t.json").unwrap();
    let free = replay(&machine, &t, "hybridland", &knobs).unwrap();
    assert_eq!(free.wake_latency.max_ns, 0);
}

#[test]
fn frames_count_rate_and_missed_deadlines() {
    let fast = run(
        "tc2",
        r#"{"version": 1, "tasks": [{"name": "r", "allowed_cpus": "0",
            "frames": {"period_ns": 10000000, "work_ns": 4000000, "count": 300}}]}"#,
        "hybridland",
    );
    let f = fast.fps.unwrap();
    assert_eq!((f.frames, f.missed_deadlines, f.windows), (300, 0, 2));
    assert_eq!((f.fps_mean, f.fps_stdev), (100.0, 0.0));
    // Frames after the first wake the idle A15: 12 us of wake-up cost each.
    assert_eq!(f.mean_frame_ns, 4_000_000 + 299 * 12_000 / 300);

    // On an A7 a 6 ms frame takes 6 × 1024 / 494 = 12.4 ms: every frame late, about 80 fps.
    let slow = run(
        "tc2",
        r#"{"version": 1, "tasks": [{"name": "r", "allowed_cpus": "2",
            "frames": {"period_ns": 10000000, "work_ns": 6000000, "count": 250}}]}"#,
        "hybridland",
    );
    let f = slow.fps.unwrap();
    assert_eq!(f.missed_deadlines, 250);
    assert!((f.fps_mean - 80.4).abs() < 0.6, "{}", f.fps_mean);
}

#[test]
fn a_pool_is_shared_between_its_workers() {
    let r = run(
        "symmetric",
        r#"{"version": 1, "pools": [{"name": "p", "chunks": 10, "chunk_ns": 1000000}],
            "tasks": [
              {"name": "a", "allowed_cpus": "0", "phases": [{"pool": "p"}]},
              {"name": "b", "allowed_cpus": "2", "phases": [{"pool": "p"}, {"run_ns": 1000000}]}]}"#,
        "hybridland",
    );
    assert_eq!(finish(&r, "a"), 5_000_000);
    assert_eq!(finish(&r, "b"), 6_000_000);
}

#[test]
fn energy_integrates_core_and_package_power() {
    // A lone 2.09 s task on an A15: package 0.3 W + busy A15 1.5 W + idle A15 0.03 W + three
    // idle A7s at 0.01 W, for 2.09 s.
    let r = run(
        "tc2",
        r#"{"version": 1, "tasks": [{"name": "a", "phases": [{"run_ns": 2090000000}]}]}"#,
        "hybridland",
    );
    let expected = (0.3 + 1.5 + 0.03 + 3.0 * 0.01) * 2.09;
    assert!(
        (r.summary.energy_j - expected).abs() < 1e-9,
        "{}",
        r.summary.energy_j
    );
    assert!((r.summary.avg_power_w - 1.86).abs() < 1e-9);
    let p = &r.kinds[0];
    assert_eq!((p.kind.as_str(), p.busy_ns), ("performance", 2_090_000_000));
}

#[test]
fn the_horizon_cuts_the_replay() {
    let r = run(
        "tc2",
        r#"{"version": 1, "duration_ns": 1000000000, "tasks": [
            {"name": "short", "phases": [{"run_ns": 500000000}]},
            {"name": "long", "phases": [{"run_ns": 5000000000}]}]}"#,
        "hybridland",
    );
    assert_eq!(r.summary.makespan_ns, 1_000_000_000);
    assert_eq!(r.summary.tasks_finished, 1);
    assert_eq!(r.task("long").unwrap().finish_ns, None);
    assert_eq!(r.task("long").unwrap().ran_performance_ns, 1_000_000_000);
}

#[test]
fn with_nothing_idle_tasks_wait_in_the_shared_queue_and_take_turns() {
    // Six tasks on five CPUs: the sixth waits for the first slice end (5 ms).
    let r = run(
        "tc2",
        r#"{"version": 1, "tasks": [{"name": "w", "copies": 6, "util": 1024,
            "phases": [{"run_ns": 100000000}]}]}"#,
        "hybridland",
    );
    assert_eq!(r.wake_latency.count, 6);
    assert_eq!(r.wake_latency.max_ns, 5_000_000);
    let queued = r.steps.iter().find(|s| s.step == "no-idle").unwrap().count;
    assert_eq!(queued, 1, "only the sixth found nothing idle");
    assert_eq!(r.summary.tasks_finished, 6);
}

#[test]
fn runaway_traces_stop_with_an_error() {
    use hybridland_sim::{SimError, SimOptions, Simulation, TraceError, policy_by_name};
    let machine = presets::lookup("tc2").unwrap();
    let sleepy = Trace::from_json_str(
        r#"{"version": 1, "tasks": [{"name": "s", "phases": [{"loop": {"times": 1000000,
            "phases": [{"run_ns": 1}, {"sleep_ns": 100000000000000}]}}]}]}"#,
        "sleepy.json",
    )
    .unwrap();
    let policy = policy_by_name("hybridland", &Knobs::new()).unwrap();
    // Seen before it runs: its sleeps alone pass the simulated-time limit.
    let refused = Simulation::new(
        &machine.topology,
        &machine.model,
        &sleepy,
        policy,
        SimOptions::default(),
    );
    assert!(matches!(
        refused,
        Err(SimError::Trace(TraceError::ExceedsReplayLimit {
            index: 0,
            ..
        }))
    ));
    // Pool chunks may go to any task, so only the replay finds this one out (here past a
    // simulated-time limit of 1 s).
    let pooled = Trace::from_json_str(
        r#"{"version": 1, "pools": [{"name": "p", "chunks": 100, "chunk_ns": 100000000}],
            "tasks": [{"name": "s", "allowed_cpus": "0", "phases": [{"pool": "p"}]}]}"#,
        "pooled.json",
    )
    .unwrap();
    let policy = policy_by_name("hybridland", &Knobs::new()).unwrap();
    let sim = Simulation::new(
        &machine.topology,
        &machine.model,
        &pooled,
        policy,
        SimOptions {
            max_time_ns: 1_000_000_000,
            ..SimOptions::default()
        },
    )
    .unwrap();
    let err = sim.run().unwrap_err();
    assert!(
        matches!(&err, SimError::TooManyEvents { now_ns, max_time_ns, task, .. }
            if now_ns > max_time_ns && task == "s"),
        "{err}"
    );

    let busy = Trace::from_json_str(
        r#"{"version": 1, "tasks": [{"name": "b", "copies": 50, "phases": [{"run_ns": 1000000000}]}]}"#,
        "busy.json",
    )
    .unwrap();
    let policy = policy_by_name("spread", &Knobs::new()).unwrap();
    let options = SimOptions {
        max_events: 1_000,
        ..SimOptions::default()
    };
    let sim = Simulation::new(&machine.topology, &machine.model, &busy, policy, options).unwrap();
    assert!(matches!(
        sim.run(),
        Err(SimError::TooManyEvents { events: 1_001, .. })
    ));
}

#[test]
fn weights_share_a_contended_cpu() {
    let r = run(
        "tc2",
        r#"{"version": 1, "tasks": [
            {"name": "heavy", "weight": 300, "allowed_cpus": "0", "phases": [{"run_ns": 100000000}]},
            {"name": "light", "allowed_cpus": "0", "phases": [{"run_ns": 100000000}]}]}"#,
        "hybridland",
    );
    // Three slices to one: the heavy task is done after about 133 ms, the light one at 200 ms.
    let heavy = finish(&r, "heavy");
    assert!((125_000_000..=145_000_000).contains(&heavy), "{heavy}");
    assert_eq!(finish(&r, "light"), 200_000_000);
}
