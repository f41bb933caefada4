//! The hook that shows every placement decision to a caller (the tests check each one against
//! the policy crate's invariants).

use crate::event_queue::TimeNs;
use crate::sim_policy::{Decision, Reason};
use hybridland_policy::{CpuId, CpuSet, CpuState, Policy, Topology};

/// Everything about one placement decision, for observers (the tests check each against the
/// policy crate's invariants).
#[derive(Debug)]
pub struct DecisionRecord<'a> {
    /// Simulated time.
    pub now_ns: TimeNs,
    /// Task index.
    pub task: usize,
    /// Task name (a copy's is `NAME.N`).
    pub task_name: &'a str,
    /// Why it was placed.
    pub reason: Reason,
    /// The topology.
    pub topo: &'a Topology,
    /// The state the policy saw.
    pub state: &'a CpuState,
    /// The task's allowed CPUs.
    pub allowed: &'a CpuSet,
    /// Its previous CPU.
    pub prev_cpu: Option<CpuId>,
    /// The utilisation the policy was given.
    pub util: u16,
    /// The answer.
    pub decision: &'a Decision,
    /// The policy crate's policy, when the policy is hybridland.
    pub core: Option<&'a Policy>,
}

/// Sees every decision of a replay.
pub trait DecisionObserver {
    /// Called after the policy answered and before the engine acts on it.
    fn on_decision(&mut self, record: &DecisionRecord<'_>);
}

impl<F: FnMut(&DecisionRecord<'_>)> DecisionObserver for F {
    fn on_decision(&mut self, record: &DecisionRecord<'_>) {
        self(record);
    }
}
