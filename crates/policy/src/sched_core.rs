//! The scheduler core: the whole per-task sequence, in one place, for both frontends (see
//! [`SchedCore`]).

#[cfg(feature = "testkit")]
mod audit;
mod config;
mod decide;
mod fixed;
mod handlers;
mod input;
mod io;
mod scan;
mod slots;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod view_tests;

pub use crate::task_id::TaskKey;
#[cfg(feature = "testkit")]
pub use audit::Audit;
pub use config::{CoreConfig, CoreError, CoreStats, Nudging, SliceMode, WakePreempt};
pub use input::{
    Input, InputError, InputOf, Occupancy, Output, OwnedInput, OwnedQueued, OwnedSnapshot, TimeNs,
};
pub use io::{
    Affinity, Arrival, Classed, Dispatch, LastRun, Life, Nudge, Queued, Snapshot, Target, TaskId,
    UtilSource, Waiting, Waker, Why,
};
pub use slots::{Slot, StorageError};

use crate::PolicyConfig;
use crate::cpu_set::{CpuId, CpuSet, MAX_CPUS};
use crate::cpu_state::CpuState;
use crate::idle_order::Policy;
use crate::placement_policy::PlacementPolicy;
use crate::task_state::VtimeClock;
use crate::topology::Topology;
use fixed::Fixed;
use slots::{Record, Slots};

/// Most tasks in one batch.
pub const BATCH_MAX: usize = 64;

/// The least time between two [`Classed`] for one task: a task whose estimate hovers at a
/// class boundary is written to the kernel at most this often.
pub const CLASS_HOLD_NS: u64 = 10_000_000;

/// A task in the current batch, not yet decided.
#[derive(Copy, Clone, Debug)]
struct Pending {
    task: TaskId,
    life: Life,
    token: u32,
    arrival: Arrival,
    cpu: Option<CpuId>,
    last_run: Option<LastRun>,
    weight: u32,
    allowed: Allowed,
    util: UtilSource,
    now_ns: u64,
}

/// A pending task's affinity. Most tasks may run anywhere: a restricted set is kept apart
/// (`SchedCore::pending_allowed`), so handing a task over copies a few bytes, not a set.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Allowed {
    All,
    /// In `pending_allowed` at this position of the batch's ring.
    Restricted(usize),
    Unknown,
}

/// A decided task not yet polled, and the CPU a recheck looks at.
#[derive(Copy, Clone, Debug)]
struct Outgoing {
    dispatch: Dispatch,
    check: Option<CpuId>,
}

/// The last task sent to a CPU, as the up-migration scan needs it.
#[derive(Copy, Clone, Debug)]
struct PlacedTask {
    task: TaskId,
    /// The utilisation the decision read.
    util: u16,
    /// That utilisation was the caller's hint ([`UtilSource::Hint`]), not the estimate.
    hinted: bool,
    /// The vtime it was sent with.
    vtime: u64,
    /// When it was sent (the decision's time).
    sent_ns: u64,
    /// Its allowed CPUs are in `SchedCore::placed_allowed` (else: every CPU). Most tasks may
    /// run anywhere, and a decision then writes a few bytes instead of a whole set.
    restricted: bool,
}

/// The scheduler core over task storage `S` (`Vec<Slot>`, `[Slot; N]`, `&mut [Slot]`),
/// running placement policy `P` (hybridland's unless told otherwise).
///
/// quinn-proto's split: the caller hands over what happened as one [`Input`] value with the
/// time it happened ([`SchedCore::handle`]), and drains what to do as [`Output`] values
/// ([`SchedCore::poll`]). The core reads no clock, does no I/O, allocates nothing (its task
/// storage is the caller's, [`Slot`]) and uses no randomness. The live loop and the simulator
/// differ only in what they can see, and each difference is an input here. Which of the two
/// the caller is, is the core's [`Occupancy`] ([`CoreConfig::occupancy`]): an input of the
/// other kind is refused with [`InputError::WrongOccupancy`].
///
/// | what | live loop ([`Occupancy::Snapshots`]) | simulator ([`Occupancy::Tracked`]) |
/// |---|---|---|
/// | which CPUs are free | [`Input::Snapshot`](InputOf::Snapshot) per batch (and [`Input::SnapshotFailed`](InputOf::SnapshotFailed)) | [`Input::Started`](InputOf::Started) / [`Input::Stopped`](InputOf::Stopped) as they happen |
/// | a task's runs | [`Queued::last_run`], the kernel's timestamps | [`Input::Stopped`](InputOf::Stopped) |
/// | who waits at a slice end | [`Waiting::OwnQueue`] or [`Waiting::SharedQueue`] (the framework refills an uncontended slice silently) | the same: the engine refills an uncontended slice as the framework does |
/// | CPUs with tasks queued | [`Snapshot::queued`], or the core's claim window | exact (nothing queues on a CPU) |
/// | the loop's own CPU | [`Snapshot::caller_cpu`] | none |
/// | a second look before sending | [`Input::Recheck`](InputOf::Recheck) when [`wants_recheck`](SchedCore::wants_recheck) | not needed: nothing changes between decision and start |
///
/// The sequence for one batch (the simulator's batches hold one task):
/// 1. [`Input::Queued`](InputOf::Queued) for each task the caller took off its queue;
/// 2. live: [`Input::Snapshot`](InputOf::Snapshot), which decides the batch against it; the simulator skips this
///    and the first poll decides against the tracked state;
/// 3. live, when [`wants_recheck`](SchedCore::wants_recheck): a second snapshot as
///    [`Input::Recheck`](InputOf::Recheck);
/// 4. [`poll`](SchedCore::poll) until `None`, sending each [`Output::Dispatch`] (its
///    [`Dispatch::token`] is the one the caller gave with the task).
///
/// Inside a batch, tasks whose slice ended are decided before woken ones (they were running a
/// moment ago and get their CPUs back before a short wake-up can take them); each decision
/// marks its CPU busy for the rest of the batch. A woken task of the batch that finds no idle
/// CPU it may use makes one slice end on a CPU it may use contended, as a task waiting in the
/// shared queue does, so that CPU's task goes back in line rather than keeping the CPU for
/// another slice while the woken one waits behind it. A wake-up is the idle order
/// (`Policy::select_cpu`), a slice end the slice-end rule. Each dispatch carries its vtime
/// (the bounded-credit rule, the clock following it as the task is about to run) and its
/// slice (the base divided by the tasks waiting, or fixed).
///
/// Between batches, [`Input::Tick`](InputOf::Tick) at the times [`poll_timeout`](SchedCore::poll_timeout)
/// names: the up-migration scan (a task the core sent to a CPU that a now-idle CPU would serve
/// strictly better gives an [`Output::Nudge`], at most one per gap) and the age prune (tasks
/// not heard of for [`CoreConfig::forget_after_ns`] are forgotten: the fallback for exits
/// nobody reported). [`Input::Exit`](InputOf::Exit) forgets a task at once.
///
/// **When the task storage is full** a task it does not hold is decided from a fresh state
/// (no utilisation history, no vtime credit, no home) every time, and counted in
/// [`CoreStats::untracked`]. Placement stays correct (the idle order needs no history), and a
/// thread storm cannot grow the storage or evict the tasks already known.
pub struct SchedCore<S, P = Policy> {
    topo: Topology,
    policy: P,
    config: CoreConfig,
    slots: Slots<S>,
    /// The record used for a task the full storage does not hold; reset before each use.
    scratch: Record,
    clock: VtimeClock,
    /// Idle CPUs as the core knows them, and the tasks' homes.
    state: CpuState,
    /// CPUs with tasks in their own queue, per the last snapshot (after the claim window).
    queued_cpus: CpuSet,
    /// The caller's own CPU in the last snapshot.
    caller_cpu: Option<CpuId>,
    /// The last snapshot failed.
    blind: bool,
    /// Tasks waiting besides the batch (the caller's count).
    backlog: u64,
    pending: Fixed<Pending, BATCH_MAX>,
    pending_allowed: [CpuSet; BATCH_MAX],
    outgoing: Fixed<Outgoing, BATCH_MAX>,
    /// Per CPU: when the core last dispatched to it.
    last_sent: [Option<u64>; MAX_CPUS],
    placed: [Option<PlacedTask>; MAX_CPUS],
    /// The CPUs with an entry in `placed`: the timer asks whether there is any on every loop
    /// iteration, and the scan visits only these.
    placed_cpus: CpuSet,
    placed_allowed: [CpuSet; MAX_CPUS],
    helper: Option<TaskId>,
    /// The CPU the helper is to be sent to.
    helper_target: Option<CpuId>,
    nudges: Fixed<Nudge, 1>,
    /// Whether the policy has a fast-path table, so tasks are classed.
    classing: bool,
    classes: Fixed<Classed, BATCH_MAX>,
    last_nudge_ns: Option<u64>,
    next_scan_ns: u64,
    next_prune_ns: u64,
    stats: CoreStats,
    /// The last generation stamped on a record ([`TaskKey::generation`]).
    generation: u32,
    /// The policy's value for the task being asked about, as the [`View`](crate::View)
    /// reads and writes it, kept into its record (`memo_key`) after the answer.
    memo: core::cell::Cell<u64>,
    memo_key: Option<TaskKey>,
    #[cfg(feature = "testkit")]
    audit: Option<Audit>,
}

impl<S: AsRef<[Slot]> + AsMut<[Slot]>> SchedCore<S, Policy> {
    /// A core for `topo` running hybridland with the knobs `policy` and the core's `config`,
    /// keeping task state in `storage` (a power-of-two number of slots: [`Slot::count_for`]).
    pub fn new(
        topo: Topology,
        policy: &PolicyConfig,
        config: CoreConfig,
        storage: S,
    ) -> Result<Self, CoreError> {
        let policy = Policy::new(&topo, policy).map_err(CoreError::Config)?;
        Self::with_policy(topo, policy, config, storage)
    }
}

impl<S: AsRef<[Slot]> + AsMut<[Slot]>, P: PlacementPolicy> SchedCore<S, P> {
    /// A core for `topo` running `policy` with the core's `config`, keeping task state in
    /// `storage` (a power-of-two number of slots: [`Slot::count_for`]).
    pub fn with_policy(
        topo: Topology,
        policy: P,
        config: CoreConfig,
        storage: S,
    ) -> Result<Self, CoreError> {
        let slots = Slots::new(storage).map_err(CoreError::Storage)?;
        let state = CpuState::all_idle(&topo);
        let classing = policy.wake_table(&topo).is_some();
        let stats = CoreStats {
            capacity: slots.capacity() as u64,
            ..CoreStats::default()
        };
        Ok(Self {
            topo,
            policy,
            config,
            slots,
            scratch: Record::default(),
            clock: VtimeClock::new(),
            state,
            queued_cpus: CpuSet::EMPTY,
            caller_cpu: None,
            blind: false,
            backlog: 0,
            pending: Fixed::new(),
            pending_allowed: [CpuSet::EMPTY; BATCH_MAX],
            outgoing: Fixed::new(),
            last_sent: [None; MAX_CPUS],
            placed: [None; MAX_CPUS],
            placed_cpus: CpuSet::EMPTY,
            placed_allowed: [CpuSet::EMPTY; MAX_CPUS],
            helper: None,
            helper_target: None,
            nudges: Fixed::new(),
            classing,
            classes: Fixed::new(),
            last_nudge_ns: None,
            next_scan_ns: 0,
            next_prune_ns: CoreConfig::PRUNE_EVERY_NS,
            stats,
            generation: 0,
            memo: core::cell::Cell::new(0),
            memo_key: None,
            #[cfg(feature = "testkit")]
            audit: None,
        })
    }

    /// The machine.
    pub fn topology(&self) -> &Topology {
        &self.topo
    }

    /// The policy (read-only: its answers are the core's to ask for).
    pub fn policy(&self) -> &P {
        &self.policy
    }

    /// Hybridland's knobs in force, when the policy is hybridland.
    pub fn policy_config(&self) -> Option<&PolicyConfig> {
        self.policy.hybridland().map(Policy::config)
    }

    /// The core's settings.
    pub fn config(&self) -> &CoreConfig {
        &self.config
    }

    /// Changes hybridland's cluster-balance mode (a runtime knob). Returns whether the policy
    /// has that knob (only hybridland has).
    fn set_cluster_balance(&mut self, mode: crate::ClusterBalance) -> bool {
        let Some(policy) = self.policy.hybridland_mut() else {
            return false;
        };
        policy.set_cluster_balance(mode);
        true
    }

    /// Changes the policy's own knob `index` to `value`, once checked against its
    /// declaration.
    fn set_knob(&mut self, index: u16, value: i64) -> Result<(), InputError> {
        let spec = self
            .policy
            .knobs()
            .get(usize::from(index))
            .ok_or(InputError::UnknownKnob { index })?;
        spec.check(value).map_err(|_| InputError::KnobOutOfRange {
            knob: spec.name,
            value,
        })?;
        self.policy.set_knob(usize::from(index), value);
        Ok(())
    }

    /// The idle CPUs and homes the next decision reads.
    pub fn state(&self) -> &CpuState {
        &self.state
    }

    /// What the core has counted.
    pub fn stats(&self) -> CoreStats {
        CoreStats {
            tracked: self.slots.len() as u64,
            high_water: self.slots.high_water() as u64,
            ..self.stats
        }
    }

    /// The shared queue's vtime clock.
    pub fn vtime_now(&self) -> u64 {
        self.clock.now()
    }

    /// A held task's key ([`TaskKey`]) and the policy's value for it
    /// ([`View::task_value`](crate::View::task_value)).
    pub fn task_value(&self, task: TaskId) -> Option<(TaskKey, u64)> {
        self.slots.get(task).map(|r| {
            let key = TaskKey {
                id: task,
                generation: r.generation,
            };
            (key, r.value)
        })
    }

    /// A held task's utilisation and vtime.
    pub fn task(&self, task: TaskId) -> Option<crate::TaskState> {
        self.slots.get(task).map(|r| r.state)
    }

    /// The class the core last gave out for `task` ([`Classed`]): the one the fast path walks
    /// with. Class 0 for a task never classed.
    pub fn task_class(&self, task: TaskId) -> crate::TaskClass {
        self.slots
            .get(task)
            .map_or(crate::TaskClass(0), |r| r.class)
    }

    /// Names the caller's nudge helper: when it is handed over, it goes to the CPU of the
    /// last [`Nudge`] with the helper's slice.
    pub fn set_helper(&mut self, helper: Option<TaskId>) {
        self.helper = helper;
    }

    /// Hands over what happened at `now`. Each input's docs say what it does; nothing of a
    /// refused input is applied. Does the work of one decision per pending task when the
    /// input decides a batch ([`Input::Snapshot`](InputOf::Snapshot), [`Input::SnapshotFailed`](InputOf::SnapshotFailed)), of one scan
    /// over the CPUs the core placed tasks on for a due [`Input::Tick`](InputOf::Tick), and a few field
    /// updates otherwise.
    pub fn handle(&mut self, now: TimeNs, input: Input<'_>) -> Result<(), InputError> {
        if let Some(mode) = input.occupancy()
            && mode != self.config.occupancy
        {
            return Err(InputError::WrongOccupancy {
                input: input.name(),
                core: self.config.occupancy,
            });
        }
        let now_ns = now.ns();
        match input {
            Input::Queued(q) => self.handle_queued(now_ns, &q)?,
            Input::Snapshot(snap) => self.handle_snapshot(now_ns, &snap),
            Input::SnapshotFailed => self.handle_snapshot_failed(),
            Input::Recheck(snap) => self.handle_recheck(&snap),
            Input::Backlog { waiting } => self.backlog = waiting,
            Input::Tick => self.handle_tick(now_ns),
            Input::Exit { task, life } => self.handle_exit(task, life),
            Input::Started { task, cpu } => self.handle_started(task, cpu),
            Input::Stopped {
                task,
                cpu,
                run,
                weight,
            } => self.handle_stopped(task, cpu, run, weight),
            Input::Placed {
                woken,
                cpu,
                class,
                woke,
            } => self.handle_placed(now_ns, &woken, cpu, class, woke.ns()),
            Input::ClusterBalance { mode } => {
                if !self.set_cluster_balance(mode) {
                    return Err(InputError::NoSuchKnob {
                        input: input.name(),
                    });
                }
            }
            Input::Knob { index, value } => self.set_knob(index, value)?,
        }
        Ok(())
    }

    /// The next decision: the decided batch's dispatches first (deciding the pending batch
    /// first if no snapshot did), then a nudge the last tick found.
    #[must_use]
    pub fn poll(&mut self) -> Option<Output> {
        if let Some(d) = self.poll_dispatch() {
            return Some(Output::Dispatch(d));
        }
        if let Some(n) = self.nudges.pop() {
            return Some(Output::Nudge(n));
        }
        self.classes.pop().map(Output::Class)
    }

    /// When the core wants [`Input::Tick`](InputOf::Tick) next: `None` when there is nothing to scan or
    /// forget.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<TimeNs> {
        let scan = match self.config.nudging {
            Nudging::Scan { .. } if self.placed_any() => Some(self.next_scan_ns),
            _ => None,
        };
        let prune =
            (self.config.forget_after_ns > 0 && self.slots.len() > 0).then_some(self.next_prune_ns);
        match (scan, prune) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
        .map(TimeNs)
    }

    /// Whether a decided, unpolled dispatch went to a CPU that was idle in the snapshot (the
    /// caller's own CPU aside): a second snapshot ([`Input::Recheck`](InputOf::Recheck)) can find it taken
    /// meanwhile.
    #[must_use]
    pub fn wants_recheck(&self) -> bool {
        self.outgoing.iter().any(|o| o.check.is_some())
    }

    fn placed_any(&self) -> bool {
        !self.placed_cpus.is_empty()
    }

    fn set_placed(&mut self, cpu: CpuId, placed: PlacedTask) {
        self.placed[cpu.index()] = Some(placed);
        self.placed_cpus.insert(cpu);
    }

    /// The task the core last sent to `cpu`, while it counts it there.
    #[cfg(test)]
    fn placed_task(&self, cpu: CpuId) -> Option<TaskId> {
        self.placed[cpu.index()].map(|p| p.task)
    }

    /// Stamps a new record with the next generation (1 and up); a stamped one keeps its own.
    fn stamp(next: &mut u32, rec: &mut Record) -> u32 {
        if rec.generation == 0 {
            *next = next.checked_add(1).unwrap_or(1);
            rec.generation = *next;
        }
        rec.generation
    }

    /// Sets the value the next question's [`View`](crate::View) shows for `key`.
    fn ask_about(&mut self, key: TaskKey, value: u64) {
        self.memo.set(value);
        self.memo_key = Some(key);
    }

    /// Keeps what the policy left in the view's value in the asked task's record, if it is
    /// still the record the question was about.
    fn keep_memo(&mut self) {
        let Some(key) = self.memo_key.take() else {
            return;
        };
        if let Some(rec) = self.slots.get_mut(key.id)
            && rec.generation == key.generation
        {
            rec.value = self.memo.get();
        }
    }

    fn clear_placed(&mut self, cpu: CpuId) {
        self.placed[cpu.index()] = None;
        self.placed_cpus.remove(cpu);
    }
}
