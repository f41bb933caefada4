//! The hook that shows every placement decision to a caller (the tests check each one against
//! the policy crate's invariants).

use crate::sim_policy::{Decision, Reason};
use hybridland_policy::{CpuId, CpuSet, CpuState, Policy, Step, Topology};

/// Everything about one placement decision, for observers (the tests check each against the
/// policy crate's invariants).
#[derive(Debug)]
pub struct DecisionRecord<'a> {
    /// Simulated time.
    pub now_ns: u64,
    /// Task index.
    pub task: usize,
    /// Task name (a copy's is `NAME.N`).
    pub task_name: &'a str,
    /// Why it was placed.
    pub reason: Reason,
    /// The topology.
    pub topo: &'a Topology,
    /// The state the policy saw (for a core-driven policy, a copy of its core's, taken before
    /// the decision).
    pub state: &'a CpuState,
    /// The task's allowed CPUs.
    pub allowed: &'a CpuSet,
    /// Its previous CPU.
    pub prev_cpu: Option<CpuId>,
    /// For a synchronous wake-up: the waker's CPU ([`TaskView::sync_waker`](crate::sim_policy::TaskView::sync_waker)).
    pub sync_waker: Option<CpuId>,
    /// The utilisation the policy was given.
    pub util: u16,
    /// The answer.
    pub decision: &'a Decision,
    /// The policy crate's policy, when the policy is hybridland.
    pub core: Option<&'a Policy>,
}

/// One stretch of a task on a CPU, shown when it ends (a timeline's slice).
#[derive(Debug)]
pub struct RunRecord<'a> {
    /// When the task started on the CPU.
    pub start_ns: u64,
    /// When it left (it blocked, finished, was moved or preempted, or the replay ended).
    pub end_ns: u64,
    /// The CPU.
    pub cpu: CpuId,
    /// Task index.
    pub task: usize,
    /// Task name (a copy's is `NAME.N`).
    pub task_name: &'a str,
    /// The idle-order step that put it on this CPU; `None` when it came off a queue or the
    /// policy names no steps.
    pub step: Option<Step>,
    /// The utilisation the policy was given for that placement.
    pub util: u16,
    /// Whether the task waited in a CPU's or the shared queue before this run (the policy
    /// queued it, or it yielded its CPU to a waiting task), rather than being put straight
    /// on an idle CPU.
    pub queued: bool,
    /// How long the task waited between becoming runnable and this run's start (the
    /// report's wake-up latency sample); `None` when the run continued straight from the
    /// previous one.
    pub latency_ns: Option<u64>,
    /// Whether the run ended because a frame of a frame task completed.
    pub frame_done: bool,
    /// The task whose `wake` ended the `wait_for` before this run, when it was running then.
    pub woken_by: Option<WokenBy>,
}

/// A task that woke another from a `wait_for` while it ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WokenBy {
    /// Its task index.
    pub task: usize,
    /// The CPU it ran on.
    pub cpu: CpuId,
    /// When its run there started (the start of its run record).
    pub run_start_ns: u64,
    /// When it woke the task.
    pub at_ns: u64,
}

/// A cluster's occupancy and the machine's power right after a task started or stopped on
/// one of its CPUs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OccupancyRecord {
    /// Simulated time.
    pub now_ns: u64,
    /// The L2 cluster (the topology's cluster index).
    pub cluster: usize,
    /// Its CPUs running a task.
    pub busy_cpus: u32,
    /// The whole machine's power draw from now on, package included, in milliwatts.
    pub power_mw: u64,
}

/// Sees every decision of a replay (unless it says with
/// [`wants_decisions`](Self::wants_decisions) that it does not) and, when it asks for them with
/// [`wants_runs`](Self::wants_runs), every run and occupancy change.
pub trait DecisionObserver {
    /// Called after the policy answered and before the engine acts on it.
    fn on_decision(&mut self, record: &DecisionRecord<'_>);

    /// Whether to call [`on_decision`](Self::on_decision): asked once when the replay starts.
    /// A core-driven policy's machine state is its core's, which the decision changes; the
    /// engine copies it before each decision only for an observer that wants them.
    fn wants_decisions(&self) -> bool {
        true
    }

    /// Whether to call [`on_run`](Self::on_run) and [`on_occupancy`](Self::on_occupancy):
    /// asked once when the replay starts, so a replay nobody watches pays nothing for them.
    fn wants_runs(&self) -> bool {
        false
    }

    /// Called once per run, when it ends, in time order of the ends: a few per event at
    /// most, so an observer that writes them out keeps the replay's memory bounded.
    fn on_run(&mut self, _record: &RunRecord<'_>) {}

    /// Called after every start and stop of a task, in time order.
    fn on_occupancy(&mut self, _record: &OccupancyRecord) {}
}

impl<F: FnMut(&DecisionRecord<'_>)> DecisionObserver for F {
    fn on_decision(&mut self, record: &DecisionRecord<'_>) {
        self(record);
    }
}

/// An observer that watches nothing: a replay under it pays for no decision records.
#[derive(Clone, Copy, Debug, Default)]
pub struct Unobserved;

impl DecisionObserver for Unobserved {
    fn on_decision(&mut self, _record: &DecisionRecord<'_>) {}

    fn wants_decisions(&self) -> bool {
        false
    }
}
