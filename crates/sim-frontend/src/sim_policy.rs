//! The interface between the engine and a placement policy: the trait, the views it is
//! given and the answers it returns. No concrete policy lives here, so the engine and the
//! policies both depend on this module and never on each other; [`crate::registry`] builds
//! them by name.

use crate::event_queue::TimeNs;
use crate::knobs::KnobError;
use hybridland_policy::{
    CpuId, CpuSet, CpuState, Placement, PlacementPolicy, Policy, SchedCore, SliceEnd, Slot,
    Topology,
};

/// The policy crate's scheduler core as the simulator holds it: storage for every task of the
/// replay, and whichever policy the command line named.
pub type SimCore = SchedCore<Vec<Slot>, Box<dyn PlacementPolicy>>;

/// Why the engine asks for a placement.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Reason {
    /// The task starts or wakes from a sleep.
    Wakeup,
    /// The task used up its slice and nothing waits for its CPU: where should it go on? Its
    /// CPU is idle in the state handed over (released in a copy), and it is `prev_cpu`.
    SliceEnd,
    /// The task used up its slice and another task waits for its CPU. As for `SliceEnd`; if
    /// the answer is the same CPU, the task goes to the back of the queue instead.
    Preempted,
}

/// The machine as a policy sees it at a decision.
#[derive(Copy, Clone, Debug)]
pub struct MachineView<'a> {
    /// The topology.
    pub topo: &'a Topology,
    /// The CPUs running nothing (for every policy).
    pub idle: &'a CpuSet,
    /// The policy crate's view of the machine: idle CPUs, homes, cluster loads. Current for
    /// the policies the engine drives; a core-driven policy ([`SimPolicy::sched_core`]) reads
    /// its core's own, and the engine keeps no copy of it here.
    pub state: &'a CpuState,
    /// Per CPU id: tasks running on it plus tasks in its own queue (not the shared queue).
    pub load: &'a [u32],
    /// Tasks waiting in any queue (the shared one and the CPUs' own).
    pub waiting: u64,
    /// Simulated time.
    pub now_ns: TimeNs,
}

/// The task being placed.
#[derive(Copy, Clone, Debug)]
pub struct TaskView<'a> {
    /// Task index in the replay (trace order, copies expanded).
    pub id: usize,
    /// CPUs it may run on.
    pub allowed: &'a CpuSet,
    /// Where it ran last.
    pub prev_cpu: Option<CpuId>,
    /// Utilisation, 0..=1024: the engine's estimate, or the trace's hint when
    /// `from_hint`.
    pub util: u16,
    /// Whether `util` is the trace's hint (`--util-source hint`).
    pub from_hint: bool,
    /// Its weight (100 for nice 0).
    pub weight: u32,
    /// Why it is placed.
    pub reason: Reason,
    /// For a wake-up by another task (the trace's `wake` relation): the CPU the waker runs
    /// on (or last ran on). `None` for a timer, a frame release, an arrival or a slice end.
    pub waker_cpu: Option<CpuId>,
}

/// Where a task goes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// Run now on this CPU, which must be idle and allowed.
    Run(CpuId),
    /// Wait in this CPU's own queue (a per-CPU run queue, as the kernel's CFS/EEVDF has).
    QueueOn(CpuId),
    /// Wait in the shared queue (like sched_ext's shared DSQ) until an allowed CPU frees up.
    /// Only valid when no allowed CPU is idle.
    QueueShared,
    /// Take this allowed CPU: the task goes to the front of its queue and the task running
    /// there ends its slice now (live: a preempting kick). On an idle CPU, as [`Self::QueueOn`].
    Preempt(CpuId),
}

/// A policy's answer.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    /// Where the task goes.
    pub target: Target,
    /// The policy crate's placement behind the target, when the scheduler core placed the task
    /// (a wake-up, or a move at a slice end); counted by step.
    pub placement: Option<Placement>,
    /// The policy crate's slice-end answer, when the scheduler core decided a slice end (for
    /// the checkers).
    pub slice_end: Option<SliceEnd>,
    /// The slice the scheduler core gave (core-driven policies); else the engine sizes it.
    pub slice_ns: Option<u64>,
    /// The shared-queue key the scheduler core gave (core-driven policies); else the
    /// engine's own bounded-credit vtime.
    pub vtime: Option<u64>,
    /// The utilisation the scheduler core decided with (core-driven policies).
    pub util: Option<u16>,
}

impl Decision {
    /// A decision with no policy-crate answer behind it.
    pub const fn plain(target: Target) -> Self {
        Self {
            target,
            placement: None,
            slice_end: None,
            slice_ns: None,
            vtime: None,
            util: None,
        }
    }
}

/// A task waiting in a CPU's own queue, as periodic balancing sees it.
#[derive(Copy, Clone, Debug)]
pub struct QueuedTask<'a> {
    /// Task index.
    pub id: usize,
    /// The CPU whose queue holds it.
    pub cpu: CpuId,
    /// CPUs it may run on.
    pub allowed: &'a CpuSet,
}

/// A balancing move: take a task from a CPU queue and run it on (or queue it to) `to`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Move {
    /// Task index; must be in some CPU's own queue.
    pub task: usize,
    /// Destination CPU; allowed for the task.
    pub to: CpuId,
}

/// A placement policy the engine can drive. Called in this order: [`prepare`](Self::prepare)
/// once, then [`place`](Self::place) for every wake-up and slice end, and
/// [`balance`](Self::balance) at every balance tick, all in simulated-time order.
pub trait SimPolicy {
    /// The policy's name (as `policy_by_name` takes it).
    fn name(&self) -> &str;

    /// The knobs in force, for reports.
    fn describe(&self) -> String;

    /// Binds the policy to a machine before a replay; `seed` feeds any random choices.
    fn prepare(&mut self, topo: &Topology, seed: u64) -> Result<(), PolicyError>;

    /// Where a runnable task should go.
    fn place(&mut self, machine: &MachineView<'_>, task: &TaskView<'_>) -> Decision;

    /// Periodic balancing over the tasks waiting in CPU queues. Default: nothing moves.
    fn balance(&mut self, _machine: &MachineView<'_>, _queued: &[QueuedTask<'_>]) -> Vec<Move> {
        Vec::new()
    }

    /// The hybridland rules behind this policy, if it is hybridland, so tests can check its
    /// decisions against the shared invariants.
    fn core(&self) -> Option<&Policy> {
        None
    }

    /// Called once after [`prepare`](Self::prepare) with the replay's task count and base
    /// slice: a policy driven by the policy crate's scheduler core builds it here.
    fn reserve(&mut self, _nr_tasks: usize, _slice_ns: u64) -> Result<(), PolicyError> {
        Ok(())
    }

    /// The scheduler core behind this policy, if it is driven by one. The engine then plays
    /// the live framework's part: it tells the core every start, stop and exit, runs its timer
    /// and carries out its nudges, refills an uncontended slice without asking (as
    /// scx_rustland_core does), and applies the slices and vtimes of its decisions.
    fn sched_core(&mut self) -> Option<&mut SimCore> {
        None
    }
}

/// A policy that cannot be built or bound to a machine.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    /// No policy has this name.
    #[error("unknown policy `{name}` (known: {known})")]
    UnknownPolicy {
        /// The name given.
        name: String,
        /// The names accepted.
        known: String,
    },
    /// A knob is wrong.
    #[error(transparent)]
    Knob(#[from] KnobError),
    /// The configuration does not fit the machine (e.g. `powersave` without E-cores).
    #[error("policy `{policy}` cannot run on this machine: {reason}")]
    Config {
        /// The policy.
        policy: String,
        /// Why.
        reason: String,
    },
}
