//! The loop over a fake framework: every path of a batch, the recording, the error paths.

use super::*;
use crate::task_events::{RawEventError, SourceCounters, WakingTask};
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
    /// `--fifo`'s idle picks, in order (none idle when none left).
    picks: VecDeque<Option<i32>>,
    /// Every fast-path table installed (`None`: switched off), in order.
    fast_wake: Vec<Option<FastWakeTable>>,
    /// Runs the fast path reports at the next drain.
    fast_runs: Vec<crate::fast_runs::FastRun>,
    /// Every class written, and the homes last mirrored.
    classes: Vec<(i32, u8)>,
    homes: Option<CpuSet>,
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
            picks: VecDeque::new(),
            fast_wake: Vec::new(),
            fast_runs: Vec::new(),
            classes: Vec::new(),
            homes: None,
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
            }),
            Err(()) => bail!("snapshot failed"),
        }
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
    fn set_class(&mut self, pid: i32, class: hybridland_policy::TaskClass) -> Result<()> {
        self.classes.push((pid, class.0));
        Ok(())
    }
    fn drain_fast_runs(&mut self, each: &mut dyn FnMut(crate::fast_runs::FastRun)) -> u64 {
        for r in self.fast_runs.drain(..) {
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

#[test]
fn the_fast_path_gets_the_policys_table_and_a_new_one_when_the_knob_changes() {
    let mut s = small(false);
    let first = s
        .ops
        .fast_wake
        .last()
        .cloned()
        .flatten()
        .expect("a table at start");
    assert!(first.table().nr_cpus > 0);
    let before = first.table().balance;
    assert_ne!(
        before,
        hybridland_policy::BalanceRange { from: 0, until: 0 }
    );
    let mode = hybridland_policy::ClusterBalance::Off;
    s.feed(1, Input::ClusterBalance { mode }).unwrap();
    s.install_fast_wake(false);
    let after = s
        .ops
        .fast_wake
        .last()
        .cloned()
        .flatten()
        .expect("a table after the change");
    assert_eq!(
        after.table().balance,
        hybridland_policy::BalanceRange { from: 0, until: 0 }
    );
}

#[test]
fn no_fast_path_under_fifo_or_no_fast_wake() {
    let s = small(true);
    assert!(matches!(s.ops.fast_wake.as_slice(), [None]));
    let s = sched_with(
        64,
        LoopConfig {
            max_tasks: 256,
            fast_wake: false,
            ..config(Mode::Policy, SliceMode::Scaled)
        },
    );
    assert!(matches!(s.ops.fast_wake.as_slice(), [None]));
}

#[test]
fn the_loops_own_cpu_is_idle_for_a_wakeup_unless_a_task_was_preempted_there() {
    // A spinner holds CPU 4 (P-core 4-5); the loop runs on CPU 6 (P-core 6-7), which the
    // kernel's mask shows busy. A woken task gets the P-core the loop sits on.
    let mut busy = CpuSet::EMPTY;
    busy.insert(CpuId(4));
    busy.insert(CpuId(6));
    let mut s = sched(64, false);
    s.ops.own = Some(CpuId(6));
    let idle = s.ops.all.and_not(&busy);
    s.ops.snapshots.extend([Ok(idle), Ok(idle)]);
    s.ops.incoming.push_back(Ok(wakeup(1)));
    s.schedule_batch().unwrap();
    assert!([6, 7].contains(&s.ops.ring[0].cpu), "{:?}", s.ops.ring[0]);
    assert_eq!(
        s.counters.steps.0[hybridland_policy::Step::IdlePCore.index()],
        1
    );
    // The loop preempted a task on CPU 6 at its slice end: that task keeps CPU 6 and the
    // woken one goes elsewhere, not to CPU 6's core.
    let mut s = sched(64, false);
    s.ops.own = Some(CpuId(6));
    s.ops.snapshots.extend([Ok(idle), Ok(idle)]);
    let mut back = wakeup(2);
    back.flags = 0;
    back.cpu = 6;
    back.start_ts = 1;
    back.stop_ts = 2;
    s.ops.incoming.extend([Ok(back), Ok(wakeup(3))]);
    s.schedule_batch().unwrap();
    let by_pid = |pid| s.ops.ring.iter().find(|t| t.pid == pid).unwrap().cpu;
    assert_eq!(by_pid(2), 6);
    assert!(![6, 7].contains(&by_pid(3)), "{}", by_pid(3));
}

/// A recording into `dir` of at most `max_events` events.
fn record_config(dir: &std::path::Path, max_events: usize) -> crate::record::RecordConfig {
    crate::record::RecordConfig {
        trace: dir.join("t.json"),
        live: dir.join("t.live.json"),
        max_events,
        max_tasks: 100,
        policy: "hybridland".into(),
        policy_seed: 0,
        settings: Vec::new(),
        machine_source: "test".into(),
    }
}

#[test]
fn the_loop_records_each_dequeued_task_and_each_decision() {
    let dir = std::env::temp_dir().join(format!("hl-loop-record-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cfg = record_config(&dir, 100);
    let now = now_ns();
    let mut s = sched(64, false).with_recorder(
        Recorder::new(cfg, now - 10_000_000, Counters::default(), Vec::new()),
        Some(TailReader::spawn().unwrap()),
    );
    // Two wake-ups, and a task back from a 3 ms run on E-core 1 that ended 1 ms ago.
    let mut back = wakeup(3);
    back.flags = 0;
    back.cpu = 1;
    back.start_ts = now - 4_000_000;
    back.stop_ts = now - 1_000_000;
    back.exec_runtime = 3_000_000;
    s.ops
        .incoming
        .extend([Ok(wakeup(1)), Ok(wakeup(2)), Ok(back)]);
    s.schedule_batch().unwrap();
    // The recording stops; /proc is read by the reader thread while the loop goes on.
    s.finish_recording();
    assert!(!s.tails_pending, "the reader answered");
    let counters = s.counters;
    let recording = s.into_parts().recording;
    let (recorder, topo) = recording.unwrap();
    let (trace, live) = recorder.build(&topo).unwrap();
    assert_eq!(live.events, 3);
    // Each decision counted once: a placement by a step or a kept CPU.
    let placed: u64 = live.steps.iter().map(|s| s.count).sum();
    assert_eq!(placed + live.kept, 3);
    assert_eq!(placed, counters.steps.0.iter().sum::<u64>());
    // Only the task that ran is in the trace: 3 ms on a 640 E-core, 1.875 ms of work.
    assert_eq!(trace.tasks.len(), 1);
    assert_eq!(
        trace.tasks[0].phases,
        [hybridland_trace::format::Phase::RunNs(1_875_000)]
    );
}

/// The event source's wake-ups by a task go into the recording (not those from an
/// interrupt), and one that fills its buffer stops the recording.
#[test]
fn wakeups_by_a_task_go_into_the_recording_until_it_is_full() {
    let dir = std::env::temp_dir().join(format!("hl-loop-wakes-{}", std::process::id()));
    let cfg = record_config(&dir, 2);
    let now = now_ns();
    let mut s = sched(64, false).with_recorder(
        Recorder::new(cfg, now, Counters::default(), Vec::new()),
        None,
    );
    let waking = |pid, waker: Option<i32>| {
        Ok(TaskEvent::Waking {
            at_ns: now + 1_000,
            pid,
            waker: waker.map(|pid| WakingTask { pid, cpu: CpuId(4) }),
        })
    };
    s.ops.events.extend([waking(1, Some(3)), waking(2, None)]);
    s.apply_events();
    let r = s.recorder.as_ref().unwrap();
    assert!(r.recording());
    assert_eq!(
        r.wakes(),
        [crate::record::Wake {
            at_ns: now + 1_000,
            pid: 1,
            waker: 3
        }]
    );
    s.ops
        .events
        .extend([waking(2, Some(3)), waking(5, Some(3))]);
    s.apply_events();
    let r = s.recorder.as_ref().unwrap();
    assert!(!r.recording(), "a full buffer stops the recording");
    assert_eq!(r.wakes().len(), 2);
}

#[test]
fn a_wake_up_reaches_the_core_with_its_waker_from_the_same_round() {
    let mut s = sched(64, false);
    let waking = |pid| {
        Ok(TaskEvent::Waking {
            at_ns: now_ns(),
            pid,
            waker: Some(WakingTask {
                pid: 9,
                cpu: CpuId(4),
            }),
        })
    };
    // The event and the woken task arrive before the same round: the event is applied
    // first, so the task is handed over with its waker.
    s.ops.events.push(waking(1));
    s.ops.incoming.extend([Ok(wakeup(1)), Ok(wakeup(2))]);
    s.schedule_batch().unwrap();
    assert_eq!(
        s.counters.events.waker_to_core, 1,
        "task 2 had no waking event"
    );
    // Taken with that wake-up: the next one, with no event of its own, has none.
    s.ops.incoming.push_back(Ok(wakeup(1)));
    s.schedule_batch().unwrap();
    assert_eq!(s.counters.events.waker_to_core, 1);
}

#[test]
fn an_exit_event_takes_the_task_out_of_the_table_at_once() {
    let mut s = sched(64, false);
    s.ops
        .incoming
        .extend([Ok(wakeup(1)), Ok(wakeup(2)), Ok(wakeup(3))]);
    s.schedule_batch().unwrap();
    assert_eq!(s.core.stats().tracked, 3);
    let at_ns = now_ns();
    s.ops.events.extend([
        Ok(TaskEvent::Exit {
            at_ns,
            pid: 2,
            tgid: 2,
        }),
        // Not a task the loop saw: counted, nothing to forget.
        Ok(TaskEvent::Exit {
            at_ns,
            pid: 99,
            tgid: 99,
        }),
        Ok(TaskEvent::Waking {
            at_ns,
            pid: 1,
            waker: Some(WakingTask {
                pid: 3,
                cpu: CpuId(4),
            }),
        }),
        Ok(TaskEvent::Waking {
            at_ns,
            pid: 3,
            waker: None,
        }),
        Ok(TaskEvent::Refill {
            at_ns,
            pid: 1,
            cpu: CpuId(0),
            slice_us: 20_000,
        }),
        Err(RawEventError::Kind(7)),
    ]);
    s.apply_events();
    assert_eq!(s.core.stats().tracked, 2);
    assert!(s.core.task(TaskId(2)).is_none() && s.core.task(TaskId(1)).is_some());
    let e = s.counters().events;
    assert_eq!(
        (
            e.exit,
            e.exit_tracked,
            e.waking,
            e.woken_by_task,
            e.refill,
            e.bad
        ),
        (2, 1, 2, 1, 1, 1)
    );
    // Drained: a second call applies nothing again.
    s.apply_events();
    assert_eq!(s.counters().events, e);
}

/// Task 1 placed on an idle machine and taken by the kernel, then back from its CPU at a
/// slice end after running `ran_ns` (until 1 ms ago): the scheduler and that slice end.
fn placed_then_slice_end(ran_ns: u64) -> (Scheduler<FakeOps>, QueuedTask) {
    let mut s = small(false);
    let now = now_ns();
    s.ops.snapshots.push_back(Ok(s.ops.all));
    s.ops.incoming.push_back(Ok(wakeup(1)));
    s.schedule_batch().unwrap();
    let cpu = s.ops.ring[0].cpu;
    s.ops.consume();
    let mut back = wakeup(1);
    back.flags = 0;
    back.cpu = cpu;
    back.start_ts = now - ran_ns - 1_000_000;
    back.stop_ts = now - 1_000_000;
    back.exec_runtime = ran_ns;
    (s, back)
}

/// Beside hogs no CPU is idle: the shared queue, which the framework keeps in vtime order
/// (`scx_bpf_dsq_insert_vtime`), gets each task with the core's vtime, so a task that
/// slept goes ahead of a hog back from a 20 ms run.
#[test]
fn the_shared_queue_gets_the_cores_vtime_a_sleeper_before_a_hog() {
    // It ran 20 ms; others wait on its CPU and nothing is idle.
    let (mut s, back) = placed_then_slice_end(20_000_000);
    s.ops.queued_cpus = s.ops.all;
    s.ops
        .snapshots
        .extend([Ok(CpuSet::EMPTY), Ok(CpuSet::EMPTY)]);
    s.ops.incoming.extend([Ok(back), Ok(wakeup(2))]);
    s.schedule_batch().unwrap();
    let by_pid = |pid| s.ops.ring.iter().find(|t| t.pid == pid).unwrap().clone();
    let (hog, sleeper) = (by_pid(1), by_pid(2));
    assert_eq!((hog.cpu, sleeper.cpu), (RL_CPU_ANY, RL_CPU_ANY));
    assert!(
        sleeper.vtime < hog.vtime && hog.vtime > 0,
        "sleeper {} hog {}",
        sleeper.vtime,
        hog.vtime
    );
}

/// `--fifo`: a task goes to the idle CPU the framework claims for it, else to the shared
/// queue.
#[test]
fn fifo_sends_a_task_to_the_idle_cpu_claimed_for_it() {
    let mut s = small(true);
    s.ops.picks.extend([Some(6), None]);
    s.ops.incoming.extend([Ok(wakeup(1)), Ok(wakeup(2))]);
    s.schedule_batch().unwrap();
    let cpus: Vec<_> = s.ops.ring.iter().map(|t| (t.pid, t.cpu)).collect();
    assert_eq!(cpus, [(1, 6), (2, RL_CPU_ANY)]);
}

/// `--fifo`: once no CPU is idle for a task that may run anywhere, the rest of the batch
/// goes to the shared queue unasked; a task that may not run anywhere is still asked for.
#[test]
fn fifo_stops_asking_for_idle_cpus_once_none_is_left() {
    let mut s = small(true);
    s.ops.picks.extend([None, Some(3), Some(6)]);
    let mut pinned = wakeup(3);
    pinned.nr_cpus_allowed = 1;
    s.ops
        .incoming
        .extend([Ok(wakeup(1)), Ok(wakeup(2)), Ok(pinned), Ok(wakeup(4))]);
    s.schedule_batch().unwrap();
    let cpus: Vec<_> = s.ops.ring.iter().map(|t| (t.pid, t.cpu)).collect();
    assert_eq!(
        cpus,
        [(1, RL_CPU_ANY), (2, RL_CPU_ANY), (3, 3), (4, RL_CPU_ANY)]
    );
    // Asked for tasks 1 and 3 only; the third answer was never asked for.
    assert_eq!(s.counters.rounds.snapshots, 2);
    assert_eq!(s.ops.picks.len(), 1);
}

/// The loop counts its rounds and snapshots: what `--stats` shows as the cost of a batch.
#[test]
fn rounds_and_snapshots_are_counted() {
    for fifo in [false, true] {
        let mut s = small(fifo);
        s.ops.incoming.extend((1..=3).map(|p| Ok(wakeup(p))));
        s.schedule_batch().unwrap();
        s.schedule_batch().unwrap();
        let r = s.counters.rounds;
        assert_eq!((r.batches, r.empty, r.tasks), (1, 1, 3));
        if fifo {
            // One idle pick (a bpf() call) until one finds none, no snapshot.
            assert_eq!((r.snapshots, r.snapshot_ns, r.decide_ns), (1, 0, 0));
            assert_eq!(s.ops.nr_snapshots, 0);
        } else {
            assert!(r.snapshots >= 1, "{r:?}");
            assert_eq!(r.snapshots, s.ops.nr_snapshots as u64);
        }
    }
}

#[test]
fn fixed_slice_gives_the_full_slice_where_policy_mode_divides_it() {
    // Six tasks in one batch: the default rule divides the slice by the six waiting.
    let slices = |slice| {
        let mut s = sched_with(64, config(Mode::Policy, slice));
        s.ops.incoming.extend((1..=6).map(|p| Ok(wakeup(p))));
        s.schedule_batch().unwrap();
        s.ops.ring.iter().map(|t| t.slice_ns).collect::<Vec<_>>()
    };
    let divided = 5_000_000 / 6;
    assert_eq!(slices(SliceMode::Scaled), [divided; 6]);
    assert_eq!(slices(SliceMode::Fixed), [5_000_000; 6]);
}

#[test]
fn a_full_ring_buffer_keeps_every_task_and_sends_the_backlog_first() {
    for fifo in [false, true] {
        let mut s = sched(3, fifo);
        s.ops.incoming.extend((1..=10).map(|p| Ok(wakeup(p))));
        s.schedule_batch().unwrap();
        // Three fit; seven wait with us, to the shared queue; the framework is told.
        assert_eq!(pids(&s.ops.ring), [1, 2, 3]);
        assert_eq!(s.backlog.len(), 7);
        assert!(s.backlog.iter().all(|t| t.cpu == RL_CPU_ANY));
        assert_eq!(s.counters.dispatch_retries, 7);
        assert_eq!(s.ops.pending.last(), Some(&7));
        // New tasks arrive while the ring buffer is still full: they queue behind.
        s.ops.incoming.extend((11..=12).map(|p| Ok(wakeup(p))));
        s.schedule_batch().unwrap();
        assert_eq!(s.backlog.len(), 9);
        // The kernel drains it a few times: the backlog goes first, oldest first.
        let mut rounds = 0;
        while !s.backlog.is_empty() || !s.ops.ring.is_empty() {
            s.ops.consume();
            s.schedule_batch().unwrap();
            rounds += 1;
            assert!(rounds < 10);
        }
        assert_eq!(pids(&s.ops.delivered), (1..=12).collect::<Vec<_>>());
        assert_eq!(s.ops.pending.last(), Some(&0));
    }
}

#[test]
fn the_largest_task_storage_fits_its_share_of_the_frameworks_heap() {
    let bytes = |tasks| Slot::count_for(tasks) * size_of::<Slot>();
    assert!(
        bytes(MAX_MAX_TASKS) <= STORAGE_BUDGET,
        "{} bytes",
        bytes(MAX_MAX_TASKS)
    );
    // The budget is not slack: twice the maximum would not fit.
    assert!(bytes(2 * MAX_MAX_TASKS) > STORAGE_BUDGET);
}

#[test]
fn the_backlog_stays_within_what_was_reserved_and_the_rest_waits_in_the_kernel() {
    for fifo in [false, true] {
        let mut s = sched(0, fifo);
        let reserved = s.backlog.capacity();
        let n = 3 * BACKLOG_MAX as i32;
        s.ops.incoming.extend((1..=n).map(|p| Ok(wakeup(p))));
        for _ in 0..20 {
            s.schedule_batch().unwrap();
            assert!(s.backlog.len() <= BACKLOG_MAX);
        }
        // Full: nothing more is taken from the kernel, and nothing was reallocated.
        assert_eq!(s.backlog.len(), BACKLOG_MAX);
        assert_eq!(s.ops.incoming.len(), n as usize - BACKLOG_MAX);
        assert_eq!(s.backlog.capacity(), reserved);
        // The ring buffer opens: everything arrives, the backlog first, each task once.
        s.ops.ring_cap = 64;
        let mut rounds = 0;
        while !s.backlog.is_empty() || !s.ops.incoming.is_empty() || !s.ops.ring.is_empty() {
            s.ops.consume();
            s.schedule_batch().unwrap();
            rounds += 1;
            assert!(rounds < 100);
        }
        assert_eq!(pids(&s.ops.delivered), (1..=n).collect::<Vec<_>>());
    }
}

#[test]
fn no_task_is_lost_whatever_fails() {
    // Ring buffers of 1 to 5 slots drained every other round, every third snapshot failing,
    // every fifth dequeue failing: each task arrives exactly once.
    for cap in 1..=5 {
        let mut s = sched(cap, false);
        let mut next_pid = 1;
        for round in 0..60 {
            if round % 5 == 0 {
                s.ops.incoming.push_back(Err(-4));
            }
            for _ in 0..(round % 4) {
                s.ops.incoming.push_back(Ok(wakeup(next_pid)));
                next_pid += 1;
            }
            s.ops.snapshots.push_back(if round % 3 == 0 {
                Err(())
            } else {
                Ok(s.ops.all)
            });
            s.schedule_batch().unwrap();
            if round % 2 == 0 {
                s.ops.consume();
            }
        }
        for _ in 0..200 {
            s.schedule_batch().unwrap();
            s.ops.consume();
        }
        let mut got = pids(&s.ops.delivered);
        got.sort_unstable();
        assert_eq!(got, (1..next_pid).collect::<Vec<_>>(), "ring of {cap}");
        assert!(s.backlog.is_empty());
        assert!(s.counters.dequeue_errors > 0 && s.counters.snapshot_errors > 0);
    }
}

#[test]
fn a_failed_snapshot_sends_the_batch_to_the_shared_queue() {
    let mut s = sched(64, false);
    s.ops.snapshots.push_back(Err(()));
    s.ops.incoming.extend((1..=3).map(|p| Ok(wakeup(p))));
    s.schedule_batch().unwrap();
    assert_eq!(pids(&s.ops.ring), [1, 2, 3]);
    assert!(s.ops.ring.iter().all(|t| t.cpu == RL_CPU_ANY));
    assert!(s.ops.ring.iter().all(|t| t.slice_ns > 0));
    assert_eq!(s.counters.snapshot_errors, 1);
    // The next batch has a snapshot again: a lone waking task gets a P-core.
    s.ops.consume();
    s.ops.incoming.push_back(Ok(wakeup(4)));
    s.schedule_batch().unwrap();
    assert!((4..8).contains(&s.ops.ring[0].cpu), "{:?}", s.ops.ring[0]);
}

#[test]
fn only_a_sustained_run_of_snapshot_failures_ends_the_scheduler() {
    let mut s = sched(64, false);
    let ms = 1_000_000;
    // Many failures within 2 s: each batch goes blind, the scheduler goes on.
    for i in 0..50 {
        s.ops.snapshots.push_back(Err(()));
        assert!(s.snapshot(1_000 * ms + i * 30 * ms).unwrap().is_none());
    }
    // One success clears the run.
    assert!(s.snapshot(2_600 * ms).unwrap().is_some());
    // Failures spread over more than 2 s but fewer than ten: still going.
    for i in 0..9 {
        s.ops.snapshots.push_back(Err(()));
        assert!(s.snapshot(3_000 * ms + i * 400 * ms).unwrap().is_none());
    }
    // The tenth, 3.6 s after the first: it gives up.
    s.ops.snapshots.push_back(Err(()));
    let e = s.snapshot(6_600 * ms).unwrap_err();
    assert!(e.to_string().contains("keeps failing"), "{e:#}");
    assert_eq!(s.counters.snapshot_errors, 60);
}

#[test]
fn a_pick_whose_cpu_turned_busy_goes_to_the_shared_queue() {
    let mut s = sched(64, false);
    // First snapshot: all idle, so the two wake-ups get the two P-cores (4 and 6). By the
    // second, CPU 4 is busy.
    let all = s.ops.all;
    let mut later = all;
    s.ops.snapshots.push_back(Ok(all));
    s.ops.incoming.extend((1..=2).map(|p| Ok(wakeup(p))));
    let first = {
        let mut probe = sched(64, false);
        probe.ops.incoming.extend((1..=2).map(|p| Ok(wakeup(p))));
        probe.schedule_batch().unwrap();
        probe.ops.ring.iter().map(|t| t.cpu).collect::<Vec<_>>()
    };
    let busy = CpuId(u16::try_from(first[0]).unwrap());
    later.remove(busy);
    s.ops.snapshots.push_back(Ok(later));
    s.schedule_batch().unwrap();
    assert_eq!(s.ops.nr_snapshots, 2);
    assert_eq!(s.ops.ring[0].cpu, RL_CPU_ANY);
    assert_eq!(s.ops.ring[1].cpu, first[1]);
    assert_eq!(s.counters.stale, 1);
}

/// A task left on an E-core while the P-cores were busy: once a P-core idles, the core's
/// timer gives a nudge, the loop wakes the helper, and the core sends the helper to that
/// E-core with the helper's short slice.
#[test]
fn a_nudge_wakes_the_helper_and_the_core_sends_it_to_the_cpu() {
    let topo = machine();
    let helper = Nudger::spawn().unwrap();
    let tid = helper.tid;
    let mut s = Scheduler::new(
        FakeOps::new(&topo, 64),
        topo.clone(),
        hybridland(&topo),
        config(Mode::Policy, SliceMode::Scaled),
        None,
        Some(helper),
    )
    .unwrap();
    let e_cores: CpuSet = (0..4).map(CpuId).collect();
    s.ops.snapshots.push_back(Ok(e_cores));
    s.ops.incoming.push_back(Ok(wakeup(1)));
    s.schedule_batch().unwrap();
    let on = s.ops.ring[0].cpu;
    assert!((0..4).contains(&on), "on an E-core: {on}");
    // The P-cores idle; the task still runs on its E-core.
    let mut idle = *topo.cpus();
    idle.remove(CpuId(u16::try_from(on).unwrap()));
    s.ops.snapshots.push_back(Ok(idle));
    let now = now_ns();
    assert!(s.core.poll_timeout().is_some_and(|at| at.ns() <= now));
    s.tick(now).unwrap();
    assert_eq!(s.counters().nudges, 1);
    s.ops.incoming.push_back(Ok(wakeup(tid)));
    s.schedule_batch().unwrap();
    let sent = s.ops.ring.last().unwrap();
    assert_eq!((sent.pid, sent.cpu), (tid, on));
    assert_eq!(sent.slice_ns, CoreConfig::DEFAULT.helper_slice_ns);
    s.nudger.take().unwrap().close_and_join();
}

#[test]
fn dequeue_errors_are_counted_and_logged_at_most_once_a_second() {
    let mut limit = LogLimit::new(1_000);
    assert_eq!(limit.allow(10), Some(0));
    assert_eq!(limit.allow(500), None);
    assert_eq!(limit.allow(1_009), None);
    assert_eq!(limit.allow(1_010), Some(2));
    assert_eq!(limit.allow(1_011), None);
    let mut s = sched(64, false);
    for _ in 0..5 {
        s.ops.incoming.push_back(Err(-22));
        s.ops.incoming.push_back(Ok(wakeup(1)));
        s.schedule_batch().unwrap();
    }
    // Each error ends that batch's drain; the task behind it comes in the next round.
    assert_eq!(s.counters.dequeue_errors, 5);
    s.schedule_batch().unwrap();
    assert_eq!(s.ops.ring.len(), 5);
}

#[test]
fn no_nudge_helper_in_fifo_mode_and_its_pipe_closes() {
    let topo = machine();
    let cfg = |mode| config(mode, SliceMode::Scaled);
    let mut n = Nudger::spawn().unwrap();
    n.wake();
    let s = Scheduler::new(
        FakeOps::new(&topo, 8),
        topo.clone(),
        hybridland(&topo),
        cfg(Mode::Fifo),
        None,
        Some(n),
    )
    .unwrap();
    assert!(s.nudger.is_none());
    assert_eq!(s.core.config().nudging, Nudging::Off, "no helper, no scan");
    let s = Scheduler::new(
        FakeOps::new(&topo, 8),
        topo.clone(),
        hybridland(&topo),
        cfg(Mode::Policy),
        None,
        Some(Nudger::spawn().unwrap()),
    )
    .unwrap();
    assert_ne!(s.core.config().nudging, Nudging::Off);
    // Closing the pipe ends the helper thread (join returns).
    let mut s = s;
    s.nudger.take().unwrap().close_and_join();
}

/// One round as the framework hands it over: the idle CPUs and the CPUs with tasks in
/// their own queue (bit masks over the VM's 8 CPUs), the loop's own CPU, and tasks back:
/// `(pid, slice end)`, a slice end only for a task running from an earlier round.
#[derive(Clone, Debug)]
struct Round {
    idle: u8,
    queued: u8,
    own: Option<u16>,
    tasks: Vec<(i32, bool)>,
}

fn random_rounds(rng: &mut hybridland_policy::rng::Pcg32) -> Vec<Round> {
    (0..1 + rng.below(30))
        .map(|_| Round {
            idle: rng.below(256) as u8,
            queued: if rng.below(4) == 0 {
                rng.below(256) as u8
            } else {
                0
            },
            own: (rng.below(2) == 0).then(|| rng.below(8) as u16),
            tasks: (0..1 + rng.below(5))
                .map(|_| (1 + rng.below(12) as i32, rng.below(2) == 0))
                .collect(),
        })
        .collect()
}

fn mask(bits: u8) -> CpuSet {
    let mut set = CpuSet::EMPTY;
    for cpu in (0..8u16).filter(|c| bits & (1 << c) != 0) {
        set.insert(CpuId(cpu));
    }
    set
}

/// The shared invariants over the live loop's own sequence: generated rounds go through
/// the loop as the framework hands them over (dequeue, snapshot and recheck, the core,
/// dispatch), and every hybridland decision the core makes on them, with the state it had
/// at that point of the batch, passes the policy crate's checkers. One scheduler takes
/// every round, checked after each: seeded draws, not proptest, whose shrinking builds
/// thousands of schedulers (a few MiB each) in the framework's 64 MiB heap arena this test
/// binary runs in, which then fails an allocation and hangs instead of reporting.
#[test]
fn every_decision_the_live_loop_asks_for_obeys_the_invariants() {
    let mut s = small(false);
    s.core.start_audit();
    // Where each task was sent, and since when.
    let mut placed: std::collections::BTreeMap<i32, (i32, u64)> = Default::default();
    let mut handed = 0u64;
    for seed in 0..256 {
        let mut rng = hybridland_policy::rng::Pcg32::new(seed, 7);
        for (i, r) in random_rounds(&mut rng).iter().enumerate() {
            let idle = mask(r.idle);
            // The snapshot and the recheck the batch may take.
            s.ops.snapshots.extend([Ok(idle), Ok(idle)]);
            s.ops.queued_cpus = mask(r.queued);
            s.ops.own = r.own.map(CpuId);
            let now = now_ns();
            let mut seen = Vec::new();
            for &(pid, slice_end) in &r.tasks {
                if seen.contains(&pid) {
                    continue; // a task is in the framework's queue once
                }
                seen.push(pid);
                let mut t = wakeup(pid);
                if let Some(&(cpu, since)) = placed.get(&pid).filter(|(c, _)| *c >= 0) {
                    t.cpu = cpu;
                    t.start_ts = since;
                    t.stop_ts = now.max(since + 1);
                    if slice_end {
                        t.flags = 0;
                    }
                }
                handed += 1;
                s.ops.incoming.push_back(Ok(t));
            }
            s.schedule_batch().unwrap();
            s.ops.snapshots.clear();
            for d in s.ops.ring.drain(..) {
                placed.insert(d.pid, (d.cpu, now));
            }
            let audit = s.core.audit().unwrap();
            if let Some((task, v)) = &audit.first_violation {
                panic!("seed {seed}, round {i} ({r:?}): task {task}: {v}");
            }
            // Every task handed over was checked: every snapshot succeeds here and every
            // affinity is known, so the core decided each one on its state.
            assert_eq!(
                audit.wakeups + audit.slice_ends,
                handed,
                "seed {seed} round {i}"
            );
        }
    }
}

/// A policy with one knob of its own, which it only stores.
struct OwnKnob(i64);

const OWN_KNOBS: &[hybridland_policy::KnobSpec] = &[hybridland_policy::KnobSpec::int(
    "heavy_util",
    0,
    1024,
    256,
    "",
)];

impl PlacementPolicy for OwnKnob {
    fn name(&self) -> &str {
        "own-knob"
    }

    fn wakeup(&mut self, view: &hybridland_policy::View<'_>) -> hybridland_policy::Placement {
        view.place_on(view.idle_allowed().first())
    }

    fn knobs(&self) -> &'static [hybridland_policy::KnobSpec] {
        OWN_KNOBS
    }

    fn set_knob(&mut self, _index: usize, value: i64) {
        self.0 = value;
    }
}

/// A value written to a policy's own knob file reaches the core as `Input::Knob` (so the
/// decision log keeps it); one out of range does not.
#[test]
fn a_written_own_knob_reaches_the_core_and_the_decision_log() {
    use crate::control_file::{KnobFile, Watcher, ensure_dir};
    let dir = std::env::temp_dir().join(format!("hl-own-loop-{}", std::process::id()));
    let made = ensure_dir(&dir).unwrap().then(|| dir.clone());
    let file = KnobFile::create(&dir, OWN_KNOBS[0], 0, 256).unwrap();
    let watcher = Watcher::spawn_all(None, vec![file], &[256], made).unwrap();
    let topo = machine();
    let ops = FakeOps::new(&topo, 64);
    let cfg = LoopConfig {
        max_tasks: 256,
        ..config(Mode::Policy, SliceMode::Scaled)
    };
    let s = Scheduler::new(ops, topo, Box::new(OwnKnob(256)), cfg, Some(watcher), None).unwrap();
    let mut s = s.with_decision_log(
        dir.join("unused.decisions.jsonl"),
        String::new(),
        0,
        (&PolicyConfig::default(), Default::default()),
        1 << 20,
    );
    let knob_entries = |s: &Scheduler<FakeOps>| -> Vec<(u16, i64)> {
        s.decisions
            .as_ref()
            .unwrap()
            .1
            .iter()
            .filter_map(|e| match e {
                Entry::Input {
                    input: hybridland_policy::OwnedInput::Knob { index, value },
                    ..
                } => Some((index, value)),
                _ => None,
            })
            .collect()
    };
    let path = dir.join("heavy_util");
    let written =
        |text: &str, s: &mut Scheduler<FakeOps>, done: &dyn Fn(&Scheduler<FakeOps>) -> bool| {
            std::thread::sleep(core::time::Duration::from_millis(20));
            std::fs::write(&path, text).unwrap();
            // Liveness only: generous for a loaded machine, never a speed claim.
            for _ in 0..1000 {
                s.poll_knob();
                if done(s) {
                    return;
                }
                std::thread::sleep(core::time::Duration::from_millis(10));
            }
            panic!("{text:?}: nothing happened in 10 s");
        };
    // Out of range: the file is rewritten with the value in force, the core told nothing.
    let rewritten =
        |_: &Scheduler<FakeOps>| std::fs::read_to_string(&path).is_ok_and(|t| t == "256\n");
    written("5000\n", &mut s, &rewritten);
    s.poll_knob();
    assert_eq!(knob_entries(&s), vec![], "out of range");
    written("300\n", &mut s, &|s| !knob_entries(s).is_empty());
    assert_eq!(knob_entries(&s), vec![(0, 300)]);
    drop(s);
    assert!(!dir.exists());
}

/// Runs the kernel's fast path reports reach the core: a task busy 9 ms of every 10 on an
/// E-CPU becomes class 1 (fits only the P-cores), written once into the kernel, and its home
/// is mirrored there.
#[test]
fn fast_path_runs_reach_the_core_and_its_class_the_kernel() {
    let mut s = small(false);
    let e_cpu = CpuId(0);
    assert!(s.core.topology().info(e_cpu).unwrap().capacity < 1024);
    for n in 0..40u64 {
        s.ops.fast_runs.push(crate::fast_runs::FastRun {
            task: TaskId(42),
            cpu: e_cpu,
            run: LastRun {
                start_ns: 1_000_000 + n * 10_000_000,
                stop_ns: 10_000_000 + n * 10_000_000,
            },
            weight: 100,
        });
    }
    s.apply_fast_runs();
    assert_eq!(s.ops.classes, [(42, 1)]);
    assert_eq!(
        (s.counters.fast_path.runs, s.counters.fast_path.class_writes),
        (40, 1)
    );
    assert_eq!(
        s.core.task_class(TaskId(42)),
        hybridland_policy::TaskClass(1)
    );
    assert!(s.ops.homes.is_some_and(|h| h.contains(e_cpu)));
    // Under --fifo there is no fast path: nothing is drained.
    let mut f = small(true);
    f.ops.fast_runs.push(s_run());
    f.apply_fast_runs();
    assert_eq!((f.counters.fast_path.runs, f.ops.fast_runs.len()), (0, 1));
}

fn s_run() -> crate::fast_runs::FastRun {
    crate::fast_runs::FastRun {
        task: TaskId(7),
        cpu: CpuId(0),
        run: LastRun {
            start_ns: 1,
            stop_ns: 2,
        },
        weight: 100,
    }
}
