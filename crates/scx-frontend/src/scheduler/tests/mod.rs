//! The loop over a fake framework: every path of a batch, the recording, the error paths.

use super::*;
use crate::fast_placements::FastPlacement;
use crate::task_events::{RawEventError, SourceCounters};
use hybridland_policy::{Policy, PolicyConfig};

fn hybridland(topo: &Topology) -> LivePolicy {
    Box::new(Policy::new(topo, &PolicyConfig::default()).unwrap())
}

/// A framework with a user ring buffer of `ring_cap` slots (the kernel empties it when the
/// test says), scripted dequeue errors and scripted snapshots (all idle when none left).
struct FakeOps {
    incoming: VecDeque<Result<QueuedTask, i32>>,
    ring: Vec<DispatchedTask>,
    ring_cap: usize,
    delivered: Vec<DispatchedTask>,
    snapshots: VecDeque<Result<CpuSet, ()>>,
    all: CpuSet,
    pending: Vec<u64>,
    nr_snapshots: usize,
    /// The CPU the loop runs on.
    own: Option<CpuId>,
    /// Task events to hand over at the next drain.
    events: Vec<Result<TaskEvent, RawEventError>>,
    /// CPUs whose own queue holds tasks, in every snapshot.
    queued_cpus: CpuSet,
    /// CPUs tasks in the shared queue may run on, in every snapshot.
    served_cpus: CpuSet,
    /// `--fifo`'s idle picks, in order (none idle when none left).
    picks: VecDeque<Option<i32>>,
    /// Every fast-path table installed (`None`: switched off), in order.
    fast_wake: Vec<Option<FastWakeTable>>,
    /// Placements the fast path reports at the next drain.
    placements: Vec<FastPlacement>,
    /// Placements the fast path writes while the task events are drained (they join
    /// `placements`).
    placed_during_events: Vec<FastPlacement>,
    /// Every class written, and the homes last mirrored.
    classes: Vec<(i32, u8)>,
    /// Class writes to fail, the next first.
    class_failures: u32,
    homes: Option<CpuSet>,
    /// How far the framework's clock runs ahead of `CLOCK_MONOTONIC` (`None`: unreadable).
    clock_ahead_ns: Option<i64>,
}

impl FakeOps {
    fn new(topo: &Topology, ring_cap: usize) -> Self {
        Self {
            incoming: VecDeque::new(),
            ring: Vec::new(),
            ring_cap,
            delivered: Vec::new(),
            snapshots: VecDeque::new(),
            all: *topo.cpus(),
            pending: Vec::new(),
            nr_snapshots: 0,
            own: None,
            events: Vec::new(),
            queued_cpus: CpuSet::EMPTY,
            served_cpus: CpuSet::EMPTY,
            picks: VecDeque::new(),
            fast_wake: Vec::new(),
            placements: Vec::new(),
            placed_during_events: Vec::new(),
            classes: Vec::new(),
            class_failures: 0,
            homes: None,
            clock_ahead_ns: None,
        }
    }

    /// The kernel takes everything in the ring buffer.
    fn consume(&mut self) {
        self.delivered.append(&mut self.ring);
    }
}

impl SchedOps for FakeOps {
    fn dequeue(&mut self) -> Result<Option<QueuedTask>, i32> {
        self.incoming.pop_front().transpose()
    }
    fn dispatch(&mut self, task: &DispatchedTask) -> Result<()> {
        if self.ring.len() >= self.ring_cap {
            bail!("ring buffer full");
        }
        self.ring.push(task.clone());
        Ok(())
    }
    fn notify_complete(&mut self, nr_pending: u64) {
        self.pending.push(nr_pending);
    }
    fn snapshot(&mut self) -> Result<IdleCpus> {
        self.nr_snapshots += 1;
        match self.snapshots.pop_front().unwrap_or(Ok(self.all)) {
            Ok(idle) => Ok(IdleCpus {
                idle,
                queued: Some(self.queued_cpus),
                served: Some(self.served_cpus),
                clock_ns: self.kernel_clock().unwrap_or(0),
            }),
            Err(()) => bail!("snapshot failed"),
        }
    }
    fn kernel_clock(&mut self) -> Option<u64> {
        self.clock_ahead_ns
            .map(|a| now_ns().saturating_add_signed(a))
    }
    fn pick_idle(&mut self, _pid: i32, _prev: i32) -> Option<i32> {
        self.picks.pop_front().flatten()
    }
    fn nr_queued(&mut self) -> u64 {
        // As the framework counts: queued for user space, not yet dequeued.
        self.incoming.len() as u64
    }
    fn counters(&mut self) -> crate::stats::Framework {
        crate::stats::Framework::default()
    }
    fn set_fast_wake(&mut self, table: Option<&FastWakeTable>) {
        self.fast_wake.push(table.cloned());
    }
    fn set_class(&mut self, pid: i32, class: hybridland_policy::TaskClass) -> Result<bool> {
        if self.class_failures > 0 {
            self.class_failures -= 1;
            anyhow::bail!("refused");
        }
        self.classes.push((pid, class.0));
        Ok(true)
    }
    fn drain_fast_placements(&mut self, each: &mut dyn FnMut(FastPlacement)) -> u64 {
        for r in self.placements.drain(..) {
            each(r);
        }
        0
    }
    fn set_homes(&mut self, homes: &CpuSet) {
        self.homes = Some(*homes);
    }
    fn exited(&mut self) -> bool {
        false
    }
    fn current_cpu(&mut self) -> Option<CpuId> {
        self.own
    }
    fn drain_events(
        &mut self,
        each: &mut dyn FnMut(Result<TaskEvent, RawEventError>),
    ) -> Result<usize> {
        self.placements.append(&mut self.placed_during_events);
        let n = self.events.len();
        self.events.drain(..).for_each(each);
        Ok(n)
    }
    fn event_counters(&mut self) -> SourceCounters {
        SourceCounters::default()
    }
}

fn machine() -> Topology {
    crate::test_machines::vm()
}

/// The start time the tests give thread `pid`: its life.
fn start_of(pid: i32) -> u64 {
    5_000 + u64::from(pid.unsigned_abs())
}

fn wakeup(pid: i32) -> QueuedTask {
    QueuedTask {
        pid,
        cpu: 0,
        nr_cpus_allowed: 1024,
        flags: SCX_ENQ_WAKEUP,
        start_ts: 0,
        stop_ts: 0,
        exec_runtime: 0,
        weight: 100,
        vtime: 0,
        enq_cnt: 1,
        start_time: start_of(pid),
        comm: [0; 16],
    }
}

fn config(mode: Mode, slice: SliceMode) -> LoopConfig {
    LoopConfig {
        slice_ns: 5_000_000,
        mode,
        slice,
        nr_possible: 8,
        max_tasks: DEFAULT_MAX_TASKS,
        fast_wake: true,
        wake_preempt: true,
        up_scan: true,
    }
}

fn sched_with(ring_cap: usize, cfg: LoopConfig) -> Scheduler<FakeOps> {
    let topo = machine();
    let ops = FakeOps::new(&topo, ring_cap);
    Scheduler::new(ops, topo.clone(), hybridland(&topo), cfg, None, None).unwrap()
}

fn sched(ring_cap: usize, fifo: bool) -> Scheduler<FakeOps> {
    let mode = if fifo { Mode::Fifo } else { Mode::Policy };
    sched_with(ring_cap, config(mode, SliceMode::Scaled))
}

/// A scheduler with room for 256 tasks: the test binary's heap is the framework's fixed
/// 64 MiB arena, which tests running in parallel with the default storage can exhaust.
fn small(fifo: bool) -> Scheduler<FakeOps> {
    let mode = if fifo { Mode::Fifo } else { Mode::Policy };
    sched_with(
        64,
        LoopConfig {
            max_tasks: 256,
            ..config(mode, SliceMode::Scaled)
        },
    )
}

fn pids(tasks: &[DispatchedTask]) -> Vec<i32> {
    tasks.iter().map(|t| t.pid).collect()
}

mod batches;
mod clock;
mod fast_path;
mod invariants;
mod knobs;
mod nudger;
mod recording;
