//! The discrete-event engine: replays a [`Trace`] on a machine under one
//! [`SimPolicy`](crate::SimPolicy).
//!
//! Events (arrivals, wake-ups, work completions, slice ends, balance ticks) sit in an
//! [`EventQueue`] keyed by `(time_ns, seq)`. A running task progresses at the rate the
//! [`MachineModel`] gives for its CPU and neighbours; whenever a CPU's occupancy changes, the
//! rates of its SMT siblings and L2-cluster neighbours are recomputed after settling the work
//! they did at the old rate, and their completion events are re-issued. A CPU's completion
//! and slice end are timers of the queue: re-issuing one replaces the pending one, so the
//! queue holds one event per task and two per CPU, however many events the replay has.
//!
//! Placement happens at every wake-up and at every slice end. Every policy is driven through
//! its [`PolicyDriver`], which keeps its own bookkeeping: a core-driven policy (hybridland and
//! the baselines that run live) hands the machine's events to its scheduler core, which keeps
//! the tasks' estimates, vtimes and the machine's state and answers with target, slice and
//! vtime; the baselines with per-CPU queues balanced by pulling (`kernel-default`,
//! `summed-capacity`) keep theirs in `sim_policy/accounted.rs`. The engine tells the driver
//! each wake-up, start, stop and exit, runs its timer, and applies its answers; it keeps only
//! which CPUs run nothing. When nothing idle is chosen the task waits in the shared queue in
//! vtime order (with its bounded credit), and the next CPU to free up that the task may use
//! takes it; the engine only moves tasks and time.
//!
//! A task blocked in a trace's `wait_for` has no event of its own: the waker's `wake` pushes
//! one (`Woken`, with the waker's CPU for the placement) when its program gets there
//! (`program.rs`). A task started on a CPU idle since an earlier time runs only after the
//! model's wake-up cost (`occupancy.rs`).
//!
//! Nothing here reads a clock, iterates a hash map or draws a random number: the policy gets
//! its own seeded generator, so the same inputs give the same bytes out.

mod contention;
mod dispatch;
mod error;
mod event_loop;
mod observer;
mod occupancy;
mod power;
mod program;
mod progress;
mod report_build;
mod setup;

pub use error::SimError;
pub use observer::{
    DecisionObserver, DecisionRecord, OccupancyRecord, RunRecord, Unobserved, WokenBy,
};

use crate::event_queue::EventQueue;
use crate::machine::MachineModel;
use crate::metrics::{FrameCounter, LatencySamples};
use crate::options::SimOptions;
use crate::sim_policy::PolicyDriver;
use crate::trace::Trace;
use contention::ClusterContention;
use hybridland_policy::{CoreKind, CpuId, CpuSet, Step, Topology};
use power::CoreMeter;
use program::Program;
use progress::RunInfo;
use std::collections::{BTreeSet, VecDeque};

#[derive(Copy, Clone, Debug)]
enum Event {
    /// A task's first wake-up.
    Arrive(usize),
    /// A task's sleep ends (or its next frame is released).
    Wake(usize),
    /// A task blocked in a `wait_for` is woken by another (the second), running on this CPU
    /// (its last one, when it is not on a CPU).
    Woken(usize, usize, Option<CpuId>),
    /// The work of the task on this CPU is done (timer [`work_done_key`]).
    WorkDone(CpuId),
    /// The slice of the task on this CPU ends (timer [`slice_end_key`]).
    SliceEnd(CpuId),
    /// Periodic balancing, scheduled while any CPU queue holds a task.
    BalanceTick,
    /// The policy driver's timer (a scheduler core's), at the time it asks for.
    DriverTick,
}

// A CPU's completion and slice-end events are timers: re-arming one replaces the pending one,
// so the queue holds at most two per CPU however often occupancy changes, instead of every
// superseded event until its due time (which is what made memory grow with events).
fn work_done_key(cpu: CpuId) -> usize {
    2 * cpu.index()
}

fn slice_end_key(cpu: CpuId) -> usize {
    2 * cpu.index() + 1
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Status {
    NotStarted,
    Sleeping,
    Queued,
    Running,
    Done,
}

#[derive(Clone, Debug)]
struct Task<'t> {
    name: String,
    spec: usize,
    util_hint: u16,
    weight: u32,
    sensitivity: u8,
    start_ns: u64,
    program: Program<'t>,
    status: Status,
    /// Work left in the current run action, in
    /// [`WORK_SCALE`](crate::machine::WORK_SCALE) units.
    remaining: u128,
    run: Option<RunInfo>,
    last_cpu: Option<CpuId>,
    runnable_since: Option<u64>,
    ran_by_kind: [u64; 3],
    migrations: u64,
    wakeups: u64,
    finish_ns: Option<u64>,
    frames: Option<FrameCounter>,
    /// The step and utilisation of the decision that put it on its CPU (for run records).
    placed_by: Option<Step>,
    placed_util: u16,
    /// The wait before the current run (for run records).
    run_latency: Option<u64>,
    /// Put in a queue since its last run started; `run_queued` keeps it for the current run
    /// (for run records).
    queued: bool,
    run_queued: bool,
    /// Set just before the stop that completes a frame (for run records).
    frame_done: bool,
    /// The tasks (trace names) whose wake-up it is blocked for, in a `wait_for`.
    waiting_for: Option<&'t [String]>,
    /// Wake-ups kept for a later `wait_for`: (waker's spec index, how many).
    pending: Vec<(usize, u64)>,
    /// The waker's CPU for the wake-up being placed (a wake-up by another task).
    waker_cpu: Option<CpuId>,
    /// That CPU when the wake-up is synchronous ([`TaskView::sync_waker`](crate::sim_policy::TaskView::sync_waker)).
    sync_waker: Option<CpuId>,
    /// The task that woke it from its `wait_for` while running, until its next run starts;
    /// `run_woken_by` keeps it for that run (for run records).
    woken_by: Option<WokenBy>,
    run_woken_by: Option<WokenBy>,
    /// The slice the policy gave it, for its next start.
    slice_ns: Option<u64>,
}

/// A run or occupancy change waiting to be shown to the observer after the current event.
#[derive(Clone, Copy, Debug)]
enum Pending {
    Run {
        start_ns: u64,
        cpu: CpuId,
        task: usize,
        /// Taken at the stop: a slice end places the task again within the same event.
        step: Option<Step>,
        util: u16,
        queued: bool,
        latency_ns: Option<u64>,
        frame_done: bool,
        woken_by: Option<WokenBy>,
    },
    Occupancy(OccupancyRecord),
}

#[derive(Clone, Debug)]
struct Cpu {
    kind: CoreKind,
    capacity: u16,
    core: usize,
    cluster: usize,
    /// Index of this CPU in its cluster's [`Topology::cluster_cpus`].
    cluster_pos: u16,
    running: Option<usize>,
    local: VecDeque<usize>,
    busy_ns: u64,
    busy_since: Option<u64>,
    /// Since when it has run nothing (`None` while it runs a task): a task started on it
    /// later than that pays the wake-up cost.
    idle_since: Option<u64>,
    /// The policy's driver nudged the task running here: its next slice end is contended (the
    /// live helper thread waits in this CPU's queue).
    nudged: bool,
}

/// One replay, set up and ready to [`run`](Self::run).
pub struct Simulation<'a> {
    topo: &'a Topology,
    model: &'a MachineModel,
    trace: &'a Trace,
    policy: Box<dyn PolicyDriver + 'a>,
    options: SimOptions,
    seed: u64,
    machine_name: String,
    trace_name: String,

    now: u64,
    events: EventQueue<Event>,
    nr_events: u64,
    tasks: Vec<Task<'a>>,
    /// Per trace task (spec): its first replay task; its copies follow.
    spec_first: Vec<usize>,
    /// Spec index by task name, for the wake-up relation.
    spec_by_name: std::collections::BTreeMap<&'a str, usize>,
    allowed: Vec<CpuSet>,
    cpus: Vec<Cpu>,
    /// Per CPU id: its SMT siblings, itself included (the topology's, looked up once: every
    /// start, stop and re-rating reads them).
    siblings: Vec<&'a [CpuId]>,
    /// Per L2 cluster: what its running tasks add to each other's contention.
    contention: Vec<ClusterContention>,
    /// Reused buffer of the cluster positions one event re-rates.
    rerate_scratch: Vec<u16>,
    /// Running tasks re-rated so far (see [`Summary::rate_refreshes`](crate::report::Summary)).
    rate_refreshes: u64,
    cpu_ids: Vec<CpuId>,
    cores: Vec<CoreMeter>,
    /// The CPUs running nothing (the policy's driver keeps its own view of the machine).
    idle: CpuSet,
    load: Vec<u32>,
    shared: BTreeSet<(u64, u64, usize)>,
    shared_seq: u64,
    /// Tasks waiting in CPU queues (not the shared one).
    nr_local: usize,
    pools_left: Vec<u64>,
    alive: usize,
    tick_pending: bool,
    /// When the policy driver's timer is due.
    driver_tick_at: Option<u64>,
    latency: LatencySamples,
    migrations: u64,
    /// Whether the observer wants runs and occupancy ([`DecisionObserver::wants_runs`]).
    record_runs: bool,
    /// Whether the observer wants decisions ([`DecisionObserver::wants_decisions`]).
    record_decisions: bool,
    /// Records of the current event, handed over when it is done (a few at most).
    pending: Vec<Pending>,
}

impl<'a> Simulation<'a> {
    /// Names the machine in the report (the topology itself carries no name).
    pub fn set_machine_name(&mut self, name: &str) {
        name.clone_into(&mut self.machine_name);
    }
}
