//! `--fifo`: the framework's minimal scheduler inside the same binary, set up as scx_rlfifo is,
//! for overhead comparisons (scripts/vm-bench.sh). The framework's BPF code dispatches a
//! wake-up that finds an idle CPU itself (`builtin_idle`, set in main.rs); a task that reaches
//! user space goes to an idle CPU the same selection claims for it (one `bpf()` call), else to
//! the shared queue, in arrival order with the full slice, to be run by the first CPU that
//! frees up: no policy call, no idle snapshot, no task table, no task events, no nudges. What
//! it costs is the cost of scx_rustland_core at its cheapest.
//!
//! Two things differ from scx_rlfifo (BENCHMARKS.md compares the two):
//! the slice is the full one (scx_rlfifo divides it by one more than the tasks waiting, which
//! gave 0.96 of the full slice's switch rate in two VM boots), and once the selection finds no
//! idle CPU for a task that may run anywhere, the rest of the batch goes to the shared queue
//! without asking again (scx_rlfifo asks for every task: 5.3 `bpf()` calls a batch under
//! hackbench against 1.0). A CPU that frees up takes from the shared queue either way.

#![forbid(unsafe_code)]

use crate::bpf::{DispatchedTask, QueuedTask, RL_CPU_ANY};

/// Dispatch state of the FIFO mode: the slice.
pub(crate) struct Fifo {
    slice_ns: u64,
}

impl Fifo {
    pub(crate) fn new(slice_ns: u64) -> Self {
        Self { slice_ns }
    }

    /// Dispatches a batch into `out`, asking `pick_idle` for an idle CPU until it finds none
    /// for a task that may run on all `nr_possible` CPUs: none is left for the rest of the
    /// batch either, bar one freed since, which takes from the shared queue. Returns how many
    /// times it asked.
    pub(crate) fn dispatch_batch(
        &self,
        tasks: &[QueuedTask],
        nr_possible: u64,
        mut pick_idle: impl FnMut(&QueuedTask) -> Option<i32>,
        out: &mut Vec<DispatchedTask>,
    ) -> u64 {
        let mut asked = 0;
        let mut none_idle = false;
        for t in tasks {
            let anywhere = t.nr_cpus_allowed >= nr_possible;
            let idle = if none_idle && anywhere {
                None
            } else {
                asked += 1;
                pick_idle(t)
            };
            none_idle |= anywhere && idle.is_none();
            out.push(self.dispatch(t, idle));
        }
        asked
    }

    /// Where the task goes: the idle CPU claimed for it (`idle`), else any CPU (the shared
    /// queue), behind every task queued there before. The vtime stays 0, as scx_rlfifo sends
    /// it: the framework's queues are vtime-ordered and the kernel puts an equal key after the
    /// ones already there, so one key keeps arrival order; and the framework's own dispatches
    /// (an idle CPU found in the kernel, a full ring buffer) use the task's `dsq_vtime`: 0 when
    /// it joins, then the last key it was queued with. An arrival number (as before
    /// 2026-11-26) sent that task behind or ahead of the others by where it last came from.
    fn dispatch(&self, task: &QueuedTask, idle: Option<i32>) -> DispatchedTask {
        let mut out = DispatchedTask::new(task);
        out.cpu = idle.unwrap_or(RL_CPU_ANY);
        out.slice_ns = self.slice_ns;
        out
    }
}

#[cfg(test)]
mod test {
    use super::*;

    fn queued(pid: i32, cpu: i32, vtime: u64) -> QueuedTask {
        QueuedTask {
            pid,
            cpu,
            nr_cpus_allowed: 8,
            flags: 1,
            start_ts: 10,
            stop_ts: 20,
            exec_runtime: 5,
            weight: 100,
            vtime,
            enq_cnt: 3,
            start_time: 7,
            comm: [0; 16],
        }
    }

    #[test]
    fn any_cpu_same_slice_in_arrival_order() {
        let fifo = Fifo::new(5_000_000);
        // Whatever the previous CPU or the task's own vtime, each goes to the shared queue
        // with the same slice and the one key 0, so behind the one before.
        let tasks = [queued(7, 3, 900), queued(8, -1, 0), queued(9, 0, 5)];
        let out: Vec<_> = tasks.iter().map(|t| fifo.dispatch(t, None)).collect();
        for (o, t) in out.iter().zip(&tasks) {
            assert_eq!(o.pid, t.pid);
            assert_eq!(o.cpu, RL_CPU_ANY);
            assert_eq!(o.slice_ns, 5_000_000);
            assert_eq!(o.flags, t.flags);
            assert_eq!(o.enq_cnt, t.enq_cnt);
        }
        assert!(out.iter().all(|o| o.vtime == 0));
        // An idle CPU claimed for it: there, with the same key as the framework's own
        // dispatches to that CPU.
        let there = fifo.dispatch(&queued(10, 3, 7), Some(5));
        assert_eq!((there.cpu, there.slice_ns, there.vtime), (5, 5_000_000, 0));
    }
}
