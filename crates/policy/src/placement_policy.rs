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
//!     let view = View { topo, state, allowed: all, prev_cpu: None, util: 0, weight: 100,
//!                       waker_cpu: None, now_ns: 0, contended: false };
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
use crate::migration::{SliceEnd, step_of};
use crate::topology::Topology;

/// The machine and the task at one decision, as the scheduler core sees them.
#[derive(Copy, Clone, Debug)]
pub struct View<'a> {
    pub(crate) topo: &'a Topology,
    pub(crate) state: &'a CpuState,
    pub(crate) allowed: &'a CpuSet,
    pub(crate) prev_cpu: Option<CpuId>,
    pub(crate) util: u16,
    pub(crate) weight: u32,
    pub(crate) waker_cpu: Option<CpuId>,
    pub(crate) now_ns: u64,
    pub(crate) contended: bool,
}

impl<'a> View<'a> {
    /// The machine.
    pub fn topology(&self) -> &'a Topology {
        self.topo
    }

    /// Which CPUs are idle (and the tasks' homes). At a slice end the task's own CPU counts
    /// as busy: it was running there a moment ago.
    pub fn state(&self) -> &'a CpuState {
        self.state
    }

    /// The CPUs the task may run on.
    pub fn allowed(&self) -> &'a CpuSet {
        self.allowed
    }

    /// The allowed CPUs that are idle.
    pub fn idle_allowed(&self) -> CpuSet {
        self.allowed.and(self.state.idle())
    }

    /// Where the task ran last (at a slice end, or when up-migration is asked: where it runs).
    pub fn prev_cpu(&self) -> Option<CpuId> {
        self.prev_cpu
    }

    /// Its utilisation, 0..=1024: the core's estimate or the caller's hint.
    pub fn util(&self) -> u16 {
        self.util
    }

    /// Its weight (100 for nice 0). Up-migration is asked with 100: the core keeps no
    /// weight for a running task.
    pub fn weight(&self) -> u32 {
        self.weight
    }

    /// For a wake-up by another task: the CPU the waker ran on, when the caller knows it.
    pub fn waker_cpu(&self) -> Option<CpuId> {
        self.waker_cpu
    }

    /// The caller's time of the decision.
    pub fn now_ns(&self) -> u64 {
        self.now_ns
    }

    /// At a slice end: whether another task waits for the task's CPU (in its own queue, the
    /// shared queue, or given it earlier in the same batch). `false` at a wake-up.
    pub fn contended(&self) -> bool {
        self.contended
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
    /// view). The default keeps it there; when someone waits for that CPU
    /// ([`View::contended`]) it goes where [`wakeup`](Self::wakeup) would place it if an
    /// allowed CPU is idle (no CPU stays idle while a task waits), else to the back of the
    /// queue.
    fn slice_end(&mut self, view: &View<'_>) -> SliceEnd {
        if !view.contended() {
            return SliceEnd::Keep;
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
    /// there now: an idle CPU that would serve it strictly better. The core nudges the CPU so
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
    /// Builds it for a machine, drawing any random choices from the seed; an error says why
    /// it cannot run there.
    pub build: BuildPolicy,
}

/// Builds a [`CustomPolicy`] for a machine and a seed.
#[cfg(feature = "alloc")]
pub type BuildPolicy =
    fn(
        &Topology,
        u64,
    ) -> Result<alloc::boxed::Box<dyn PlacementPolicy + Send>, alloc::string::String>;
