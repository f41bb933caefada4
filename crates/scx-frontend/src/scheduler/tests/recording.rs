//! The loop's recording, wake-ups with their wakers, and task exits.

use super::*;
use crate::task_events::WakingTask;

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

/// A recording of at most `max_events` events into a scratch directory of its own, which the
/// caller holds for as long as the files are used.
fn record_config(max_events: usize) -> (tempfile::TempDir, crate::record::RecordConfig) {
    let dir = crate::safe_file::testing::scratch();
    let cfg = crate::record::RecordConfig {
        trace: dir.path().join("t.json"),
        live: dir.path().join("t.live.json"),
        max_events,
        max_tasks: 100,
        policy: "hybridland".into(),
        policy_seed: 0,
        settings: Vec::new(),
        machine_source: "test".into(),
    };
    (dir, cfg)
}

#[test]
fn the_loop_records_each_dequeued_task_and_each_decision() {
    let (_dir, cfg) = record_config(100);
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
    let (_dir, cfg) = record_config(2);
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
            life: start_of(2),
        }),
        // Not a task the loop saw: counted, nothing to forget.
        Ok(TaskEvent::Exit {
            at_ns,
            pid: 99,
            tgid: 99,
            life: start_of(99),
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
    s.apply_exits();
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
