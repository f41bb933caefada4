//! The core's settings beside the policy's knobs, what it counts, and why it cannot be built.

use super::StorageError;
use super::input::Occupancy;
use crate::config::ConfigError;

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
    /// Never: the task waits in the shared queue (a task allowed on one CPU only takes it all
    /// the same, by the pinned rule: [`pinned_cpu`](crate::pinned_cpu)). The default, because in the VM benchmarks
    /// preemption moved no latency figure beyond the spread between boots and cost hackbench
    /// about 10%.
    Off,
    /// When the task the core last sent to an allowed busy CPU is, by the core's estimate, at
    /// least a base slice ([`CoreConfig::slice_ns`]) of vtime ahead of the woken task, the
    /// woken task goes to that CPU's queue and the task there is made to end its slice now
    /// ([`Target::Preempt`](super::Target::Preempt)). A slice is the credit a sleeper keeps, so a task that slept
    /// takes a CPU from one that has run for a while, and two busy tasks do not take turns
    /// preempting each other. The estimate is the vtime the task was sent with plus the time
    /// since (it ran all along, at nice 0): the core is not told of runs until a task comes
    /// back. The woken task's previous CPU is taken when it qualifies (its cache), else the
    /// CPU whose task is furthest ahead. A limit of that estimate: once a CPU was taken, the
    /// core counts the woken task there until it sends that CPU another, so a CPU that then
    /// took a task from the shared queue is not seen ahead again (in the simulator's test,
    /// 20 CPUs of hogs gave 20 preemptions, one each).
    ///
    /// [`Target::Preempt`]: crate::Target::Preempt
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
    /// How the core learns which CPUs are free: the inputs it takes follow from it.
    pub occupancy: Occupancy,
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
        occupancy: Occupancy::Snapshots,
    };

    /// How often the age prune runs.
    pub(super) const PRUNE_EVERY_NS: u64 = 5_000_000_000;

    /// These settings with wake-up preemption on ([`WakePreempt::SliceAhead`]) or off: the
    /// frontends' one switch for it (`scx_hybridland --wake-preempt`, `--set wake_preempt`).
    #[must_use]
    pub const fn with_wake_preempt(self, on: bool) -> Self {
        Self {
            wake_preempt: if on {
                WakePreempt::SliceAhead
            } else {
                WakePreempt::Off
            },
            ..self
        }
    }

    /// These settings with the up-migration scan kept as it is or off ([`Nudging::Off`]): the
    /// frontends' one switch for it (`scx_hybridland --no-up-scan`, `--set up_scan`).
    #[must_use]
    pub const fn with_up_scan(self, on: bool) -> Self {
        Self {
            nudging: if on { self.nudging } else { Nudging::Off },
            ..self
        }
    }
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
    /// Records ended by a hand-over of another [`Life`](crate::Life) of their id: a new task
    /// that reused the id before the old one's exit arrived.
    pub renewed: u64,
    /// Exits of an earlier life of an id the core holds another life of, ignored (see
    /// [`renewed`](Self::renewed)); counted in [`exits`](Self::exits), not in
    /// [`exits_tracked`](Self::exits_tracked).
    pub stale_exits: u64,
    /// Tasks forgotten by the age prune.
    pub forgotten: u64,
    /// Nudges given.
    pub nudges: u64,
    /// Policy answers refused: a CPU that does not exist or that the task may not use (the
    /// task went to the shared queue instead).
    pub refused: u64,
    /// Woken tasks that took a busy CPU ([`WakePreempt`], and the pinned rule:
    /// [`pinned_cpu`](crate::pinned_cpu)).
    pub preempts: u64,
    /// Wake-ups the caller placed itself ([`Input::Placed`](super::InputOf::Placed)).
    pub placed: u64,
    /// Of those, placements that read another class than the core last gave out, long enough
    /// after it for the caller to hold it: the caller's write was lost, or the core forgot
    /// the task; the core took the caller's class.
    pub class_drift: u64,
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
