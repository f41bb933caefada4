//! The loop's settings and its fixed limits.

use super::*;

/// Default `--max-tasks`: the kernel's default `pid_max`, so a machine that keeps the default
/// never fills the core's task storage.
pub(crate) const DEFAULT_MAX_TASKS: usize = 32_768;

/// Highest `--max-tasks`. The core's storage for it (its slots, rounded up to a power of two)
/// comes from the framework's fixed 64 MiB heap, the process's only one, which the recorder
/// and the decision log share; this keeps it within [`STORAGE_BUDGET`]. More threads than this
/// are placed from a fresh state (`untracked`), which costs placement quality, never the heap.
pub(crate) const MAX_MAX_TASKS: usize = 65_536;

/// Most bytes the core's task storage may take of the 64 MiB heap (see [`MAX_MAX_TASKS`]).
pub(crate) const STORAGE_BUDGET: usize = 16 << 20;

const _: () = assert!(
    Slot::count_for(MAX_MAX_TASKS) * size_of::<Slot>() <= STORAGE_BUDGET,
    "--max-tasks at its highest outgrows the task storage's share of the heap"
);

/// What decides where tasks go.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// The policy, through the scheduler core.
    Policy,
    /// `--fifo`: every task to the shared queue in arrival order, no policy ([`Fifo`]).
    Fifo,
}

/// Loop settings.
pub(crate) struct LoopConfig {
    pub(crate) slice_ns: u64,
    pub(crate) mode: Mode,
    /// `--fixed-slice`: the full slice for every task, not divided by the queue depth.
    pub(crate) slice: SliceMode,
    /// Possible CPUs: a task allowed on that many may run anywhere.
    pub(crate) nr_possible: u64,
    /// `--max-tasks`: the core's task storage, reserved at start.
    pub(crate) max_tasks: usize,
    /// The wake-up fast path (not `--no-fast-wake`); it applies to hybridland's policy only.
    pub(crate) fast_wake: bool,
    /// Wake-up preemption (`--wake-preempt`).
    pub(crate) wake_preempt: bool,
    /// The core's up-migration scan (not `--no-up-scan`).
    pub(crate) up_scan: bool,
}

impl LoopConfig {
    /// The core's settings for this loop: the defaults, with the loop's slice, and no
    /// up-migration scan when it is turned off or there is no helper to carry the nudges out.
    pub(super) fn core(&self, helper: bool) -> CoreConfig {
        CoreConfig {
            slice_ns: self.slice_ns,
            slice: self.slice,
            ..CoreConfig::DEFAULT
        }
        .with_up_scan(helper && self.up_scan)
        .with_wake_preempt(self.wake_preempt)
    }
}
