//! Shared harness for the integration tests: load the project's example traces and replay
//! them with every hybridland decision checked against the policy crate's invariants.

#![allow(dead_code, unreachable_pub)]

use hybridland_policy::TaskHints;
use hybridland_policy::testkit::{check_placement, check_slice_end, check_state};
use hybridland_sim::{
    DecisionRecord, Knobs, Machine, Report, SimOptions, Simulation, Trace, policy_by_name, presets,
};
use std::path::PathBuf;

pub mod plain_policy;

/// `examples/traces/` of the repository.
pub fn traces_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/traces")
}

/// Reads and parses `examples/traces/<name>`.
pub fn load_trace(name: &str) -> Trace {
    let path = traces_dir().join(name);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    Trace::from_json_str(&text, name).unwrap_or_else(|e| panic!("{e}"))
}

/// The preset the trace names.
pub fn machine_of(trace: &Trace) -> Machine {
    let name = trace
        .machine
        .as_deref()
        .expect("example traces name their machine");
    presets::lookup(name).unwrap_or_else(|| panic!("no preset {name}"))
}

/// Replays `trace` under `policy` with `knobs` (`KEY=VALUE`), optionally with another seed.
/// Every decision that comes from the policy crate is checked with the testkit's checkers; a
/// violation fails the test with the seed and the decision.
pub fn replay(trace: &Trace, policy: &str, knobs: &[&str], seed: Option<u64>) -> Report {
    let machine = machine_of(trace);
    replay_on(&machine, trace, policy, knobs, seed)
}

/// As [`replay`] on a given machine.
pub fn replay_on(
    machine: &Machine,
    trace: &Trace,
    policy: &str,
    knobs: &[&str],
    seed: Option<u64>,
) -> Report {
    let knobs = Knobs::parse(knobs).unwrap();
    let mut model = machine.model.clone();
    knobs.apply_model(&mut model).unwrap();
    let mut options = knobs.sim_options(&SimOptions::default()).unwrap();
    if seed.is_some() {
        options.seed = seed;
    }
    let used_seed = options.seed.unwrap_or(trace.seed);
    let policy_box = policy_by_name(policy, &knobs).unwrap();
    let mut sim = Simulation::new(&machine.topology, &model, trace, policy_box, options).unwrap();
    sim.set_machine_name(&machine.name);
    let mut checked = 0u64;
    let mut observer = |r: &DecisionRecord<'_>| {
        if let Err(v) = check_record(r) {
            panic!(
                "seed {used_seed}: decision for task {} at {} ns ({:?}) broke `{v}`; state {:?}, decision {:?}",
                r.task, r.now_ns, r.reason, r.state, r.decision
            );
        }
        if r.core.is_some() {
            checked += 1;
        }
    };
    let report = sim
        .run_observed(&mut observer)
        .unwrap_or_else(|e| panic!("seed {used_seed}: {e}"));
    if policy.starts_with("hybridland") {
        assert!(checked > 0, "no hybridland decision was checked");
    }
    report
}

/// Checks one decision of a replay with the testkit: a wake-up against the idle order, a
/// slice end against the slice-end rule (on the state with the task still on its CPU).
pub fn check_record(r: &DecisionRecord<'_>) -> Result<(), hybridland_policy::testkit::Violation> {
    let Some(core) = r.core else {
        return Ok(());
    };
    check_state(r.topo, r.state)?;
    let hints = TaskHints {
        allowed: r.allowed,
        prev_cpu: r.prev_cpu,
        util: r.util,
        sync_waker: r.sync_waker,
    };
    match (r.decision.slice_end, r.decision.placement) {
        (Some(answer), _) => {
            let mut running = r.state.clone();
            if let Some(own) = r.prev_cpu {
                running.occupy(r.topo, own);
            }
            // A displaced task is told nobody waits (the task that stopped it runs first anyway).
            let contended = r.reason == hybridland_sim::Reason::Preempted;
            check_slice_end(r.topo, core, &running, &hints, contended, answer)
        }
        (None, Some(placement)) => check_placement(r.topo, core, r.state, &hints, &placement),
        (None, None) => Ok(()),
    }
}

/// Percent by which `slow` exceeds `fast`.
pub fn pct_slower(slow: u64, fast: u64) -> f64 {
    (slow as f64 / fast as f64 - 1.0) * 100.0
}
