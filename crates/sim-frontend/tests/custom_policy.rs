//! A policy written outside the crate plugs into the engine through `SimPolicy`, and the
//! engine refuses answers that break its contract.

use hybridland_policy::{CpuId, Topology};
use hybridland_sim::{
    Decision, Destination, MachineView, PolicyError, SimError, SimOptions, SimPolicy, Simulation,
    TaskView, Trace, presets,
};

/// Lowest idle allowed CPU, else the shared queue.
struct LowestIdle;

impl SimPolicy for LowestIdle {
    fn name(&self) -> &str {
        "lowest-idle"
    }
    fn describe(&self) -> String {
        String::new()
    }
    fn prepare(&mut self, _topo: &Topology, _seed: u64) -> Result<(), PolicyError> {
        Ok(())
    }
    fn place(&mut self, m: &MachineView<'_>, t: &TaskView<'_>) -> Decision {
        let target = t
            .allowed
            .and(m.state.idle())
            .first()
            .map_or(Destination::QueueShared, Destination::Run);
        Decision::plain(target)
    }
}

/// Always CPU 0, busy or not.
struct AlwaysZero;

impl SimPolicy for AlwaysZero {
    fn name(&self) -> &str {
        "always-zero"
    }
    fn describe(&self) -> String {
        String::new()
    }
    fn prepare(&mut self, _topo: &Topology, _seed: u64) -> Result<(), PolicyError> {
        Ok(())
    }
    fn place(&mut self, _m: &MachineView<'_>, _t: &TaskView<'_>) -> Decision {
        Decision::plain(Destination::Run(CpuId(0)))
    }
}

fn two_tasks() -> Trace {
    Trace::from_json_str(
        r#"{"version": 1, "tasks": [{"name": "w", "copies": 7, "phases": [{"run_ns": 20000000}]}]}"#,
        "two.json",
    )
    .unwrap()
}

#[test]
fn an_outside_policy_runs_a_replay() {
    let machine = presets::lookup("tc2").unwrap();
    let trace = two_tasks();
    let sim = Simulation::new(
        &machine.topology,
        &machine.model,
        &trace,
        Box::new(LowestIdle),
        SimOptions::default(),
    )
    .unwrap();
    let report = sim.run().unwrap();
    assert_eq!(report.policy, "lowest-idle");
    assert_eq!(report.summary.tasks_finished, 7);
    // 7 tasks on 5 CPUs: two waited in the shared queue.
    assert!(report.wake_latency.max_ns > 0);
}

#[test]
fn a_busy_cpu_answer_is_an_error_not_a_corrupt_replay() {
    let machine = presets::lookup("tc2").unwrap();
    let trace = two_tasks();
    let sim = Simulation::new(
        &machine.topology,
        &machine.model,
        &trace,
        Box::new(AlwaysZero),
        SimOptions::default(),
    )
    .unwrap();
    let e = sim.run().unwrap_err();
    assert!(
        matches!(
            e,
            SimError::InvalidDecision {
                task: 1,
                reason: "CPU is busy",
                ..
            }
        ),
        "{e:?}"
    );
}
