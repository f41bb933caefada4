//! The runs the kernel's fast path reports (`src/bpf/fast_wake.bpf.h`): each wake-up it places
//! comes with the run before it (the framework's start and stop times of the task's last run,
//! and its CPU), so the core's estimate, vtime and homes see runs of tasks that never reach
//! user space. Read from a ring of slots (`crate::slot_ring`).

#![forbid(unsafe_code)]

use crate::bpf_skel::types::{bss_hl_fast, hl_ran_rec};
use crate::slot_ring::{Numbered, SlotReader};
use hybridland_policy::{CpuId, LastRun, TaskId};

impl Numbered for hl_ran_rec {
    fn seq(&self) -> u64 {
        self.seq
    }
}

/// One reported run, in the core's terms.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct FastRun {
    pub(crate) task: TaskId,
    pub(crate) cpu: CpuId,
    pub(crate) run: LastRun,
    pub(crate) weight: u32,
}

impl FastRun {
    /// The run a slot holds, if it names a task and a CPU.
    fn of(rec: &hl_ran_rec) -> Option<Self> {
        Some(Self {
            task: TaskId(u32::try_from(rec.pid).ok()?),
            cpu: CpuId(u16::try_from(rec.cpu).ok()?),
            run: LastRun {
                start_ns: rec.start_ns,
                stop_ns: rec.stop_ns,
            },
            weight: rec.weight,
        })
    }
}

/// Where the loop has read the runs up to.
#[derive(Debug, Default)]
pub(crate) struct FastRuns {
    reader: SlotReader,
}

impl FastRuns {
    /// Hands the runs reported since the last call to `each`; returns how many were lost (a
    /// ring overrun, or a record that names no task).
    pub(crate) fn drain(&mut self, bss: &bss_hl_fast, each: &mut dyn FnMut(FastRun)) -> u64 {
        let mut bad = 0;
        let lost = self
            .reader
            .drain(bss.hl_ran_head, &bss.hl_ran_recs, &mut |rec| match rec
                .as_ref()
                .and_then(FastRun::of)
            {
                Some(run) => each(run),
                None => bad += 1,
            });
        bad.max(lost)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_becomes_a_run_of_the_core() {
        let rec = hl_ran_rec {
            seq: 1,
            pid: 42,
            cpu: 3,
            start_ns: 10,
            stop_ns: 25,
            weight: 100,
            pad: 0,
        };
        let run = FastRun::of(&rec).unwrap();
        assert_eq!(
            (
                run.task,
                run.cpu,
                run.run.stop_ns - run.run.start_ns,
                run.weight
            ),
            (TaskId(42), CpuId(3), 15, 100)
        );
        assert!(FastRun::of(&hl_ran_rec { pid: -1, ..rec }).is_none());
        assert!(FastRun::of(&hl_ran_rec { cpu: -1, ..rec }).is_none());
    }
}
