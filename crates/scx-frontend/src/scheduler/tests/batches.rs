//! Batches: slices, vtime order, the ring buffer and its backlog, failures and stale picks.

use super::*;

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

/// Beside hogs, a task waiting in the shared queue that may run on a hog's CPU makes the
/// hog's slice end contended: the hog goes to the shared queue behind it (vtime order) rather
/// than back to its CPU's own queue, which that CPU would run first. A task in the shared
/// queue pinned elsewhere does not: the hog keeps its CPU.
#[test]
fn a_task_in_the_shared_queue_that_may_run_here_makes_a_slice_end_yield() {
    for (served, kept) in [(true, false), (false, true)] {
        let (mut s, back) = placed_then_slice_end(20_000_000);
        let cpu = CpuId(u16::try_from(back.cpu).unwrap());
        s.ops.served_cpus = if served {
            [cpu].into_iter().collect()
        } else {
            s.ops.all.iter().filter(|c| *c != cpu).collect()
        };
        s.ops
            .snapshots
            .extend([Ok(CpuSet::EMPTY), Ok(CpuSet::EMPTY)]);
        s.ops.incoming.push_back(Ok(back.clone()));
        s.schedule_batch().unwrap();
        let hog = s.ops.ring.last().unwrap();
        assert_eq!(hog.pid, 1);
        if kept {
            assert_eq!(hog.cpu, back.cpu, "kept on its CPU");
        } else {
            assert_eq!(hog.cpu, RL_CPU_ANY, "to the shared queue");
        }
        // Counted as the stats line's `kept` or `yielded`.
        let (k, y) = (s.counters.kept, s.counters.yielded);
        assert_eq!((k, y), (u64::from(kept), u64::from(!kept)));
    }
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

/// A pid reused before the old thread's exit arrived: the framework's record of the new
/// thread carries its start time, so the core starts it afresh, and the old thread's exit
/// (its own start time) that the round after drains leaves the new thread's entry alone.
#[test]
fn a_reused_pid_is_a_new_task_and_the_old_exit_leaves_it() {
    let (mut s, back) = placed_then_slice_end(20_000_000);
    s.ops.snapshots.push_back(Ok(s.ops.all));
    s.ops.incoming.push_back(Ok(back));
    s.schedule_batch().unwrap();
    s.ops.consume();
    let (old, _) = s.core.task_value(TaskId(1)).unwrap();
    assert!(
        s.core.task(TaskId(1)).unwrap().vtime() > 0,
        "the old thread ran"
    );
    let mut new = wakeup(1);
    new.start_time = start_of(1) + 1;
    s.ops.snapshots.push_back(Ok(s.ops.all));
    s.ops.incoming.push_back(Ok(new));
    s.schedule_batch().unwrap();
    assert_eq!(s.core.stats().renewed, 1);
    let (key, _) = s.core.task_value(TaskId(1)).unwrap();
    assert_ne!(key, old, "a fresh record");
    s.ops.events.push(Ok(TaskEvent::Exit {
        at_ns: now_ns(),
        pid: 1,
        tgid: 1,
        life: start_of(1),
    }));
    s.schedule_batch().unwrap();
    assert_eq!(s.core.stats().stale_exits, 1);
    assert_eq!(
        s.core.task_value(TaskId(1)).map(|(k, _)| k),
        Some(key),
        "still held"
    );
    let c = s.counters();
    assert_eq!((c.events.renewed, c.events.stale_exit), (1, 1));
}
