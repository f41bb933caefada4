//! A deterministic discrete-event simulator for CPU placement policies on hybrid machines
//! (P-cores with SMT beside E-core clusters, Arm big.LITTLE).
//!
//! Replay a workload [`Trace`] on a [`Machine`] (a [`presets`] entry or a topology file) under
//! a [`SimPolicy`] (the hybridland policy or a baseline that reproduces a known kernel
//! behaviour) and get a [`Report`] with makespan, turnaround, wake-up latency, frame rate,
//! migrations, per-kind and per-cluster busy time, and energy.
//!
//! ```
//! use hybridland_sim::{Knobs, SimOptions, Simulation, Trace, policy_by_name, presets};
//!
//! let machine = presets::lookup("tc2").unwrap();
//! let trace = Trace::from_json_str(
//!     r#"{"version": 1, "tasks": [{"name": "lone", "phases": [{"run_ns": 2090000000}]}]}"#,
//!     "lone.json",
//! )?;
//! let policy = policy_by_name("hybridland", &Knobs::new())?;
//! let sim = Simulation::new(&machine.topology, &machine.model, &trace, policy, SimOptions::default())?;
//! let report = sim.run()?;
//! // On a fast A15 the task needs its reference time, 2.09 s.
//! assert!(report.summary.makespan_ns < 2_100_000_000);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Determinism
//! Time is integer nanoseconds; events are ordered by `(time, insertion sequence)`; the only
//! randomness is a PCG32 seeded from the trace's `seed` (or [`SimOptions::seed`]); no hash map
//! is iterated. The same inputs give a byte-identical [`Report::to_json_pretty`].
//!
//! # The machine model
//! See [`machine`] and `docs/machine-model.md`: speed from capacity, SMT slowdown while a
//! sibling is busy, L2 contention among cache-sensitive tasks of one cluster, a cache-refill
//! cost per migration, and power per core kind active and idle.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod asym_capacity;
pub mod baselines;
pub mod compare;
pub mod core_policy;
mod custom;
pub mod decision_replay;
pub mod engine;
pub mod event_queue;
pub mod import;
pub mod knobs;
pub mod machine;
pub mod machine_file;
pub mod metrics;
pub mod options;
pub mod presets;
pub mod registry;
pub mod report;
pub mod sim_policy;
pub mod timeline;

/// Reading a user's input file with its size and type checked first (traces, rt-app files,
/// recordings, live files and machine files all go through it).
pub use hybridland_machine::input_file;
/// The trace format (its own crate, shared with the live scheduler), at its old path.
pub use hybridland_trace::format as trace;
/// The live figures a recording keeps (its own crate, shared with the live scheduler).
pub use hybridland_trace::live;
mod replay_limits;

pub use engine::{
    DecisionObserver, DecisionRecord, OccupancyRecord, RunRecord, SimError, Simulation, Unobserved,
    WokenBy,
};
pub use event_queue::EventQueue;
pub use knobs::{KnobError, Knobs};
pub use live::{LiveError, LiveStats};
pub use machine::{CorePower, IdleExitNs, MachineModel, ModelError};
pub use machine_file::{Machine, MachineError, load_topology_file};
pub use options::{ReplayUtil, SimOptions};
pub use registry::{PolicyKind, policy_by_name};
pub use replay_limits::ReplayLimits;
pub use report::Report;
pub use sim_policy::{
    Decision, Destination, MachineView, PolicyError, Reason, SimPolicy, TaskView,
};
pub use trace::{Trace, TraceError};

/// Replays `trace` on `machine` under the policy named `policy` with `--set` style `knobs`
/// (policy knobs, replay options and model overrides alike): the one-call form of
/// [`Simulation`].
pub fn replay(
    machine: &Machine,
    trace: &Trace,
    policy: &str,
    knobs: &Knobs,
) -> Result<Report, SimError> {
    replay_observed(
        machine,
        trace,
        policy,
        knobs,
        &SimOptions::default(),
        &mut Unobserved,
    )
}

/// [`replay`] with `knobs` applied over `base` options (limits such as
/// [`SimOptions::max_wall`]) and every decision shown to `observer`.
pub fn replay_observed(
    machine: &Machine,
    trace: &Trace,
    policy: &str,
    knobs: &Knobs,
    base: &SimOptions,
    observer: &mut dyn DecisionObserver,
) -> Result<Report, SimError> {
    let mut model = machine.model.clone();
    knobs
        .apply_model(&mut model)
        .map_err(|e| SimError::Policy(PolicyError::Knob(e)))?;
    let options = knobs
        .sim_options(base)
        .map_err(|e| SimError::Policy(PolicyError::Knob(e)))?;
    let policy = policy_by_name(policy, knobs)?;
    let mut sim = Simulation::new(&machine.topology, &model, trace, policy, options)?;
    sim.set_machine_name(&machine.name);
    sim.run_observed(observer)
}
