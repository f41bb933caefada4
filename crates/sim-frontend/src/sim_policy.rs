//! The interface between the engine and a placement policy: the trait a policy implements
//! ([`SimPolicy`]), the one the engine drives every policy through ([`PolicyDriver`]), the
//! views they are given and the answers they return. No concrete policy lives here, so the
//! engine and the policies both depend on this module and never on each other;
//! [`crate::registry`] builds them by name.
//!
//! A policy's driver keeps its own bookkeeping: a policy behind the policy crate's scheduler
//! core ([`crate::core_policy`]) hands the machine's events to its core, which keeps the tasks'
//! estimates, vtimes, homes and the CPUs' state; any other policy gets [`Accounted`], which
//! keeps the same with the policy crate's estimator, vtime clock and [`CpuState`]. The engine
//! keeps only which CPUs run nothing.

mod accounted;

pub use accounted::Accounted;

use crate::knobs::KnobError;
use hybridland_policy::{
    CpuId, CpuSet, CpuState, LastRun, Nudge, Placement, PlacementPolicy, Policy, SchedCore,
    SliceEnd, Slot, Topology,
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
    /// The task was stopped for a task already given its CPU, first in that CPU's own queue
    /// (a wake-up that takes the one CPU it may use, a wake-up preemption, the nudge helper),
    /// and nothing else waits for the CPU. Where it goes is decided as for `Preempted`; a
    /// policy told who waits hears that nobody does: live, the framework's snapshot shows no
    /// such task, which runs before the stopped one whatever it is told.
    Displaced,
}

impl Reason {
    /// Whether the task's CPU goes to another task first (`Preempted`, `Displaced`): staying
    /// on it means the back of its queue.
    pub const fn stopped_for_another(self) -> bool {
        matches!(self, Self::Preempted | Self::Displaced)
    }
}

/// The machine as a policy sees it at a decision.
#[derive(Copy, Clone, Debug)]
pub struct MachineView<'a> {
    /// The topology.
    pub topo: &'a Topology,
    /// The CPUs running nothing (for every policy).
    pub idle: &'a CpuSet,
    /// The policy crate's view of the machine: idle CPUs, homes, cluster loads, as the
    /// policy's driver keeps it.
    pub state: &'a CpuState,
    /// Per CPU id: tasks running on it plus tasks in its own queue (not the shared queue).
    pub load: &'a [u32],
    /// Tasks waiting in any queue (the shared one and the CPUs' own).
    pub waiting: u64,
    /// Simulated time.
    pub now_ns: u64,
}

/// The machine as the engine knows it at a decision, what every [`PolicyDriver`] is handed: a
/// [`MachineView`] without the policy's own [`CpuState`], which its driver keeps.
#[derive(Copy, Clone, Debug)]
pub struct EngineView<'a> {
    /// The topology.
    pub topo: &'a Topology,
    /// The CPUs running nothing.
    pub idle: &'a CpuSet,
    /// Per CPU id: tasks running on it plus tasks in its own queue (not the shared queue).
    pub load: &'a [u32],
    /// Tasks waiting in any queue (the shared one and the CPUs' own).
    pub waiting: u64,
    /// Simulated time.
    pub now_ns: u64,
}

impl<'a> EngineView<'a> {
    /// The view a policy is shown, with `state` as the machine's state.
    pub fn with_state(&self, state: &'a CpuState) -> MachineView<'a> {
        MachineView {
            topo: self.topo,
            idle: self.idle,
            state,
            load: self.load,
            waiting: self.waiting,
            now_ns: self.now_ns,
        }
    }
}

impl<'a> From<&MachineView<'a>> for EngineView<'a> {
    fn from(m: &MachineView<'a>) -> Self {
        Self {
            topo: m.topo,
            idle: m.idle,
            load: m.load,
            waiting: m.waiting,
            now_ns: m.now_ns,
        }
    }
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
    /// Utilisation, 0..=1024: the driver's estimate ([`PolicyDriver::estimate`]), or the
    /// trace's hint when `from_hint`.
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
    /// For a synchronous wake-up: the waker's CPU when the waker left it right after its wake
    /// step (it blocked or slept; live, a pipe writer that then reads) and the CPU is idle
    /// with nothing queued. `None` otherwise.
    pub sync_waker: Option<CpuId>,
}

/// Where a task goes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Destination {
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
    pub target: Destination,
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
    pub const fn plain(target: Destination) -> Self {
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

    /// The driver the engine runs this policy through. Default: [`Accounted`], which keeps
    /// the tasks' estimates and vtimes and the machine's [`CpuState`] for it; a policy with
    /// bookkeeping of its own (a scheduler core) returns itself.
    fn into_driver<'p>(self: Box<Self>) -> Box<dyn PolicyDriver + 'p>
    where
        Self: 'p,
    {
        Box::new(Accounted::new(self))
    }
}

/// How the engine drives a policy: the policy's answers, and its bookkeeping of the machine's
/// events. The engine tells every driver the same events (a task woke, started, stopped,
/// exited) and runs the timer it asks for; what a driver keeps of them is its own.
pub trait PolicyDriver {
    /// The policy's name ([`SimPolicy::name`]).
    fn name(&self) -> &str;

    /// The knobs in force ([`SimPolicy::describe`]).
    fn describe(&self) -> String;

    /// The hybridland rules behind the policy, if it is hybridland ([`SimPolicy::core`]).
    fn core(&self) -> Option<&Policy>;

    /// Binds the policy to a machine ([`SimPolicy::prepare`]).
    fn prepare(&mut self, topo: &Topology, seed: u64) -> Result<(), PolicyError>;

    /// Sizes the bookkeeping for the replay's tasks and base slice ([`SimPolicy::reserve`]).
    fn reserve(&mut self, nr_tasks: usize, slice_ns: u64) -> Result<(), PolicyError>;

    /// Whether an observer wants the state each decision was made on
    /// ([`decided_on`](Self::decided_on)). Default: nothing to keep.
    fn watch_decisions(&mut self, _on: bool) {}

    /// Where a runnable task should go.
    fn place(&mut self, machine: &EngineView<'_>, task: &TaskView<'_>) -> Decision;

    /// The machine's state the last decision was made on, when decisions are watched.
    fn decided_on(&self) -> Option<&CpuState>;

    /// Periodic balancing over the tasks waiting in CPU queues ([`SimPolicy::balance`]).
    fn balance(&mut self, machine: &EngineView<'_>, queued: &[QueuedTask<'_>]) -> Vec<Move>;

    /// Task `task` became runnable at `now_ns` (before it is placed).
    fn woke(&mut self, now_ns: u64, task: usize);

    /// The driver's utilisation estimate of `task`, for [`TaskView::util`] (0 when the driver
    /// estimates it at the decision itself).
    fn estimate(&self, task: usize) -> u16;

    /// Task `task` started on `cpu`.
    fn started(&mut self, now_ns: u64, task: usize, cpu: CpuId);

    /// Task `task` stopped on `cpu` after running `run`, with `weight`.
    fn stopped(&mut self, now_ns: u64, task: usize, cpu: CpuId, run: LastRun, weight: u32);

    /// Task `task` ended.
    fn exited(&mut self, now_ns: u64, task: usize);

    /// The shared-queue key of `task` for a decision that gave none ([`Decision::vtime`]).
    fn queue_key(&mut self, task: usize, slice_ns: u64) -> u64;

    /// When the driver's timer is next due, if it has one.
    fn timeout(&self) -> Option<u64>;

    /// The timer is due: a nudge of the task running on a CPU (its next slice end is then
    /// contended), if it gives one.
    fn tick(&mut self, now_ns: u64) -> Option<Nudge>;

    /// Whether a slice end that nothing waits for is refilled without asking, as the live
    /// framework does for a scheduler core; otherwise the policy is asked at every slice end.
    fn refills_uncontended_slices(&self) -> bool;

    /// The utilisation estimate of `task` for the report: as it ended, or as it stands.
    fn final_util(&self, task: usize) -> u16;

    /// Per [`Step`](hybridland_policy::Step) of the idle order (in its order): how many
    /// placements it made, and how many of them overflowed, when the policy places by steps.
    fn step_counts(&self) -> Option<[[u64; 2]; hybridland_policy::Step::ALL.len()]>;
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
