//! A task whose first wake-ups are light while hogs hold every P-core, and that then runs
//! CPU-bound, reaches a P-core soon after one frees, whoever placed its light wake-ups: the
//! fast path (hybridland's default, as live) or the core. Seeds 000 and 003's failure is a busy
//! task left on a slow core; the fast path's placements reach the core (`Input::Placed`) so its
//! up-migration scan sees the task as it sees one it sent.

use hybridland_policy::{CoreKind, CpuId, Topology};
use hybridland_sim::{
    DecisionRecord, Destination, Knobs, Report, SimOptions, Simulation, Trace, policy_by_name,
    presets,
};

/// When the hogs end.
const HOGS_END_NS: u64 = 100_000_000;
/// The CPU-bound phase.
const BUSY_NS: u64 = 1_000_000_000;

/// One hog per P-core of `machine` until [`HOGS_END_NS`]; from 10 ms, a task that runs 100 us
/// and sleeps 2 ms twenty times, then runs [`BUSY_NS`].
fn trace(machine: &str, p_cores: usize) -> String {
    format!(
        r#"{{"version": 1, "name": "turns-busy", "machine": "{machine}", "tasks": [
  {{"name": "hog", "copies": {p_cores}, "util": 1024, "phases": [{{"run_ns": {HOGS_END_NS}}}]}},
  {{"name": "turns", "start_ns": 10000000, "phases": [
    {{"loop": {{"times": 20, "phases": [{{"run_ns": 100000}}, {{"sleep_ns": 2000000}}]}}}},
    {{"run_ns": {BUSY_NS}}}
  ]}}
]}}"#
    )
}

fn is_p(topo: &Topology, cpu: CpuId) -> bool {
    topo.info(cpu)
        .is_some_and(|i| i.kind == CoreKind::Performance)
}

/// The replay of the trace on `machine` with `fast_wake`, the first time after the hogs end
/// that the task was put on a P-core, and how many of its light wake-ups the fast path
/// placed (no vtime of the core's).
fn replay(machine: &str, fast_wake: &str) -> (Report, Option<u64>, u32) {
    let preset = presets::lookup(machine).unwrap();
    let topo = &preset.topology;
    let mut cores: Vec<u16> = topo
        .cpus()
        .iter()
        .filter(|&c| is_p(topo, c))
        .map(|c| topo.info(c).unwrap().core)
        .collect();
    cores.dedup();
    let trace = Trace::from_json_str(&trace(machine, cores.len()), "test").unwrap();
    let knob = format!("fast_wake={fast_wake}");
    let policy = policy_by_name("hybridland", &Knobs::parse(&[knob.as_str()]).unwrap()).unwrap();
    let sim = Simulation::new(topo, &preset.model, &trace, policy, SimOptions::default()).unwrap();
    let (mut on_p_at, mut by_fast) = (None, 0);
    let report = sim
        .run_observed(&mut |r: &DecisionRecord<'_>| {
            if r.task_name != "turns" {
                return;
            }
            if r.decision.vtime.is_none() && r.now_ns < HOGS_END_NS {
                by_fast += 1;
            }
            let cpu = match r.decision.target {
                Destination::Run(cpu) | Destination::Preempt(cpu) | Destination::QueueOn(cpu) => {
                    cpu
                }
                Destination::QueueShared => return,
            };
            if r.now_ns >= HOGS_END_NS && is_p(r.topo, cpu) {
                on_p_at.get_or_insert(r.now_ns);
            }
        })
        .unwrap();
    (report, on_p_at, by_fast)
}

fn check(machine: &str) {
    for fast_wake in ["on", "off"] {
        let (report, on_p_at, by_fast) = replay(machine, fast_wake);
        let task = report.tasks.iter().find(|t| t.name == "turns").unwrap();
        let on_p_at = on_p_at.unwrap_or_else(|| {
            panic!("{machine} fast_wake={fast_wake}: never on a P-core: {task:?}")
        });
        println!(
            "{machine} fast_wake={fast_wake}: {by_fast} light wake-ups placed by the fast path; on a P-core {:.1} ms after the hogs end; {:.0} ms of {:.0} ms on P-cores",
            (on_p_at - HOGS_END_NS) as f64 / 1e6,
            task.ran_performance_ns as f64 / 1e6,
            (task.ran_performance_ns + task.ran_efficiency_ns) as f64 / 1e6
        );
        if fast_wake == "on" {
            assert!(
                by_fast >= 10,
                "{machine}: the fast path placed {by_fast} light wake-ups"
            );
        } else {
            assert_eq!(by_fast, 0, "{machine}: the fast path is off");
        }
        assert!(
            on_p_at - HOGS_END_NS <= 100_000_000,
            "{machine} fast_wake={fast_wake}: on a P-core {} ns after the hogs end",
            on_p_at - HOGS_END_NS
        );
        assert!(
            task.ran_performance_ns * 10 >= BUSY_NS * 9,
            "{machine} fast_wake={fast_wake}: {} ns of the {BUSY_NS} ns phase on P-cores: {task:?}",
            task.ran_performance_ns
        );
    }
}

#[test]
fn a_task_turned_busy_reaches_a_p_core_on_the_i7_13800h() {
    check("i7-13800h");
}

#[test]
fn a_task_turned_busy_reaches_a_p_core_on_the_mtl_laptop() {
    check("mtl-laptop");
}
