//! The placements the kernel's fast path reports (`src/bpf/fast_wake.bpf.h`): each wake-up it
//! places comes with where and when, the class its walk read, the task's affinity and the run
//! before it (the framework's start and stop times of the task's last run, and its CPU), so
//! the core counts it as a wake-up it decided (`Input::Placed`). Read from a ring of slots
//! (`crate::slot_ring`).

#![forbid(unsafe_code)]

use crate::bpf_skel::types::{bss_hl_fast, hl_ran_rec};
use crate::slot_ring::{Numbered, SlotReader};
use hybridland_policy::{CpuId, CpuSet, LastRun, Life, TaskClass, TaskId, Topology};

impl Numbered for hl_ran_rec {
    fn seq(&self) -> u64 {
        self.seq
    }
}

/// One reported placement, in the core's terms.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct FastPlacement {
    pub(crate) task: TaskId,
    /// Which life of its id (its start time).
    pub(crate) life: Life,
    /// The CPU it was placed on.
    pub(crate) cpu: CpuId,
    /// The CPU it last ran on, if any.
    pub(crate) prev: Option<CpuId>,
    /// The run before the wake-up, if the framework had one.
    pub(crate) run: Option<LastRun>,
    /// When it was placed, on the framework's clock.
    pub(crate) woke_ns: u64,
    pub(crate) weight: u32,
    /// The class the walk read.
    pub(crate) class: TaskClass,
    /// How many CPUs it may use, and the first 64 of them.
    pub(crate) nr_allowed: u32,
    pub(crate) allowed0: u64,
}

impl FastPlacement {
    /// The placement a slot holds, if it names a task and a CPU.
    fn of(rec: &hl_ran_rec) -> Option<Self> {
        Some(Self {
            task: TaskId(u32::try_from(rec.pid).ok()?),
            life: Life(rec.life),
            cpu: CpuId(u16::try_from(rec.cpu).ok()?),
            prev: u16::try_from(rec.prev).ok().map(CpuId),
            run: (rec.stop_ns != 0 && rec.stop_ns >= rec.start_ns).then_some(LastRun {
                start_ns: rec.start_ns,
                stop_ns: rec.stop_ns,
            }),
            woke_ns: rec.woke_ns,
            weight: rec.weight,
            class: TaskClass(u8::try_from(rec.class).ok()?),
            nr_allowed: rec.nr_allowed,
            allowed0: rec.allowed0,
        })
    }

    /// The CPUs of `topo` it may use: all of them when it may use as many as the kernel has
    /// (`nr_possible`); else the first 64 the record carries, on a machine with no more;
    /// `None` (unknown) on a larger one.
    pub(crate) fn allowed(&self, topo: &Topology, nr_possible: u64) -> Option<CpuSet> {
        if u64::from(self.nr_allowed) >= nr_possible {
            return Some(*topo.cpus());
        }
        if topo.cpus().iter().any(|c| c.index() >= 64) {
            return None;
        }
        Some(
            topo.cpus()
                .iter()
                .filter(|c| self.allowed0 & (1 << c.index()) != 0)
                .collect(),
        )
    }
}

/// Where the loop has read the placements up to.
#[derive(Debug, Default)]
pub(crate) struct FastPlacements {
    reader: SlotReader,
}

impl FastPlacements {
    /// Hands the placements reported since the last call to `each`; returns how many were lost
    /// (a ring overrun, or a record that names no task).
    pub(crate) fn drain(&mut self, bss: &bss_hl_fast, each: &mut dyn FnMut(FastPlacement)) -> u64 {
        let mut bad = 0;
        let lost = self
            .reader
            .drain(bss.hl_ran_head, &bss.hl_ran_recs, &mut |rec| match rec
                .as_ref()
                .and_then(FastPlacement::of)
            {
                Some(p) => each(p),
                None => bad += 1,
            });
        bad.max(lost)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_becomes_a_placement_of_the_core() {
        let rec = hl_ran_rec {
            seq: 1,
            pid: 42,
            prev: 3,
            cpu: 5,
            weight: 100,
            start_ns: 10,
            stop_ns: 25,
            woke_ns: 40,
            allowed0: 0b1010_0000,
            nr_allowed: 2,
            class: 1,
            life: 77,
        };
        let p = FastPlacement::of(&rec).unwrap();
        assert_eq!(
            (
                p.task, p.life, p.cpu, p.prev, p.run, p.woke_ns, p.weight, p.class
            ),
            (
                TaskId(42),
                Life(77),
                CpuId(5),
                Some(CpuId(3)),
                Some(LastRun {
                    start_ns: 10,
                    stop_ns: 25
                }),
                40,
                100,
                TaskClass(1)
            )
        );
        let topo = crate::test_machines::vm();
        let n = topo.cpus().count() as u64;
        assert_eq!(
            p.allowed(&topo, n),
            Some([CpuId(5), CpuId(7)].into_iter().collect())
        );
        let anywhere = FastPlacement { nr_allowed: 8, ..p };
        assert_eq!(anywhere.allowed(&topo, n), Some(*topo.cpus()));
        // No previous CPU, no run before: a task's first run.
        let first = FastPlacement::of(&hl_ran_rec {
            prev: -1,
            start_ns: 0,
            stop_ns: 0,
            ..rec
        })
        .unwrap();
        assert_eq!((first.prev, first.run), (None, None));
        assert!(FastPlacement::of(&hl_ran_rec { pid: -1, ..rec }).is_none());
        assert!(FastPlacement::of(&hl_ran_rec { cpu: -1, ..rec }).is_none());
    }
}
