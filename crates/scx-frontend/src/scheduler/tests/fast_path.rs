//! The kernel's fast path from the loop's side: its table, the runs it reports, the classes.

use super::*;

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

/// A run the fast path reported and the task's exit, drained in the same round: the run is
/// the earlier of the two, and the exited task leaves the table (it is not tracked again
/// until the prune). The same when the run is written while the round drains the events
/// (the task placed, run and exited between a drain of runs and one of events).
#[test]
fn a_run_and_the_exit_after_it_in_one_round_leave_no_record() {
    for during_events in [false, true] {
        let mut s = small(false);
        if during_events {
            s.ops.runs_during_events.push(s_run());
        } else {
            s.ops.fast_runs.push(s_run());
        }
        s.ops.events.push(Ok(TaskEvent::Exit {
            at_ns: now_ns(),
            pid: 7,
            tgid: 7,
        }));
        s.schedule_batch().unwrap();
        assert_eq!(s.counters.fast_path.runs, 1, "{during_events}");
        assert_eq!(s.core.stats().tracked, 0, "{during_events}");
    }
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
