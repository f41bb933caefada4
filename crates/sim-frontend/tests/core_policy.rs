//! The simulator plays the live framework's part for a policy driven by the scheduler core:
//! an uncontended slice end never reaches the core (the framework refills it silently), and a
//! task stuck on an E-core reaches an idle P-core through the core's scan and nudge, as live.

mod util;

use hybridland_sim::{
    DecisionRecord, Destination, Knobs, Reason, Report, SimOptions, Simulation, Trace,
    policy_by_name, presets,
};

/// Six short hogs fill the six P-cores of the i7-13800H; a long one arriving 10 ms later goes
/// to an E-core; the hogs end at 100 ms.
const STUCK_ON_E: &str = r#"{"version": 1, "name": "stuck-on-e", "machine": "i7-13800h", "tasks": [
  {"name": "p-hog", "copies": 6, "util": 1024, "phases": [{"run_ns": 100000000}]},
  {"name": "long", "start_ns": 10000000, "util": 1024, "phases": [{"run_ns": 1000000000}]}
]}"#;

/// `run` given `trace` (JSON) on the i7-13800H under `policy` with the `--set` items `knobs`.
fn simulate<R>(trace: &str, policy: &str, knobs: &[&str], run: impl FnOnce(Simulation) -> R) -> R {
    let trace = Trace::from_json_str(trace, "test").unwrap();
    let machine = presets::lookup("i7-13800h").unwrap();
    let policy = policy_by_name(policy, &Knobs::parse(knobs).unwrap()).unwrap();
    run(Simulation::new(
        &machine.topology,
        &machine.model,
        &trace,
        policy,
        SimOptions::default(),
    )
    .unwrap())
}

fn replay(policy: &str) -> (Report, u64, u64) {
    let (mut slice_ends, mut preempted) = (0, 0);
    let report = simulate(STUCK_ON_E, policy, &[], |sim| {
        sim.run_observed(&mut |r: &DecisionRecord<'_>| match r.reason {
            Reason::SliceEnd => slice_ends += 1,
            Reason::Preempted | Reason::Displaced => preempted += 1,
            Reason::Wakeup => {}
        })
        .unwrap()
    });
    (report, slice_ends, preempted)
}

#[test]
fn uncontended_slice_ends_never_reach_the_core() {
    let (_, slice_ends, preempted) = replay("hybridland");
    assert_eq!(slice_ends, 0, "refilled silently, as live");
    assert_eq!(preempted, 1, "the one nudged slice end");
    // So for a baseline the core runs; it never nudges, so nothing asks it at a slice end.
    let (_, slice_ends, preempted) = replay("spread");
    assert_eq!((slice_ends, preempted), (0, 0));
    // A policy the engine drives itself is asked at every slice end.
    let (_, slice_ends, _) = replay("kernel-default");
    assert!(slice_ends > 100, "{slice_ends}");
}

#[test]
fn a_task_on_an_e_core_reaches_an_idle_p_core_through_a_nudge() {
    let (report, _, _) = replay("hybridland");
    let long = report.tasks.iter().find(|t| t.name == "long").unwrap();
    assert_eq!(long.migrations, 1, "{long:?}");
    // On the E-core from 10 ms, once the idle E-core has woken (the model's wake-up cost,
    // 2 + 15 us), until the hogs end at 100 ms, then within one scan (20 ms) and one slice
    // (5 ms) on a P-core.
    let machine = presets::lookup("i7-13800h").unwrap();
    let wake = machine
        .model
        .wakeup_cost_ns(hybridland_policy::CoreKind::Efficiency, false);
    assert_eq!(wake, 17_000);
    let on_e = long.ran_efficiency_ns;
    assert!(
        (90_000_000 - wake..=90_000_000 + 25_000_000).contains(&on_e),
        "{on_e} ns on the E-core"
    );
    assert!(long.ran_performance_ns > 800_000_000, "{long:?}");
}

#[test]
fn without_the_scan_a_task_on_an_e_core_stays_there() {
    // `--set up_scan=off`, as `scx_hybridland --no-up-scan`: the long task's slice ends are
    // refilled silently and it never wakes, so nothing moves it off its E-core.
    let report = simulate(STUCK_ON_E, "hybridland", &["up_scan=off"], |sim| {
        sim.run().unwrap()
    });
    let long = report.tasks.iter().find(|t| t.name == "long").unwrap();
    assert_eq!(long.migrations, 0, "{long:?}");
    assert_eq!(long.ran_performance_ns, 0, "{long:?}");
}

/// Forty hogs on the 20 CPUs of the i7-13800H: twenty wait in the shared queue at any time.
const OVERLOADED: &str = r#"{"version": 1, "name": "overloaded", "machine": "i7-13800h", "tasks": [
  {"name": "hog", "copies": 40, "util": 1024, "phases": [{"run_ns": 50000000}]}
]}"#;

#[test]
fn the_slice_is_divided_by_tasks_awaiting_a_decision_not_by_the_shared_queue() {
    // Live, the core's backlog is the framework's count of tasks on their way to user space;
    // the kernel's shared queue is not in it. Here each wake-up is decided as it happens, so
    // every slice is whole however long the shared queue is. Divided by that queue, the slice
    // fell to a fraction of 5 ms and the replay of a live hackbench migrated 25 times as often.
    let mut slices = Vec::new();
    simulate(OVERLOADED, "hybridland", &[], |sim| {
        sim.run_observed(&mut |r: &DecisionRecord<'_>| slices.push(r.decision.slice_ns))
            .unwrap()
    });
    assert!(slices.len() >= 40, "{}", slices.len());
    let full = SimOptions::default().slice_ns;
    assert!(
        slices.iter().all(|s| *s == Some(full)),
        "every slice {full} ns: {slices:?}"
    );
}

/// A light periodic task alone on the i7-13800H: it wakes 100 times with its P-core idle.
const LIGHT_PERIODIC: &str = r#"{"version": 1, "name": "light-periodic", "machine": "i7-13800h", "tasks": [
  {"name": "light", "phases": [{"loop": {"times": 100, "phases": [{"run_ns": 500000}, {"sleep_ns": 9500000}]}}]}
]}"#;

/// Wake-ups the core decided (`--set fast_wake=...`) and the report.
fn replay_light(fast_wake: &str) -> (Report, u64) {
    let knob = format!("fast_wake={fast_wake}");
    let mut by_core = 0;
    let report = simulate(LIGHT_PERIODIC, "hybridland", &[&knob], |sim| {
        sim.run_observed(&mut |r: &DecisionRecord<'_>| {
            // A wake-up the fast path placed carries no vtime of the core's; the core's own
            // decisions do.
            if r.reason == Reason::Wakeup && r.decision.vtime.is_some() {
                by_core += 1;
            }
            if let Err(v) = util::check_record(r) {
                panic!("{v:?}");
            }
        })
        .unwrap()
    });
    (report, by_core)
}

#[test]
fn the_fast_path_keeps_wakeups_on_an_idle_core_as_the_core_would() {
    let (fast, by_core_fast) = replay_light("on");
    let (slow, by_core_slow) = replay_light("off");
    // Off, every wake-up reaches the core; on, only the first placement does (the task has
    // no previous CPU yet), and every kept one passed the shared checkers above.
    assert_eq!(by_core_slow, 100, "{slow:?}");
    assert_eq!(by_core_fast, 1);
    // The same placements either way: the fast path only keeps what the core would choose.
    let counts = |r: &Report| r.steps.iter().map(|s| s.count).collect::<Vec<_>>();
    assert_eq!(counts(&fast), counts(&slow));
    assert_eq!(fast.summary.migrations, slow.summary.migrations);
}

/// Twenty hogs on the i7-13800H's twenty CPUs for 300 ms, and a light task that wakes every
/// 2 ms from 20 ms on, when the hogs have run a slice and more.
const LIGHT_AMONG_HOGS: &str = r#"{"version": 1, "name": "light-among-hogs", "machine": "i7-13800h", "tasks": [
  {"name": "hog", "copies": 20, "util": 1024, "phases": [{"run_ns": 300000000}]},
  {"name": "light", "start_ns": 20000000, "phases": [{"loop": {"times": 50, "phases": [{"run_ns": 200000}, {"sleep_ns": 2000000}]}}]}
]}"#;

/// The report of `trace` under hybridland with the `--set` item `knob`, and the CPUs of the
/// decisions that preempted a busy one, in order.
fn replay_preempting(trace: &str, knob: &str) -> (Report, Vec<hybridland_policy::CpuId>) {
    let mut preempted = Vec::new();
    let report = simulate(trace, "hybridland", &[knob], |sim| {
        sim.run_observed(&mut |r: &DecisionRecord<'_>| {
            if let Destination::Preempt(cpu) = r.decision.target {
                preempted.push(cpu);
                assert_eq!(r.reason, Reason::Wakeup, "only a wake-up preempts");
            }
            if let Err(v) = util::check_record(r) {
                panic!("{v:?}");
            }
        })
        .unwrap()
    });
    (report, preempted)
}

/// The report and the wake-ups the core sent to preempt a busy CPU (`--set wake_preempt=...`).
fn replay_among_hogs(wake_preempt: &str) -> (Report, u64) {
    let (report, preempted) =
        replay_preempting(LIGHT_AMONG_HOGS, &format!("wake_preempt={wake_preempt}"));
    (report, preempted.len() as u64)
}

/// With every CPU busy, a woken task takes a CPU from a hog a slice ahead of it rather than
/// wait in the shared queue for some hog's slice to end.
#[test]
fn a_woken_task_preempts_a_hog_a_slice_ahead() {
    let (on, preempting) = replay_among_hogs("on");
    let (off, none) = replay_among_hogs("off");
    assert_eq!(none, 0);
    // Each hog's CPU is taken once: after that the core's estimate for the CPU is the light
    // task's (the last it sent there), not the hog's that came back from the shared queue.
    assert!(preempting >= 20, "{preempting} of 50 wake-ups preempted");
    let (l_on, l_off) = (&on.wake_latency, &off.wake_latency);
    assert!(
        l_on.mean_ns * 2 <= l_off.mean_ns,
        "mean {} ns with preemption, {} ns without",
        l_on.mean_ns,
        l_off.mean_ns
    );
}

/// The same hogs, and a light task pinned to CPU 3 (`allowed_cpus`) that wakes every 2 ms.
const PINNED_AMONG_HOGS: &str = r#"{"version": 1, "name": "pinned-among-hogs", "machine": "i7-13800h", "tasks": [
  {"name": "hog", "copies": 20, "util": 1024, "phases": [{"run_ns": 300000000}]},
  {"name": "pinned", "start_ns": 20000000, "allowed_cpus": "3", "phases": [{"loop": {"times": 50, "phases": [{"run_ns": 200000}, {"sleep_ns": 2000000}]}}]}
]}"#;

/// With preemption off (the default), a task allowed on one busy CPU takes it at every
/// wake-up by the pinned rule, in the fast path's model and through the core alike, instead of
/// waiting for the hog there to end its slice.
#[test]
fn a_pinned_task_takes_its_busy_cpu() {
    for fast_wake in ["on", "off"] {
        let (report, preempted) =
            replay_preempting(PINNED_AMONG_HOGS, &format!("fast_wake={fast_wake}"));
        assert!(
            preempted
                .iter()
                .all(|&cpu| cpu == hybridland_policy::CpuId(3))
        );
        let preempting = preempted.len();
        assert!(
            preempting >= 49,
            "fast_wake={fast_wake}: {preempting} of 50 wake-ups"
        );
        let l = &report.wake_latency;
        assert!(
            l.mean_ns < 1_000_000,
            "fast_wake={fast_wake}: mean {} ns",
            l.mean_ns
        );
    }
    // A spreading baseline through the core takes it too: the rule is the core's.
    let report = simulate(PINNED_AMONG_HOGS, "spread", &[], |sim| sim.run().unwrap());
    assert!(
        report.wake_latency.mean_ns < 1_000_000,
        "{}",
        report.wake_latency.mean_ns
    );
}
