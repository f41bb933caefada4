//! The live wake-up fast path, modelled: its walk of the policy's table, and what the core
//! gives besides a dispatch.

use crate::sim_policy::{Decision, Destination, EngineView, SimCore, TaskView};
use hybridland_policy::{CpuSet, Nudge, Output, TaskClass, WakeQuestion, WakeTable};

/// The live fast path (`scx_hybridland`'s `src/bpf/fast_wake.bpf.h` walks the same table):
/// a wake-up that finds an allowed CPU free is placed by [`WakeTable::decide`] with the class
/// the core last gave the task and the core's homes, with the base slice, without the core;
/// one allowed on a single busy CPU takes it ([`WakeTable::pinned`]).
/// Built once: the table depends only on the machine and the knobs, which a replay does not
/// change.
#[derive(Clone, Debug)]
pub(super) struct FastTable {
    pub(super) table: Box<WakeTable>,
    pub(super) slice_ns: u64,
}

impl FastTable {
    /// The fast path's decision for woken `task` of class `class` (whose highest utilisation
    /// is `class_util`: the decision is made for any task of the class, so it is checked as
    /// made for that one), if it makes one.
    pub(super) fn place(
        &self,
        machine: &EngineView<'_>,
        task: &TaskView<'_>,
        (class, class_util): (TaskClass, Option<u16>),
        homes: &CpuSet,
    ) -> Option<Decision> {
        let q = WakeQuestion {
            free: machine.idle,
            allowed: task.allowed,
            prev: task.prev_cpu,
            class,
            homes,
            sync_waker: task.sync_waker,
        };
        let placement = self.table.decide(&q);
        // The waker's CPU is busy live when asked; here it is idle (the waker has left).
        let target = match placement.cpu {
            Some(cpu) if machine.idle.contains(cpu) => Destination::Run(cpu),
            Some(cpu) => Destination::QueueOn(cpu),
            // The pinned rule: the one CPU the task may use, busy, taken in the kernel too.
            None => Destination::Preempt(self.table.pinned(&q)?),
        };
        Some(Decision {
            target,
            placement: Some(placement),
            slice_end: None,
            slice_ns: Some(self.slice_ns),
            vtime: None,
            util: class_util,
        })
    }
}

/// Carries out what the core gave besides a dispatch: the nudge, if any; class changes are
/// the kernel's business live and only counted here.
pub(super) fn settle(core: &mut SimCore, classed: &mut u64) -> Option<Nudge> {
    let mut nudge = None;
    while let Some(out) = core.poll() {
        match out {
            Output::Nudge(n) => nudge = Some(n),
            Output::Class(_) => *classed += 1,
            Output::Dispatch(_) => {}
        }
    }
    nudge
}
