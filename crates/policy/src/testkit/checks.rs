//! The checkers of where a task goes: each rule of the idle order recomputed from the idle
//! set alone, without the decision code's helpers.
//!
//! This module holds what they share (the [`Violation`] they report, the recount of the idle
//! set, whether cluster balance is active); [`state`] checks a state's derived fields,
//! [`placement`] one decision, [`fill`] a machine filled task by task.

use crate::{ClusterBalance, CoreKind, CpuId, CpuState, Policy, TaskHints, Topology};
use std::collections::{BTreeMap, BTreeSet};
use std::string::String;
use std::vec::Vec;

mod fill;
mod placement;
mod state;

pub use fill::check_fill;
pub use placement::{check_deterministic, check_lone_task, check_placement};
pub use state::check_state;

/// A broken rule: which one, and the facts that show it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// Short name of the rule.
    pub rule: &'static str,
    /// What was seen.
    pub detail: String,
}

impl core::fmt::Display for Violation {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}: {}", self.rule, self.detail)
    }
}

impl core::error::Error for Violation {}

pub(super) fn fail<T>(rule: &'static str, detail: String) -> Result<T, Violation> {
    Err(Violation { rule, detail })
}

pub(super) fn cap(topo: &Topology, cpu: CpuId) -> u16 {
    topo.info(cpu).map_or(0, |i| i.capacity)
}

/// The idle order's first cut, from the idle set alone: the idle CPUs `task` may use, in id
/// order, and those of them in the policy's primary domain.
pub(super) fn idle_candidates(
    topo: &Topology,
    policy: &Policy,
    state: &CpuState,
    task: &TaskHints<'_>,
) -> (Vec<CpuId>, Vec<CpuId>) {
    let candidates: Vec<CpuId> = topo
        .cpus()
        .iter()
        .filter(|c| state.is_idle(*c) && task.allowed.contains(*c))
        .collect();
    let primary = candidates
        .iter()
        .copied()
        .filter(|c| policy.primary().contains(*c))
        .collect();
    (candidates, primary)
}

/// What the checks recount from the idle set alone, in one pass over the machine: each
/// cluster's busy and total CPUs and the cores with a busy CPU. Asked per CPU, each count
/// would be a pass of its own: on a 1,024-CPU machine a check took seconds under the fuzzers'
/// instrumentation.
pub(super) struct Recount {
    /// Busy and total CPUs by cluster id.
    clusters: BTreeMap<u16, (u32, u32)>,
    /// Cores with at least one busy CPU.
    busy_cores: BTreeSet<u16>,
}

impl Recount {
    pub(super) fn new(topo: &Topology, state: &CpuState) -> Self {
        let mut clusters = BTreeMap::new();
        let mut busy_cores = BTreeSet::new();
        for c in topo.cpus().iter() {
            let Some(info) = topo.info(c) else { continue };
            let busy = !state.is_idle(c);
            let load = clusters.entry(info.cluster).or_insert((0, 0));
            load.0 += u32::from(busy);
            load.1 += 1;
            if busy {
                busy_cores.insert(info.core);
            }
        }
        Self {
            clusters,
            busy_cores,
        }
    }

    /// Whether every SMT sibling of `cpu` is idle.
    fn whole_core_idle(&self, topo: &Topology, cpu: CpuId) -> bool {
        topo.info(cpu)
            .is_none_or(|i| !self.busy_cores.contains(&i.core))
    }

    /// Busy and total CPUs of `cpu`'s cluster.
    pub(super) fn cluster_load(&self, topo: &Topology, cpu: CpuId) -> (u32, u32) {
        topo.info(cpu)
            .and_then(|i| self.clusters.get(&i.cluster))
            .copied()
            .unwrap_or((0, 0))
    }

    /// Rank of a CPU in the idle order: 0 fully idle P-core, 1 idle E-core, 2 busy-sibling.
    fn class(&self, topo: &Topology, cpu: CpuId) -> usize {
        let kind = topo.info(cpu).map(|i| i.kind);
        match (self.whole_core_idle(topo, cpu), kind) {
            (true, Some(CoreKind::Performance)) => 0,
            (true, _) => 1,
            (false, _) => 2,
        }
    }
}

pub(super) fn balance_active(topo: &Topology, policy: &Policy, state: &CpuState) -> bool {
    let c = policy.config();
    match c.cluster_balance {
        ClusterBalance::Off => false,
        ClusterBalance::On => true,
        ClusterBalance::Auto => {
            let busy = topo.cpus().iter().filter(|x| !state.is_idle(*x)).count();
            let pct = busy * 100 / topo.nr_cpus();
            pct >= usize::from(c.auto_low_busy_pct) && pct < usize::from(c.auto_high_busy_pct)
        }
    }
}
