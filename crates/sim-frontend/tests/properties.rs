//! Generated machines, knobs and workloads: every replay runs to the end, every hybridland
//! decision obeys the policy crate's invariants, and a replay repeated gives the same bytes.

mod util;

use hybridland_policy::testkit::{arb_config, arb_topology_sized};
use hybridland_policy::{CpuId, PolicyConfig, Topology};
use hybridland_sim::core_policy::CoreDriven;
use hybridland_sim::trace::{FrameSpec, LoopSpec, Phase, PoolSpec, TRACE_VERSION, TaskSpec};
use hybridland_sim::{
    DecisionRecord, Knobs, MachineModel, PolicyKind, Report, SimOptions, SimPolicy, Simulation,
    Trace, policy_by_name,
};
use proptest::prelude::*;
use proptest::sample::subsequence;

fn arb_leaf() -> impl Strategy<Value = Phase> {
    prop_oneof![
        3 => (1u64..5_000_000).prop_map(Phase::RunNs),
        2 => (1u64..5_000_000).prop_map(Phase::SleepNs),
        1 => Just(Phase::Pool("work".into())),
    ]
}

fn arb_phase() -> impl Strategy<Value = Phase> {
    prop_oneof![
        3 => arb_leaf(),
        1 => (1u64..4, prop::collection::vec((1u64..3_000_000).prop_map(Phase::RunNs), 1..3))
            .prop_map(|(times, phases)| Phase::Loop(LoopSpec { times, phases })),
    ]
}

fn arb_task(cpus: Vec<CpuId>) -> impl Strategy<Value = TaskSpec> {
    let n = cpus.len();
    let allowed = prop::option::weighted(0.3, subsequence(cpus, 1..=n));
    let behaviour = prop_oneof![
        3 => prop::collection::vec(arb_phase(), 1..4).prop_map(|p| (p, None)),
        1 => (1u64..20_000_000, 1u64..10_000_000, 1u64..15)
            .prop_map(|(period_ns, work_ns, count)| (Vec::new(), Some(FrameSpec {
                period_ns, work_ns, deadline_ns: None, count,
            }))),
    ];
    (
        1u32..3,
        0u64..10_000_000,
        1u32..1000,
        allowed,
        prop::option::of(0u16..=1024),
        0u8..=100,
        behaviour,
    )
        .prop_map(
            |(copies, start_ns, weight, allowed, util, sens, (phases, frames))| TaskSpec {
                name: "t".into(),
                copies,
                start_ns,
                weight,
                allowed_cpus: allowed.map(|cpus| {
                    cpus.iter()
                        .map(|c| c.0.to_string())
                        .collect::<Vec<_>>()
                        .join(",")
                }),
                util,
                cache_sensitivity_pct: sens,
                phases,
                frames,
            },
        )
}

fn arb_case() -> impl Strategy<Value = (Topology, PolicyConfig, Trace)> {
    arb_topology_sized(false).prop_flat_map(|topo| {
        let cpus: Vec<CpuId> = topo.cpus().iter().collect();
        let tasks = prop::collection::vec(arb_task(cpus), 1..8);
        (
            Just(topo.clone()),
            arb_config(&topo),
            tasks,
            any::<u64>(),
            0u64..20,
        )
            .prop_map(|(topo, config, mut tasks, seed, chunks)| {
                // Task names must be unique once copies are expanded.
                for (i, t) in tasks.iter_mut().enumerate() {
                    t.name = format!("t{i}");
                }
                let trace = Trace {
                    version: TRACE_VERSION,
                    name: Some("generated".into()),
                    description: None,
                    machine: None,
                    seed,
                    duration_ns: None,
                    pools: vec![PoolSpec {
                        name: "work".into(),
                        chunks,
                        chunk_ns: 500_000,
                    }],
                    tasks,
                };
                (topo, config, trace)
            })
    })
}

fn run(topo: &Topology, trace: &Trace, policy: Box<dyn SimPolicy>) -> Report {
    let model = MachineModel::default();
    let sim = Simulation::new(topo, &model, trace, policy, SimOptions::default())
        .unwrap_or_else(|e| panic!("{e}"));
    let mut checked = |r: &DecisionRecord<'_>| {
        if let Err(v) = util::check_record(r) {
            panic!("task {} at {} ns ({:?}): {v}", r.task, r.now_ns, r.reason);
        }
    };
    sim.run_observed(&mut checked)
        .unwrap_or_else(|e| panic!("{e}"))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    /// Every hybridland decision of a generated replay (wake-ups, slice ends, contended or
    /// not) obeys the policy crate's invariants, with utilisation from its estimator.
    #[test]
    fn every_decision_of_a_generated_replay_obeys_the_invariants((topo, config, trace) in arb_case()) {
        let r = run(&topo, &trace, Box::new(CoreDriven::hybridland(config)));
        prop_assert_eq!(r.summary.tasks_finished, trace.nr_tasks());
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn generated_replays_finish_obey_the_invariants_and_repeat((topo, config, trace) in arb_case()) {
        trace.validate("generated").unwrap();
        let a = run(&topo, &trace, Box::new(CoreDriven::hybridland(config)));
        prop_assert_eq!(a.summary.tasks_finished, trace.nr_tasks());
        let busy: u64 = a.kinds.iter().map(|k| k.busy_ns).sum();
        prop_assert!(busy <= a.summary.makespan_ns * topo.nr_cpus() as u64);
        let b = run(&topo, &trace, Box::new(CoreDriven::hybridland(config)));
        prop_assert_eq!(a.to_json_pretty(), b.to_json_pretty());

        for kind in PolicyKind::ALL.into_iter().skip(1) {
            let policy = policy_by_name(kind.name(), &Knobs::new()).unwrap();
            let r = run(&topo, &trace, policy);
            prop_assert_eq!(r.summary.tasks_finished, trace.nr_tasks(), "{}", kind.name());
        }
    }
}
