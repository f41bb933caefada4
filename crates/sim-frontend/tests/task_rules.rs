//! The policy crate's per-task rules as the simulator drives them: the stuck lone task goes
//! back to a P-core at its next slice end, and the utilisation the policy sees converges on
//! what the task really runs, scaled by the capacity it runs on.

mod util;

use hybridland_policy::testkit::check_util_near;
use hybridland_policy::{CoreKind, UtilEstimate};
use hybridland_sim::{
    DecisionRecord, Destination, Knobs, MachineModel, Report, SimOptions, Simulation, Trace,
    policy_by_name, presets,
};
use proptest::prelude::*;

/// Replays `trace` on preset `machine` under hybridland with every decision checked; returns
/// the report and, for task `watch`, each (time, CPU it was sent to run on).
fn replay_watching(machine: &str, trace: &str, watch: usize) -> (Report, Vec<(u64, u16)>) {
    let machine = presets::lookup(machine).unwrap();
    let trace = Trace::from_json_str(trace, "inline.json").unwrap_or_else(|e| panic!("{e}"));
    let policy = policy_by_name("hybridland", &Knobs::new()).unwrap();
    let model: MachineModel = machine.model.clone();
    let sim = Simulation::new(
        &machine.topology,
        &model,
        &trace,
        policy,
        SimOptions::default(),
    )
    .unwrap();
    let mut runs = Vec::new();
    let mut observer = |r: &DecisionRecord<'_>| {
        if let Err(v) = util::check_record(r) {
            panic!("task {} at {} ns: {v}", r.task, r.now_ns);
        }
        if let (true, Destination::Run(cpu)) = (r.task == watch, r.decision.target) {
            runs.push((r.now_ns, cpu.0));
        }
    };
    let report = sim.run_observed(&mut observer).unwrap();
    (report, runs)
}

/// A lone CPU-bound thread starts while six hogs hold every P-core of the i7-13800H, so it
/// lands on an E-core; when the hogs end it must be on a P-core within one slice.
#[test]
fn a_lone_task_stuck_on_an_e_core_is_back_on_a_p_core_within_a_slice() {
    let hog = r#"{"name": "hog", "copies": 6, "phases": [{"run_ns": 100000000}]}"#;
    let lone = r#"{"name": "lone", "start_ns": 1000000, "phases": [{"run_ns": 400000000}]}"#;
    let trace = format!(r#"{{"version": 1, "tasks": [{hog}, {lone}]}}"#);
    let (report, runs) = replay_watching("i7-13800h", &trace, 6);
    let machine = presets::lookup("i7-13800h").unwrap();
    let is_p = |cpu: u16| {
        machine
            .topology
            .kind_mask(CoreKind::Performance)
            .contains(hybridland_policy::CpuId(cpu))
    };
    assert!(
        !is_p(runs[0].1),
        "started on cpu {} although every P-core was busy",
        runs[0].1
    );
    let hogs_done = (0..6)
        .map(|i| report.task(&format!("hog.{i}")).unwrap().finish_ns.unwrap())
        .max()
        .unwrap();
    let (back_at, cpu) = runs
        .iter()
        .copied()
        .find(|(_, cpu)| is_p(*cpu))
        .expect("never moved to a P-core");
    let slice = SimOptions::default().slice_ns;
    assert!(
        back_at >= hogs_done && back_at <= hogs_done + slice,
        "on P-core cpu {cpu} at {back_at} ns; the P-cores idled at {hogs_done} ns"
    );
    // And it stays there: no run after that is on an E-core.
    assert!(
        runs.iter()
            .filter(|(t, _)| *t > back_at)
            .all(|(_, c)| is_p(*c)),
        "{runs:?}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    /// A periodic task, pinned to a P-core or an E-core, ends its replay with an estimate
    /// within 5% of the share of time it really ran there times that CPU's capacity.
    #[test]
    fn the_estimate_follows_what_the_task_ran(period_us in 50u64..=UtilEstimate::HALF_LIFE_NS / 8_000,
                                              duty_pct in 25u64..=100, on_e in any::<bool>()) {
        let machine = presets::lookup("i7-13800h").unwrap();
        let cpu = if on_e { 12 } else { 0 };
        let capacity = machine.topology.info(hybridland_policy::CpuId(cpu)).unwrap().capacity;
        // The real period (within an eighth of the half-life, generated without rejections)
        // splits into a run, which takes 1024 / capacity times its work on an E-core, and a
        // sleep; the replay lasts past the settling time.
        let wall_run = period_us * 1_000 * duty_pct / 100;
        let sleep_ns = period_us * 1_000 - wall_run;
        let run_ns = (wall_run * u64::from(capacity) / 1024).max(1);
        let span = (UtilEstimate::SETTLE_HALF_LIVES + 1) * UtilEstimate::HALF_LIFE_NS;
        let times = span / (wall_run + sleep_ns) + 1;
        let trace = format!(
            r#"{{"version": 1, "tasks": [{{"name": "p", "allowed_cpus": "{cpu}",
                 "phases": [{{"loop": {{"times": {times}, "phases": [{{"run_ns": {run_ns}}}, {{"sleep_ns": {sleep_ns}}}]}}}}]}}]}}"#
        );
        let (report, _) = replay_watching("i7-13800h", &trace, 0);
        let t = report.task("p").unwrap();
        let ran = t.ran_performance_ns + t.ran_efficiency_ns;
        // The last run ends the replay: the estimate is taken at the end of a run.
        let real_run = ran / times;
        // Off the CPU between runs: the sleep and, after one, the wake-up cost of the idle CPU.
        let kind = machine.topology.info(hybridland_policy::CpuId(cpu)).unwrap().kind;
        let off_cpu = if sleep_ns > 0 {
            sleep_ns + machine.model.wakeup_cost_ns(kind, false)
        } else {
            0
        };
        check_util_near(t.util, real_run, off_cpu, capacity)
            .map_err(|v| TestCaseError::fail(v.to_string()))?;
    }
}

/// Musical chairs: four staggered periodic tasks (2.5 ms run, 1.5 ms sleep, 40
/// rounds) on the idle i7-13800H, whose 6 P-cores are enough for one each. Without the home
/// rule the lowest idle P-core won, which was another sleeping task's core: 156 migrations, 39
/// of each task's 40 wake-ups. With it every task keeps a core of its own.
#[test]
fn periodic_tasks_keep_cores_of_their_own() {
    let task = |name: &str, start_ms: u64| {
        format!(
            r#"{{"name": "{name}", "start_ns": {}, "phases": [{{"loop": {{"times": 40, "phases": [{{"run_ns": 2500000}}, {{"sleep_ns": 1500000}}]}}}}]}}"#,
            start_ms * 1_000_000
        )
    };
    let tasks: Vec<String> = ["a", "b", "c", "d"]
        .iter()
        .zip(0..)
        .map(|(n, i)| task(n, i))
        .collect();
    let trace = format!(r#"{{"version": 1, "tasks": [{}]}}"#, tasks.join(", "));
    let (report, runs) = replay_watching("i7-13800h", &trace, 3);
    for name in ["a", "b", "c", "d"] {
        let t = report.task(name).unwrap();
        assert_eq!(t.migrations, 0, "task {name} moved {} times", t.migrations);
    }
    // The last task to start did not take a sleeping task's core: a fifth P-core.
    let cores: std::collections::BTreeSet<u16> = runs.iter().map(|(_, cpu)| cpu / 2).collect();
    assert_eq!(cores.len(), 1, "{runs:?}");
    assert!(cores.iter().all(|c| *c == 3), "{runs:?}");
}
