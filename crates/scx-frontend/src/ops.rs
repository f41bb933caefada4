//! The framework operations the live loop uses, behind one small trait so the loop's error
//! paths can be tested with a fake: [`Live`] is scx_rustland_core plus the idle-snapshot
//! program and the task-event source; the tests' `FakeOps` (in `scheduler.rs`) has a ring buffer of fixed size and
//! scripted snapshots.

#![forbid(unsafe_code)]

use crate::bpf::{BpfScheduler, DispatchedTask, QueuedTask};
use crate::fast_audit::{AuditCounts, FastAudit};
use crate::fast_placements::{FastPlacement, FastPlacements};
use crate::fast_wake::FastWakeTable;
use crate::idle_snapshot::{IdleCpus, IdleSnapshot};
use crate::stats::Framework;
use crate::task_events::{RawEventError, SourceCounters, TaskEvent, TaskEventSource};
use anyhow::Result;
use hybridland_policy::{CpuId, CpuSet, Policy, Step, TaskClass, Topology};
use libbpf_rs::ProgramInput;

/// What the loop asks of the framework.
pub(crate) trait SchedOps {
    /// The next task the kernel queued for user space, `None` when the ring buffer is empty,
    /// `Err(code)` when reading it failed.
    fn dequeue(&mut self) -> Result<Option<QueuedTask>, i32>;
    /// Sends a task to the kernel. Fails when the user ring buffer is full; the task is then
    /// still the caller's.
    fn dispatch(&mut self, task: &DispatchedTask) -> Result<()>;
    /// Ends one round: `nr_pending` tasks are still waiting in user space.
    fn notify_complete(&mut self, nr_pending: u64);
    /// The kernel's idle CPUs now.
    fn snapshot(&mut self) -> Result<IdleCpus>;
    /// The framework's clock now (`crate::clock`), `None` when it cannot be read.
    fn kernel_clock(&mut self) -> Option<u64> {
        None
    }
    /// `--fifo`: an idle CPU task `pid` may run on, claimed for it by the framework's built-in
    /// idle selection (its `rs_select_cpu` program, one `bpf()` call), starting from `prev`;
    /// `None` when none is idle or the call failed.
    fn pick_idle(&mut self, pid: i32, prev: i32) -> Option<i32>;
    /// Tasks the kernel has queued for user space and not yet handed over.
    fn nr_queued(&mut self) -> u64;
    /// The framework's counters.
    fn counters(&mut self) -> Framework;
    /// Installs the wake-up fast path's table in the kernel, or switches the fast path off.
    fn set_fast_wake(&mut self, table: Option<&FastWakeTable>);
    /// `--audit-fast-wake`: checks the wake-ups the fast path kept since the last call against
    /// `policy`; the totals so far, `None` when not auditing.
    fn audit_fast_wakes(&mut self, _topo: &Topology, _policy: &Policy) -> Option<AuditCounts> {
        None
    }
    /// Hands the placements the fast path reported since the last call to `each`; returns how
    /// many were lost.
    fn drain_fast_placements(&mut self, _each: &mut dyn FnMut(FastPlacement)) -> u64 {
        0
    }
    /// Writes task `pid`'s class for the fast path (one store into its table by pid, through
    /// the mmap: no system call). `Ok(false)`: no task has that id, nothing to write; fails
    /// when the table is not there.
    fn set_class(&mut self, pid: i32, class: TaskClass) -> Result<bool>;
    /// Task `pid` exited: its class leaves the fast path's table.
    fn forget_task(&mut self, _pid: i32) {}
    /// Mirrors the core's homes into the fast path's tables.
    fn set_homes(&mut self, _homes: &CpuSet) {}
    /// Whether the scheduler is to stop (a signal, or the kernel ended it).
    fn exited(&mut self) -> bool;
    /// Hands the task events that arrived since the last call to `each` (a bounded number per
    /// call); returns how many.
    fn drain_events(
        &mut self,
        each: &mut dyn FnMut(Result<TaskEvent, RawEventError>),
    ) -> Result<usize>;
    /// The event source's kernel-side counters.
    fn event_counters(&mut self) -> SourceCounters;
    /// The CPU the loop runs on (a system call, not the framework's; a trait method so tests
    /// do not depend on where the test thread runs).
    fn current_cpu(&mut self) -> Option<CpuId> {
        crate::sys::current_cpu()
    }
}

/// The real framework: scx_rustland_core's connector, the idle-snapshot program and the
/// task-event source.
pub(crate) struct Live<'a, 'b> {
    pub(crate) bpf: BpfScheduler<'a>,
    pub(crate) idle: IdleSnapshot<'b>,
    /// `None` where the kernel refused the event source: the loop then runs as before it,
    /// pruning tasks by age.
    pub(crate) events: Option<TaskEventSource<'b>>,
    /// `--audit-fast-wake`.
    pub(crate) audit: Option<FastAudit>,
    /// The fast path's reported placements, as read so far.
    pub(crate) placements: FastPlacements,
}

impl Live<'_, '_> {
    /// The fast path's BPF globals: its table, counters and audit ring.
    fn fast(&self) -> Option<&crate::bpf_skel::types::bss_hl_fast> {
        self.bpf.skel.maps.bss_hl_fast_data.as_deref()
    }
}

impl SchedOps for Live<'_, '_> {
    fn drain_events(
        &mut self,
        each: &mut dyn FnMut(Result<TaskEvent, RawEventError>),
    ) -> Result<usize> {
        self.events.as_mut().map_or(Ok(0), |e| e.drain(each))
    }

    fn event_counters(&mut self) -> SourceCounters {
        self.events
            .as_ref()
            .map_or_else(SourceCounters::default, TaskEventSource::counters)
    }

    fn dequeue(&mut self) -> Result<Option<QueuedTask>, i32> {
        self.bpf.dequeue_task()
    }

    fn dispatch(&mut self, task: &DispatchedTask) -> Result<()> {
        Ok(self.bpf.dispatch_task(task)?)
    }

    fn notify_complete(&mut self, nr_pending: u64) {
        self.bpf.notify_complete(nr_pending);
    }

    fn snapshot(&mut self) -> Result<IdleCpus> {
        self.idle.take()
    }

    fn kernel_clock(&mut self) -> Option<u64> {
        self.idle
            .clock()
            .inspect_err(|e| tracing::warn!("{e:#}: the loop keeps CLOCK_MONOTONIC"))
            .ok()
    }

    fn pick_idle(&mut self, pid: i32, prev: i32) -> Option<i32> {
        // `struct task_cpu_arg` (the framework's intf.h): pid, cpu, flags, in native order.
        // Built here rather than through the connector's `select_cpu`, which panics when the
        // call fails; flags 0: the program sets its own wake-up flag.
        let mut arg = [0u8; 16];
        arg[..4].copy_from_slice(&pid.to_ne_bytes());
        arg[4..8].copy_from_slice(&prev.to_ne_bytes());
        let input = ProgramInput {
            context_in: Some(&mut arg),
            ..Default::default()
        };
        let out = self.bpf.skel.progs.rs_select_cpu.test_run(input).ok()?;
        i32::try_from(out.return_value).ok().filter(|cpu| *cpu >= 0)
    }

    fn nr_queued(&mut self) -> u64 {
        *self.bpf.nr_queued_mut()
    }

    fn counters(&mut self) -> Framework {
        Framework {
            user: *self.bpf.nr_user_dispatches_mut(),
            kernel: *self.bpf.nr_kernel_dispatches_mut(),
            cancel: *self.bpf.nr_cancel_dispatches_mut(),
            bounce: *self.bpf.nr_bounce_dispatches_mut(),
            failed: *self.bpf.nr_failed_dispatches_mut(),
            congested: *self.bpf.nr_sched_congested_mut(),
            running: *self.bpf.nr_running_mut(),
            queued: *self.bpf.nr_queued_mut(),
            fast: self
                .fast()
                .map_or([0; Step::ALL.len()], |b| b.hl_nr_fast_step),
            fast_asked: self.fast().map_or(0, |b| b.hl_nr_fast_asked),
            fast_no_free: self.fast().map_or(0, |b| b.hl_nr_fast_no_free),
            fast_pinned: self.fast().map_or(0, |b| b.hl_nr_fast_pinned),
            fast_declined: self.fast().map_or([0; 2], |b| b.hl_nr_fast_declined),
            own_rescued: self.fast().map_or(0, |b| b.hl_nr_own_rescued),
            own_untracked: self.fast().map_or(0, |b| b.hl_nr_own_untracked),
        }
    }

    fn audit_fast_wakes(&mut self, topo: &Topology, policy: &Policy) -> Option<AuditCounts> {
        let fast = self.bpf.skel.maps.bss_hl_fast_data.as_deref()?;
        Some(self.audit.as_mut()?.drain(fast, topo, policy))
    }

    fn set_fast_wake(&mut self, table: Option<&FastWakeTable>) {
        if let Some(fast) = self.bpf.skel.maps.bss_hl_fast_data.as_deref_mut() {
            FastWakeTable::install(table, fast);
        }
    }

    fn drain_fast_placements(&mut self, each: &mut dyn FnMut(FastPlacement)) -> u64 {
        let Some(fast) = self.bpf.skel.maps.bss_hl_fast_data.as_deref() else {
            return 0;
        };
        self.placements.drain(fast, each)
    }

    fn set_class(&mut self, pid: i32, class: TaskClass) -> Result<bool> {
        let Ok(pid) = u32::try_from(pid) else {
            return Ok(false);
        };
        match self.bpf.skel.maps.bss_hl_fast_data.as_deref_mut() {
            Some(fast) => {
                FastWakeTable::set_class(&mut fast.hl_classes, pid, class);
                Ok(true)
            }
            None => Err(anyhow::anyhow!(
                "the fast path's data section is not mapped"
            )),
        }
    }

    fn forget_task(&mut self, pid: i32) {
        if let (Ok(pid), Some(fast)) = (
            u32::try_from(pid),
            self.bpf.skel.maps.bss_hl_fast_data.as_deref_mut(),
        ) {
            FastWakeTable::forget_class(&mut fast.hl_classes, pid);
        }
    }

    fn set_homes(&mut self, homes: &CpuSet) {
        if let Some(fast) = self.bpf.skel.maps.bss_hl_fast_data.as_deref_mut() {
            FastWakeTable::set_homes(homes, fast);
        }
    }

    fn exited(&mut self) -> bool {
        self.bpf.exited()
    }
}
