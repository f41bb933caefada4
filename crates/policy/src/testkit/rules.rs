//! The individual rules, for property tests and benchmarks only. Frontends never call a rule:
//! the scheduler core ([`SchedCore`](crate::SchedCore)) asks each one at its moment in the
//! per-task sequence, and outside this feature the rules are private to the crate.

use crate::{CpuId, CpuState, Placement, Policy, SliceEnd, Step, TaskHints, Topology};

/// The idle order: which idle CPU a waking task gets.
pub fn select_cpu(
    policy: &Policy,
    topo: &Topology,
    state: &CpuState,
    task: &TaskHints<'_>,
) -> Placement {
    policy.select_cpu(topo, state, task)
}

/// The up-migration rule for the task running on `cpu`.
pub fn up_migration(
    policy: &Policy,
    topo: &Topology,
    state: &CpuState,
    cpu: CpuId,
    task: &TaskHints<'_>,
) -> Option<Placement> {
    policy.up_migration(topo, state, cpu, task)
}

/// The slice-end rule for the task running on `task.prev_cpu`.
pub fn slice_end(
    policy: &Policy,
    topo: &Topology,
    state: &CpuState,
    task: &TaskHints<'_>,
    contended: bool,
) -> SliceEnd {
    policy.slice_end(topo, state, task, contended)
}

/// The step of the idle order at which `cpu` would be chosen if it were idle.
pub fn step_of(topo: &Topology, state: &CpuState, cpu: CpuId) -> Step {
    crate::migration::step_of(topo, state, cpu)
}
