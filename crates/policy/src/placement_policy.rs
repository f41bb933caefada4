//! The one interface every placement policy implements, hybridland's and the baselines' alike,
//! and that the scheduler core ([`SchedCore`](crate::SchedCore)) drives in both worlds.
//!
//! A policy answers three questions and owns nothing else: where a waking task runs, what a
//! task does at the end of its slice, and (optionally) whether a running task should move up.
//! Everything around those answers (task state, utilisation, vtime, slices, the batch, the
//! claim window, rechecks, nudges, exits) is the core's, so a policy written here runs in
//! `hybrid-sim` and in `scx_hybridland` with the same sequence around it.
//!
//! The questions are asked with a [`View`], which only the core can build: outside this crate
//! a policy can be implemented and handed to a core, but its answers cannot be asked for
//! directly, so no frontend can grow a sequence of its own around them. This does not compile
//! (`error[E0451]: fields ... of struct View are private`):
//!
//! ```compile_fail,E0451
//! use hybridland_policy::*;
//! fn ask(p: &mut dyn PlacementPolicy, topo: &Topology, state: &CpuState, all: &CpuSet) -> Placement {
//!     let memo = core::cell::Cell::new(0);
//!     let view = View { topo, state, allowed: all, prev_cpu: None, util: 0, weight: 100,
//!                       waker_cpu: None, sync_waker: None, now_ns: 0, contended: false,
//!                       task: TaskKey::default(), memo: &memo };
//!     p.wakeup(&view)
//! }
//! ```
//!
//! and neither does asking hybridland's rules directly (`error[E0624]: method select_cpu is
//! private`):
//!
//! ```compile_fail,E0624
//! use hybridland_policy::*;
//! fn ask(p: &Policy, topo: &Topology, state: &CpuState, all: &CpuSet) -> Placement {
//!     p.select_cpu(topo, state, &TaskHints::new(all))
//! }
//! ```

use crate::cpu_set::{CpuId, CpuSet};
use crate::cpu_state::CpuState;
use crate::fast_wake::{TaskClass, WakeTable};
use crate::idle_order::{Placement, Policy, Reach, TaskHints};
use crate::knob::KnobSpec;
use crate::migration::{SliceEnd, step_of};
use crate::task_id::TaskKey;
use crate::topology::Topology;
use core::cell::Cell;

/// The machine and the task at one decision, as the scheduler core sees them: what the core
/// knows at the moment of the question. Each getter says what it is and when the core last
/// updated it. The questions are asked at three moments: a wake-up
/// ([`PlacementPolicy::wakeup`]), a slice end the caller handed over
/// ([`PlacementPolicy::slice_end`]), and between batches for a task the core sent to a CPU
/// and counts running there ([`PlacementPolicy::up_migration`], the scan at
/// [`Input::Tick`](crate::InputOf::Tick)).
#[derive(Copy, Clone, Debug)]
pub struct View<'a> {
    pub(crate) topo: &'a Topology,
    pub(crate) state: &'a CpuState,
    pub(crate) allowed: &'a CpuSet,
    pub(crate) prev_cpu: Option<CpuId>,
    pub(crate) util: u16,
    pub(crate) weight: u32,
    pub(crate) waker_cpu: Option<CpuId>,
    pub(crate) sync_waker: Option<CpuId>,
    pub(crate) now_ns: u64,
    pub(crate) contended: bool,
    pub(crate) task: TaskKey,
    pub(crate) memo: &'a Cell<u64>,
}

impl<'a> View<'a> {
    /// The machine, as the core was built with it (never changes).
    pub fn topology(&self) -> &'a Topology {
        self.topo
    }

    /// Which CPUs are idle (and the tasks' homes), as the core knows them at the question:
    /// live, the batch's idle snapshot with the CPUs given to earlier tasks of the same batch
    /// marked busy; in the simulator, every start and stop as it happened. At a slice end the
    /// task's own CPU counts as busy: it was running there a moment ago. For up-migration,
    /// the state at the tick: the last snapshot and the decisions since.
    pub fn state(&self) -> &'a CpuState {
        self.state
    }

    /// The CPUs the task may run on: as handed over with the task ([`Queued::affinity`](crate::Queued::affinity)) for
    /// a wake-up or a slice end; for up-migration, as handed over when the core last sent
    /// it.
    pub fn allowed(&self) -> &'a CpuSet {
        self.allowed
    }

    /// The allowed CPUs that are idle.
    pub fn idle_allowed(&self) -> CpuSet {
        self.allowed.and(self.state.idle())
    }

    /// Where the task ran last, as handed over with it ([`Queued::cpu`](crate::Queued::cpu)); at a slice end, or
    /// when up-migration is asked, the CPU it runs on.
    pub fn prev_cpu(&self) -> Option<CpuId> {
        self.prev_cpu
    }

    /// Its utilisation, 0..=1024, at [`now_ns`](Self::now_ns): the core's estimate
    /// ([`UtilEstimate`](crate::UtilEstimate)) or, for a task handed over with
    /// [`UtilSource::Hint`](crate::UtilSource::Hint), the hint.
    ///
    /// - At a wake-up: the estimate after the task's reported runs, decayed over its sleep to
    ///   the wake-up.
    /// - At a slice end: the estimate after the run that just ended.
    /// - For up-migration: the estimate from the task's slot brought up to the tick, the task
    ///   having waited from its last update until the core sent it and run on its CPU since
    ///   (so a CPU-bound task that never wakes still grows towards its CPU's capacity).
    ///
    /// A task the full storage does not hold reads 0 (no history), or at up-migration what its
    /// last decision read.
    pub fn util(&self) -> u16 {
        self.util
    }

    /// Its weight (100 for nice 0): as handed over with the task ([`Queued::weight`](crate::Queued::weight)) at a
    /// wake-up or a slice end; for up-migration, the last weight the core was handed for it
    /// (with the task or a stopped run), 100 for a task the storage does not hold.
    pub fn weight(&self) -> u32 {
        self.weight
    }

    /// For a wake-up by another task: the CPU the waker ran on, when the caller knows it
    /// (handed over with the task). `None` at a slice end and for up-migration.
    pub fn waker_cpu(&self) -> Option<CpuId> {
        self.waker_cpu
    }

    /// For a synchronous wake-up (the waker said it sleeps right after: live, the kernel's
    /// sync flag, known only to the fast path; simulated, a waker that blocked right after
    /// its wake step) whose waker's CPU has nothing else waiting (nothing in its queue, not
    /// given to an earlier task of the batch): the waker's CPU. `None` otherwise, at a slice
    /// end and for up-migration.
    pub fn sync_waker(&self) -> Option<CpuId> {
        self.sync_waker
    }

    /// The caller's time of the question: when the task was handed over (wake-up, slice
    /// end), or the tick's time (up-migration).
    pub fn now_ns(&self) -> u64 {
        self.now_ns
    }

    /// At a slice end: whether another task waits for the task's CPU (in its own queue, the
    /// shared queue, as handed over with the task, or given it earlier in the same batch, or a
    /// task woken in the same batch that may run there and finds nothing idle). `false` at a
    /// wake-up and for up-migration.
    pub fn contended(&self) -> bool {
        self.contended
    }

    /// The task asked about: its id and which life of that id it is ([`TaskKey`]; generation
    /// 0 for a task the full storage does not hold).
    pub fn task(&self) -> TaskKey {
        self.task
    }

    /// The policy's own value for the task: a `u64` kept in the core's record of it (no
    /// allocation; what it means is the policy's: a counter, a timestamp, packed flags), as
    /// the policy last left it with [`set_task_value`](Self::set_task_value) at any question
    /// about the task. 0 for a task the core starts a record for: on first sight, after an
    /// exit or after the age prune forgot it (a reused id is a new task, [`TaskKey`]), and
    /// always for a task the full storage does not hold.
    pub fn task_value(&self) -> u64 {
        self.memo.get()
    }

    /// Sets the task's value ([`task_value`](Self::task_value)); the core keeps it when the
    /// answer is given.
    pub fn set_task_value(&self, value: u64) {
        self.memo.set(value);
    }

    /// The answer "run on `cpu`", labelled with the step of the idle order `cpu` belongs to
    /// on this state (so per-step counts mean the same for every policy). `None`: nothing
    /// idle, the task waits in the shared queue.
    pub fn place_on(&self, cpu: Option<CpuId>) -> Placement {
        match cpu {
            Some(cpu) => Placement {
                cpu: Some(cpu),
                step: step_of(self.topo, self.state, cpu),
                reach: Reach::Primary,
            },
            None => Placement::NO_IDLE,
        }
    }

    pub(crate) fn hints(&self) -> TaskHints<'a> {
        TaskHints {
            allowed: self.allowed,
            prev_cpu: self.prev_cpu,
            util: self.util,
            sync_waker: self.sync_waker,
        }
    }
}

/// A placement policy the scheduler core runs. See the module docs in `src/placement_policy.rs`.
///
/// The core checks every answer: a CPU that does not exist or that the task may not use is
/// refused (the task goes to the shared queue, counted in
/// [`CoreStats::refused`](crate::CoreStats::refused)).
pub trait PlacementPolicy {
    /// The policy's name, as `--policy` takes it.
    fn name(&self) -> &str;

    /// Where a waking task should run: an idle allowed CPU ([`View::place_on`] labels one), or
    /// [`Placement::NO_IDLE`] for the shared queue, where the first allowed CPU to free up
    /// takes it.
    fn wakeup(&mut self, view: &View<'_>) -> Placement;

    /// The end of the slice of a task that was running on [`View::prev_cpu`] (busy in the
    /// view). The default keeps it there unless [`up_migration`](Self::up_migration) has a
    /// better CPU for it (the core's nudge brings a task back to a slice end for that, and
    /// finds nobody waiting once the helper has run); when someone waits for that CPU
    /// ([`View::contended`]) it goes where [`wakeup`](Self::wakeup) would place it if an
    /// allowed CPU is idle (no CPU stays idle while a task waits), else to the back of the
    /// queue.
    fn slice_end(&mut self, view: &View<'_>) -> SliceEnd {
        if !view.contended() {
            return self
                .up_migration(view)
                .map_or(SliceEnd::Keep, SliceEnd::Move);
        }
        if view.idle_allowed().is_empty() {
            return SliceEnd::Yield;
        }
        let placement = self.wakeup(view);
        match placement.cpu {
            Some(cpu) if Some(cpu) != view.prev_cpu() => SliceEnd::Move(placement),
            _ => SliceEnd::Yield,
        }
    }

    /// Asked between batches for a task the core sent to [`View::prev_cpu`] and that runs
    /// there now: an idle CPU that would serve it strictly better. [`View::util`] is the
    /// task's estimate brought up to the tick, [`View::weight`] its last known weight. The core nudges the CPU so
    /// the task's next slice end takes the move. The default never moves a running task.
    fn up_migration(&mut self, _view: &View<'_>) -> Option<Placement> {
        None
    }

    /// The idle order as tables an in-kernel fast path walks ([`WakeTable`]), when the
    /// policy's [`wakeup`](Self::wakeup) answer is exactly [`WakeTable::decide`]'s whenever an
    /// allowed CPU is free. The default has none: every wake-up takes the round trip to the
    /// core.
    fn wake_table(&self, _topo: &Topology) -> Option<WakeTable> {
        None
    }

    /// The class a task of utilisation `util` walks the table with ([`Policy::class_of`]).
    /// Asked only when [`wake_table`](Self::wake_table) gives one.
    fn class_of(&self, _topo: &Topology, _util: u16) -> TaskClass {
        TaskClass(0)
    }

    /// The policy's own knobs, in the order [`set_knob`](Self::set_knob) indexes them: the
    /// list its [`CustomPolicy::knobs`] declares (the core checks a change against it). The
    /// default declares none.
    fn knobs(&self) -> &'static [KnobSpec] {
        &[]
    }

    /// Knob `index` of [`knobs`](Self::knobs) changed to `value` while running
    /// ([`Input::Knob`](crate::InputOf::Knob)); the core has checked `value` against the
    /// knob's range. The values at build are [`CustomPolicy::build`]'s.
    fn set_knob(&mut self, _index: usize, _value: i64) {}

    /// The hybridland rules behind this policy, if it is hybridland: for its runtime knobs
    /// and for the checkers that test its answers against the shared invariants.
    fn hybridland(&self) -> Option<&Policy> {
        None
    }

    /// See [`hybridland`](Self::hybridland).
    fn hybridland_mut(&mut self) -> Option<&mut Policy> {
        None
    }
}

/// The hybridland policy: the idle order, the slice-end rule and up-migration.
impl PlacementPolicy for Policy {
    fn name(&self) -> &str {
        "hybridland"
    }

    fn wakeup(&mut self, view: &View<'_>) -> Placement {
        self.select_cpu(view.topo, view.state, &view.hints())
    }

    fn slice_end(&mut self, view: &View<'_>) -> SliceEnd {
        Self::slice_end(self, view.topo, view.state, &view.hints(), view.contended)
    }

    fn up_migration(&mut self, view: &View<'_>) -> Option<Placement> {
        let cpu = view.prev_cpu?;
        Self::up_migration(self, view.topo, view.state, cpu, &view.hints())
    }

    fn wake_table(&self, topo: &Topology) -> Option<WakeTable> {
        Some(Self::wake_table(self, topo))
    }

    fn class_of(&self, topo: &Topology, util: u16) -> TaskClass {
        Self::class_of(self, topo, util)
    }

    fn hybridland(&self) -> Option<&Policy> {
        Some(self)
    }

    fn hybridland_mut(&mut self) -> Option<&mut Policy> {
        Some(self)
    }
}

#[cfg(feature = "alloc")]
impl<P: PlacementPolicy + ?Sized> PlacementPolicy for alloc::boxed::Box<P> {
    fn name(&self) -> &str {
        (**self).name()
    }

    fn wakeup(&mut self, view: &View<'_>) -> Placement {
        (**self).wakeup(view)
    }

    fn slice_end(&mut self, view: &View<'_>) -> SliceEnd {
        (**self).slice_end(view)
    }

    fn up_migration(&mut self, view: &View<'_>) -> Option<Placement> {
        (**self).up_migration(view)
    }

    fn wake_table(&self, topo: &Topology) -> Option<WakeTable> {
        (**self).wake_table(topo)
    }

    fn class_of(&self, topo: &Topology, util: u16) -> TaskClass {
        (**self).class_of(topo, util)
    }

    fn knobs(&self) -> &'static [KnobSpec] {
        (**self).knobs()
    }

    fn set_knob(&mut self, index: usize, value: i64) {
        (**self).set_knob(index, value);
    }

    fn hybridland(&self) -> Option<&Policy> {
        (**self).hybridland()
    }

    fn hybridland_mut(&mut self) -> Option<&mut Policy> {
        (**self).hybridland_mut()
    }
}

/// A policy written outside the project, as a program that uses `hybrid-sim` or
/// `scx_hybridland` as a library hands it over: both take the same value, so one policy runs
/// under one name in both worlds.
#[cfg(feature = "alloc")]
#[derive(Copy, Clone, Debug)]
pub struct CustomPolicy {
    /// The name `--policy` takes.
    pub name: &'static str,
    /// One line on what it does.
    pub description: &'static str,
    /// Its own knobs (`&[]`: none): `--set NAME=VALUE`, `sweep --set NAME=A,B`, the live
    /// scheduler's `--set` and control file take them by name, and a decision log records
    /// them. The built policy's [`PlacementPolicy::knobs`] returns the same list.
    pub knobs: &'static [KnobSpec],
    /// Builds it for a machine with its knob values (in the order of `knobs`, each within
    /// its range), drawing any random choices from the seed; an error says why it cannot run
    /// there.
    pub build: BuildPolicy,
}

/// Builds a [`CustomPolicy`] for a machine, a seed and its knob values.
#[cfg(feature = "alloc")]
pub type BuildPolicy =
    fn(
        &Topology,
        u64,
        &crate::KnobValues,
    ) -> Result<alloc::boxed::Box<dyn PlacementPolicy + Send>, alloc::string::String>;

#[cfg(feature = "alloc")]
impl CustomPolicy {
    /// Its knobs at their defaults, once the declarations pass
    /// [`check_knobs`](crate::check_knobs).
    pub fn default_knobs(&self) -> Result<crate::KnobValues, crate::KnobError> {
        crate::KnobValues::defaults(self.knobs)
    }
}
