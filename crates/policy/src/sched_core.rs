//! The scheduler core: the whole per-task sequence, in one place, for both frontends.
//!
//! quinn-proto's split: the caller feeds what happened with `handle_*` (time passed in), and
//! drains what to do with `poll_*`. The core reads no clock, does no I/O, allocates nothing
//! (its task storage is the caller's, [`Slot`]) and uses no randomness. The live loop and the
//! simulator differ only in what they can see, and each difference is an input here:
//!
//! | input | live loop | simulator |
//! |---|---|---|
//! | which CPUs are free | [`handle_snapshot`](SchedCore::handle_snapshot) per batch (and [`handle_snapshot_failed`](SchedCore::handle_snapshot_failed)) | [`handle_started`](SchedCore::handle_started) / [`handle_stopped`](SchedCore::handle_stopped) as they happen |
//! | a task's runs | [`Queued::last_run`], the kernel's timestamps | [`handle_stopped`](SchedCore::handle_stopped) |
//! | who waits at a slice end | [`Waiting::OwnQueue`] or [`Waiting::SharedQueue`] (the framework refills an uncontended slice silently) | the same: the engine refills an uncontended slice as the framework does |
//! | CPUs with tasks queued | [`Snapshot::queued`], or the core's claim window | exact (nothing queues on a CPU) |
//! | the loop's own CPU | [`Snapshot::caller_cpu`] | none |
//! | a second look before sending | [`handle_recheck`](SchedCore::handle_recheck) when [`wants_recheck`](SchedCore::wants_recheck) | not needed: nothing changes between decision and start |
//!
//! The sequence for one batch (the simulator's batches hold one task):
//! 1. [`handle_queued`](SchedCore::handle_queued) for each task the caller took off its queue;
//! 2. live: [`handle_snapshot`](SchedCore::handle_snapshot), which decides the batch against
//!    it; the simulator skips this and the first poll decides against the tracked state;
//! 3. live, when [`wants_recheck`](SchedCore::wants_recheck): a second snapshot to
//!    [`handle_recheck`](SchedCore::handle_recheck);
//! 4. [`poll_dispatch`](SchedCore::poll_dispatch) until `None`, sending each.
//!
//! Inside a batch, tasks whose slice ended are decided before woken ones (they were running a
//! moment ago and get their CPUs back before a short wake-up can take them); each decision
//! marks its CPU busy for the rest of the batch. A wake-up is the idle order
//! ([`Policy::select_cpu`]), a slice end the slice-end rule. Each dispatch carries its vtime
//! (the bounded-credit rule, the clock following it as the task is about to run) and its
//! slice (the base divided by the tasks waiting, or fixed).
//!
//! Between batches, [`handle_tick`](SchedCore::handle_tick) at the times
//! [`poll_timeout`](SchedCore::poll_timeout) names: the up-migration scan (a task the core sent
//! to a CPU that a now-idle CPU would serve strictly better gives a [`Nudge`], at most one per
//! gap) and the age prune (tasks not heard of for [`CoreConfig::forget_after_ns`] are
//! forgotten: the fallback for exits nobody reported). [`handle_exit`](SchedCore::handle_exit)
//! forgets a task at once.
//!
//! **When the task storage is full** a task it does not hold is decided from a fresh state
//! (no utilisation history, no vtime credit, no home) every time, and counted in
//! [`CoreStats::untracked`]. Placement stays correct (the idle order needs no history), and a
//! thread storm cannot grow the storage or evict the tasks already known.

#[cfg(feature = "testkit")]
mod audit;
mod decide;
mod io;
mod scan;
mod slots;
#[cfg(test)]
mod tests;

#[cfg(feature = "testkit")]
pub use audit::Audit;
pub use io::{
    Affinity, Arrival, Dispatch, LastRun, Nudge, Queued, Snapshot, Target, TaskId, UtilSource,
    Waiting, Waker, Why,
};
pub use slots::{Slot, StorageError};

use crate::PolicyConfig;
use crate::config::ConfigError;
use crate::cpu_set::{CpuId, CpuSet, MAX_CPUS};
use crate::cpu_state::CpuState;
use crate::idle_order::Policy;
use crate::placement_policy::PlacementPolicy;
use crate::task_state::{Run, VtimeClock};
use crate::topology::Topology;
use slots::{Record, Slots};

/// Most tasks in one batch.
pub const BATCH_MAX: usize = 64;

/// How a dispatch's slice is sized.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum SliceMode {
    /// The base slice divided by the tasks waiting (every waiter gets a turn within about one
    /// base slice), never below an eighth of it.
    #[default]
    Scaled,
    /// Always the base slice.
    Fixed,
}

/// Whether a woken task that finds no CPU idle may take a busy one from the task there.
///
/// Without it such a task waits in the shared queue until some CPU's task ends its slice, and
/// with every CPU busy live that is two waits: one for a CPU to run the user-space loop, one
/// for a slice to end. The kernel's own scheduler preempts on wake-up when the woken task is
/// owed time; this is that rule in vtime terms.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum WakePreempt {
    /// Never: the task waits in the shared queue. The default: measured in the VM
    /// (BENCHMARKS.md, issue 23, session 8), preemption moved no latency figure beyond the
    /// boots' spread and cost hackbench about 10%.
    Off,
    /// When the task the core last sent to an allowed busy CPU is, by the core's estimate, at
    /// least a base slice ([`CoreConfig::slice_ns`]) of vtime ahead of the woken task, the
    /// woken task goes to that CPU's queue and the task there is made to end its slice now
    /// ([`Target::Preempt`]). A slice is the credit a sleeper keeps, so a task that slept
    /// takes a CPU from one that has run for a while, and two busy tasks do not take turns
    /// preempting each other. The estimate is the vtime the task was sent with plus the time
    /// since (it ran all along, at nice 0): the core is not told of runs until a task comes
    /// back. The woken task's previous CPU is taken when it qualifies (its cache), else the
    /// CPU whose task is furthest ahead. A limit of that estimate: once a CPU was taken, the
    /// core counts the woken task there until it sends that CPU another, so a CPU that then
    /// took a task from the shared queue is not seen ahead again (in the simulator's test,
    /// 20 CPUs of hogs gave 20 preemptions, one each).
    SliceAhead,
}

/// Whether the core looks for tasks to up-migrate between batches.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Nudging {
    /// Never: a task moves up only at its own slice ends.
    Off,
    /// Every `every_ns`, at most one nudge per `gap_ns`.
    Scan {
        /// Time between scans.
        every_ns: u64,
        /// Shortest time between two nudges.
        gap_ns: u64,
    },
}

/// The core's settings beside the policy's knobs. [`CoreConfig::DEFAULT`] is what both
/// frontends use unless told otherwise; nothing else restates these values.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct CoreConfig {
    /// The base slice.
    pub slice_ns: u64,
    /// How slices are sized.
    pub slice: SliceMode,
    /// Without queue information in the snapshot, a CPU dispatched to this recently counts as
    /// having a task queued (it may not have picked the task up yet).
    pub claim_ns: u64,
    /// The up-migration scan.
    pub nudging: Nudging,
    /// The nudge helper's slice: it only has to be there when the nudged task's slice ends.
    pub helper_slice_ns: u64,
    /// A task not heard of for this long is forgotten (0: never).
    pub forget_after_ns: u64,
    /// Wake-up preemption.
    pub wake_preempt: WakePreempt,
}

impl CoreConfig {
    /// The defaults.
    pub const DEFAULT: Self = Self {
        slice_ns: 5_000_000,
        slice: SliceMode::Scaled,
        claim_ns: 2_000_000,
        nudging: Nudging::Scan {
            every_ns: 20_000_000,
            gap_ns: 50_000_000,
        },
        helper_slice_ns: 50_000,
        forget_after_ns: 30_000_000_000,
        wake_preempt: WakePreempt::Off,
    };

    /// How often the age prune runs.
    const PRUNE_EVERY_NS: u64 = 5_000_000_000;
}

impl Default for CoreConfig {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// What the core has counted.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct CoreStats {
    /// Tasks held now.
    pub tracked: u64,
    /// Most tasks held at once.
    pub high_water: u64,
    /// Tasks the storage holds at most.
    pub capacity: u64,
    /// Decisions for tasks the full storage did not hold.
    pub untracked: u64,
    /// Exits handled, and how many of those tasks were held.
    pub exits: u64,
    /// See [`exits`](Self::exits).
    pub exits_tracked: u64,
    /// Tasks forgotten by the age prune.
    pub forgotten: u64,
    /// Nudges given.
    pub nudges: u64,
    /// Policy answers refused: a CPU that does not exist or that the task may not use (the
    /// task went to the shared queue instead).
    pub refused: u64,
    /// Woken tasks that took a busy CPU ([`WakePreempt`]).
    pub preempts: u64,
}

/// A task in the current batch, not yet decided.
#[derive(Copy, Clone, Debug)]
struct Pending {
    task: TaskId,
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
    util: u16,
    /// The vtime it was sent with.
    vtime: u64,
    /// Its allowed CPUs are in `SchedCore::placed_allowed` (else: every CPU). Most tasks may
    /// run anywhere, and a decision then writes a few bytes instead of a whole set.
    restricted: bool,
}

/// A fixed-capacity queue (no allocation).
#[derive(Clone, Debug)]
struct Fixed<T: Copy, const N: usize> {
    items: [Option<T>; N],
    head: usize,
    len: usize,
}

impl<T: Copy, const N: usize> Fixed<T, N> {
    const fn new() -> Self {
        Self {
            items: [None; N],
            head: 0,
            len: 0,
        }
    }

    fn push(&mut self, item: T) -> Result<(), T> {
        if self.len == N {
            return Err(item);
        }
        self.items[(self.head + self.len) % N] = Some(item);
        self.len += 1;
        Ok(())
    }

    fn pop(&mut self) -> Option<T> {
        if self.len == 0 {
            return None;
        }
        let item = self.items[self.head].take();
        self.head = (self.head + 1) % N;
        self.len -= 1;
        item
    }

    fn iter(&self) -> impl Iterator<Item = &T> {
        let (head, len) = (self.head, self.len);
        self.items
            .iter()
            .enumerate()
            .filter(move |(i, _)| (i + N - head) % N < len)
            .filter_map(|(_, item)| item.as_ref())
    }

    fn iter_mut(&mut self) -> impl Iterator<Item = &mut T> {
        let (head, len) = (self.head, self.len);
        self.items
            .iter_mut()
            .enumerate()
            .filter(move |(i, _)| (i + N - head) % N < len)
            .filter_map(|(_, item)| item.as_mut())
    }
}

/// The batch's input was refused: the caller must poll the decided batch first.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct BatchFull;

impl core::fmt::Display for BatchFull {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "the batch holds {BATCH_MAX} tasks: poll it before handing over more"
        )
    }
}

impl core::error::Error for BatchFull {}

/// The scheduler core over task storage `S` (`Vec<Slot>`, `[Slot; N]`, `&mut [Slot]`),
/// running placement policy `P` (hybridland's unless told otherwise). See the [module](self)
/// docs.
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
    last_nudge_ns: Option<u64>,
    next_scan_ns: u64,
    next_prune_ns: u64,
    stats: CoreStats,
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
            last_nudge_ns: None,
            next_scan_ns: 0,
            next_prune_ns: CoreConfig::PRUNE_EVERY_NS,
            stats,
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
    pub fn set_cluster_balance(&mut self, mode: crate::ClusterBalance) -> bool {
        let Some(policy) = self.policy.hybridland_mut() else {
            return false;
        };
        policy.set_cluster_balance(mode);
        true
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

    /// A held task's utilisation and vtime.
    pub fn task(&self, task: TaskId) -> Option<crate::TaskState> {
        self.slots.get(task).map(|r| r.state)
    }

    /// Names the caller's nudge helper: when it is handed over, it goes to the CPU of the
    /// last [`Nudge`] with the helper's slice.
    pub fn set_helper(&mut self, helper: Option<TaskId>) {
        self.helper = helper;
    }

    /// Tasks waiting for a CPU besides those handed over since the last poll (the slice
    /// divisor counts both).
    pub fn handle_backlog(&mut self, waiting: u64) {
        self.backlog = waiting;
    }

    /// A task to dispatch. Decided by the next [`handle_snapshot`](Self::handle_snapshot) or
    /// poll. Refused when [`BATCH_MAX`] tasks are pending.
    pub fn handle_queued(&mut self, now_ns: u64, q: &Queued<'_>) -> Result<(), BatchFull> {
        if self.pending.len == BATCH_MAX {
            return Err(BatchFull);
        }
        let allowed = match q.affinity {
            Affinity::Cpus(set) if set == self.topo.cpus() => Allowed::All,
            Affinity::Cpus(set) => {
                let at = (self.pending.head + self.pending.len) % BATCH_MAX;
                self.pending_allowed[at] = *set;
                Allowed::Restricted(at)
            }
            Affinity::Unknown => Allowed::Unknown,
        };
        self.pending
            .push(Pending {
                task: q.task,
                arrival: q.arrival,
                cpu: q.cpu.filter(|c| self.topo.info(*c).is_some()),
                last_run: q.last_run,
                weight: q.weight,
                allowed,
                util: q.util,
                now_ns,
            })
            .map_err(|_| BatchFull)
    }

    /// The caller read the idle CPUs: the core's view becomes `snap` (homes kept), and the
    /// pending batch is decided against it.
    pub fn handle_snapshot(&mut self, now_ns: u64, snap: &Snapshot<'_>) {
        self.blind = false;
        self.queued_cpus = match snap.queued {
            Some(q) => *q,
            None => self
                .topo
                .cpus()
                .iter()
                .filter(|c| {
                    self.last_sent[c.index()]
                        .is_some_and(|at| now_ns.saturating_sub(at) < self.config.claim_ns)
                })
                .collect(),
        };
        self.caller_cpu = snap.caller_cpu.filter(|c| self.topo.info(*c).is_some());
        let mut free = snap.idle.and_not(&self.queued_cpus);
        // The caller's CPU runs only the caller, which yields it right after the batch: it is
        // often the one a woken task last ran on. Not when a task of the batch was preempted
        // there: that task gets it back, and a woken one would push it off its core.
        if let Some(c) = self.caller_cpu
            && !self.queued_cpus.contains(c)
            && !self
                .pending
                .iter()
                .any(|p| matches!(p.arrival, Arrival::SliceEnd { .. }) && p.cpu == Some(c))
        {
            free.insert(c);
        }
        self.state.reset_idle(&self.topo, &free);
        self.decide_pending();
    }

    /// The caller could not read the idle CPUs: the pending batch goes to the shared queue.
    pub fn handle_snapshot_failed(&mut self, _now_ns: u64) {
        self.blind = true;
        self.decide_pending();
        self.blind = false;
    }

    /// Whether a decided, unpolled dispatch went to a CPU that was idle in the snapshot (the
    /// caller's own CPU aside): a second snapshot can find it taken meanwhile.
    pub fn wants_recheck(&mut self) -> bool {
        self.outgoing.iter_mut().any(|o| o.check.is_some())
    }

    /// The caller's second look: each unpolled dispatch to a CPU that is no longer free (busy,
    /// or with tasks in its own queue) goes to the shared queue instead, where the first CPU
    /// to free up takes it, rather than waiting behind whatever runs there now.
    pub fn handle_recheck(&mut self, snap: &Snapshot<'_>) {
        let free = match snap.queued {
            Some(q) => snap.idle.and_not(q),
            None => *snap.idle,
        };
        let mut stale = CpuSet::EMPTY;
        for o in self.outgoing.iter_mut() {
            if let Some(cpu) = o.check.take()
                && !free.contains(cpu)
            {
                o.dispatch.target = Target::Shared;
                o.dispatch.why = Why::Stale(cpu);
                stale.insert(cpu);
            }
        }
        for cpu in stale.iter() {
            self.clear_placed(cpu);
        }
    }

    /// The next decided task, deciding the pending batch first if no snapshot did.
    pub fn poll_dispatch(&mut self) -> Option<Dispatch> {
        if self.outgoing.len == 0 && self.pending.len > 0 {
            self.decide_pending();
        }
        self.outgoing.pop().map(|o| o.dispatch)
    }

    /// The next up-migration to carry out.
    pub fn poll_nudge(&mut self) -> Option<Nudge> {
        self.nudges.pop()
    }

    /// When the core wants [`handle_tick`](Self::handle_tick) next: `None` when there is
    /// nothing to scan or forget.
    pub fn poll_timeout(&self) -> Option<u64> {
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
    }

    /// Time passed: runs the scan and the prune when due.
    pub fn handle_tick(&mut self, now_ns: u64) {
        if now_ns >= self.next_prune_ns {
            self.next_prune_ns = now_ns.saturating_add(CoreConfig::PRUNE_EVERY_NS);
            self.prune(now_ns);
        }
        if let Nudging::Scan { every_ns, gap_ns } = self.config.nudging
            && now_ns >= self.next_scan_ns
        {
            self.next_scan_ns = now_ns.saturating_add(every_ns);
            self.scan(now_ns, gap_ns);
        }
    }

    /// Task `task` exited: it is forgotten at once, with its home. Returns whether the core
    /// held it.
    pub fn handle_exit(&mut self, task: TaskId) -> bool {
        self.stats.exits += 1;
        let Some(rec) = self.slots.remove(task) else {
            return false;
        };
        self.stats.exits_tracked += 1;
        if let Some(home) = rec.home {
            self.state.leave_home(&self.topo, home);
        }
        true
    }

    /// (Tracked state.) Task `task` starts running on `cpu`: the CPU is busy, and the task's
    /// home moves there.
    pub fn handle_started(&mut self, task: TaskId, cpu: CpuId) {
        self.state.occupy(&self.topo, cpu);
        if let Some(rec) = self.slots.get_mut(task)
            && rec.home != Some(cpu)
        {
            self.state.move_home(&self.topo, rec.home, cpu);
            rec.home = Some(cpu);
        }
    }

    /// (Tracked state.) Task `task` stopped running on `cpu` after `run`: the CPU is idle,
    /// and the run is counted.
    pub fn handle_stopped(&mut self, task: TaskId, cpu: CpuId, run: LastRun, weight: u32) {
        self.state.release(&self.topo, cpu);
        let capacity = self.topo.info(cpu).map_or(0, |i| i.capacity);
        if let Some(rec) = self.slots.entry(task) {
            rec.seen_ns = rec.seen_ns.max(run.stop_ns);
            let _counted = rec.state.on_run(&Run {
                cpu,
                capacity,
                start_ns: run.start_ns,
                stop_ns: run.stop_ns,
                weight,
            });
        }
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

    fn clear_placed(&mut self, cpu: CpuId) {
        self.placed[cpu.index()] = None;
        self.placed_cpus.remove(cpu);
    }
}

/// A core that cannot be built.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum CoreError {
    /// The policy's knobs do not fit the machine.
    Config(ConfigError),
    /// The task storage is unusable.
    Storage(StorageError),
}

impl core::fmt::Display for CoreError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::Config(e) => e.fmt(f),
            Self::Storage(e) => e.fmt(f),
        }
    }
}

impl core::error::Error for CoreError {}
