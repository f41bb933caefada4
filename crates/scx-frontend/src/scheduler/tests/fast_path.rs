//! The kernel's fast path from the loop's side: its table, the placements it reports, the
//! classes.

use super::*;
use crate::fast_placements::FastPlacement;

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

/// A placement of task `pid` on `cpu` at `woke_ns` with `class`, after a run on `cpu` of
/// `run_ns` that ended there.
fn placement(pid: u32, cpu: CpuId, woke_ns: u64, run_ns: u64, class: u8) -> FastPlacement {
    FastPlacement {
        task: TaskId(pid),
        life: Life(start_of(pid as i32)),
        cpu,
        prev: Some(cpu),
        run: Some(LastRun {
            start_ns: woke_ns - run_ns,
            stop_ns: woke_ns,
        }),
        woke_ns,
        weight: 100,
        class: hybridland_policy::TaskClass(class),
        nr_allowed: 64,
        allowed0: u64::MAX,
    }
}

/// The placements the kernel's fast path reports reach the core: a task busy 9 ms of every 10
/// on an E-CPU becomes class 1 (fits only the P-cores), written once into the kernel; its home
/// is mirrored there, and the core's scan counts it on that CPU.
#[test]
fn fast_path_placements_reach_the_core_and_its_class_the_kernel() {
    let mut s = small(false);
    let e_cpu = CpuId(0);
    assert!(s.core.topology().info(e_cpu).unwrap().capacity < 1024);
    let base = s.now();
    for n in 0..40u64 {
        let at = base.saturating_sub(400_000_000) + n * 10_000_000;
        s.ops
            .placements
            .push(placement(42, e_cpu, at, 9_000_000, 0));
    }
    s.apply_fast_placements();
    assert_eq!(s.ops.classes, [(42, 1)]);
    assert_eq!(
        (
            s.counters.fast_path.placed,
            s.counters.fast_path.class_writes
        ),
        (40, 1)
    );
    assert_eq!(
        s.core.task_class(TaskId(42)),
        hybridland_policy::TaskClass(1)
    );
    assert_eq!(s.core.stats().placed, 40);
    assert!(s.ops.homes.is_some_and(|h| h.contains(e_cpu)));
    assert!(s.core.poll_timeout().is_some(), "the scan is due for it");
    // Under --fifo there is no fast path: nothing is drained.
    let mut f = small(true);
    f.ops.placements.push(s_run());
    f.apply_fast_placements();
    assert_eq!(
        (f.counters.fast_path.placed, f.ops.placements.len()),
        (0, 1)
    );
}

/// A class write that fails is counted, and the task's next placement a hold later, still at
/// the old class, gets it written again; one within the hold does not (the write could be on
/// its way).
#[test]
fn a_failed_class_write_is_written_again_at_the_next_placement() {
    let mut s = small(false);
    let e_cpu = CpuId(0);
    let base = s.now().saturating_sub(1_000_000_000);
    s.ops.class_failures = 1;
    let mut at = base;
    for _ in 0..40 {
        at += 10_000_000;
        s.ops
            .placements
            .push(placement(42, e_cpu, at, 9_000_000, 0));
    }
    s.apply_fast_placements();
    assert_eq!(s.counters.fast_path.class_errors, 1);
    assert!(s.ops.classes.is_empty());
    // The core counts the class as given (as of the drain); the kernel still holds 0.
    at += 1_000_000;
    s.ops.placements.push(placement(42, e_cpu, at, 900_000, 0));
    s.apply_fast_placements();
    assert!(s.ops.classes.is_empty(), "within the hold");
    std::thread::sleep(core::time::Duration::from_nanos(
        hybridland_policy::CLASS_HOLD_NS + 2_000_000,
    ));
    let late = s.now();
    s.ops
        .placements
        .push(placement(42, e_cpu, late, late - at, 0));
    s.apply_fast_placements();
    assert_eq!(s.ops.classes, [(42, 1)]);
    assert_eq!(s.core.stats().class_drift, 1);
}

/// A placement the fast path reported and the task's exit, drained in the same round: the
/// placement is the earlier of the two, and the exited task leaves the table (it is not
/// tracked again until the prune). The same when the placement is written while the round
/// drains the events (the task placed, run and exited between a drain of placements and one of
/// events).
#[test]
fn a_placement_and_the_exit_after_it_in_one_round_leave_no_record() {
    for during_events in [false, true] {
        let mut s = small(false);
        if during_events {
            s.ops.placed_during_events.push(s_run());
        } else {
            s.ops.placements.push(s_run());
        }
        s.ops.events.push(Ok(TaskEvent::Exit {
            at_ns: now_ns(),
            pid: 7,
            tgid: 7,
            life: start_of(7),
        }));
        s.schedule_batch().unwrap();
        assert_eq!(s.counters.fast_path.placed, 1, "{during_events}");
        assert_eq!(s.core.stats().tracked, 0, "{during_events}");
    }
}

fn s_run() -> FastPlacement {
    placement(7, CpuId(0), 2, 1, 0)
}
