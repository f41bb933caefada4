//! The per-task state the core keeps: a full storage, the age prune, the estimate from the runs
//! a live loop reports, and the classes those runs give a task.

use super::*;

/// A full storage decides a task it does not hold from a fresh state every time, counts it,
/// and never evicts the tasks it holds; an exit makes room.
#[test]
fn a_full_storage_decides_new_tasks_from_a_fresh_state() {
    let topo = vm_machine();
    let all = *topo.cpus();
    let mut c = core(&topo, &PolicyConfig::default(), CoreConfig::DEFAULT, 7);
    let capacity = c.stats().capacity as u32;
    assert!(capacity >= 7);
    let ran = |id| Queued {
        last_run: Some(LastRun {
            start_ns: 1_000,
            stop_ns: 2_000_000,
        }),
        ..wakeup(id, Some(CpuId(4)), &all)
    };
    for id in 0..capacity + 3 {
        feed(&mut c, 3_000_000, Input::Queued(ran(id)));
        let _ = poll_all(&mut c);
    }
    let s = c.stats();
    let held = u64::from(capacity);
    assert_eq!((s.tracked, s.high_water, s.untracked), (held, held, 3));
    assert!(c.task(TaskId(capacity)).is_none());
    assert!(c.task(TaskId(0)).unwrap().util() > 0);
    let homes = |c: &Core| u32::from(c.state().home_count(&topo, CpuId(4)));
    assert_eq!(homes(&c), capacity, "only held tasks have homes");
    c.handle(TimeNs(0), Input::Exit { task: TaskId(0) })
        .unwrap();
    assert_eq!(c.stats().exits_tracked, 1, "held");
    c.handle(TimeNs(0), Input::Exit { task: TaskId(0) })
        .unwrap();
    assert_eq!(c.stats().exits_tracked, 1, "no longer held");
    assert_eq!(homes(&c), capacity - 1);
    feed(&mut c, 4_000_000, Input::Queued(ran(capacity)));
    let _ = poll_all(&mut c);
    assert!(c.task(TaskId(capacity)).is_some());
    let s = c.stats();
    assert_eq!((s.exits, s.exits_tracked, s.untracked), (2, 1, 3));
}

/// Tasks not heard of for the forget window leave with their homes, at the tick that names it.
#[test]
fn the_age_prune_forgets_silent_tasks() {
    let topo = vm_machine();
    let all = *topo.cpus();
    let config = CoreConfig {
        nudging: Nudging::Off,
        ..CoreConfig::DEFAULT
    };
    let mut c = core(&topo, &PolicyConfig::default(), config, 64);
    assert_eq!(c.poll_timeout(), None, "nothing to scan or forget");
    let ran = |id, at: u64| Queued {
        last_run: Some(LastRun {
            start_ns: at,
            stop_ns: at + 1_000,
        }),
        ..wakeup(id, Some(CpuId(0)), &all)
    };
    feed(&mut c, 2_000, Input::Queued(ran(1, 1_000)));
    let _ = poll_all(&mut c);
    let late = 25_000_000_000;
    c.handle(TimeNs::from(late), Input::Queued(ran(2, late - 2_000)))
        .unwrap();
    let _ = poll_all(&mut c);
    assert_eq!(c.state().home_count(&topo, CpuId(0)), 2);
    let mut now = c.poll_timeout().unwrap();
    while now.ns() <= late + 10_000_000_000 {
        c.handle(now, Input::Tick).unwrap();
        now = c.poll_timeout().unwrap();
    }
    assert!(c.task(TaskId(1)).is_none() && c.task(TaskId(2)).is_some());
    assert_eq!(c.stats().forgotten, 1);
    assert_eq!(c.state().home_count(&topo, CpuId(0)), 1);
}

/// The estimate the core keeps from the runs a live loop reports converges on the duty cycle
/// times the capacity of the CPU the task ran on.
#[test]
fn the_estimate_from_reported_runs_converges() {
    let topo = vm_machine();
    let all = *topo.cpus();
    proptest!(cases(200), |(period in 20_000u64..=UtilEstimate::HALF_LIFE_NS / 8,
                            duty_pct in 25u64..=100, on_e in any::<bool>())| {
        let run = period * duty_pct / 100;
        let sleep = period - run;
        let cpu = if on_e { CpuId(4) } else { CpuId(0) };
        let mut c = core(&topo, &PolicyConfig::default(), CoreConfig::DEFAULT, 64);
        let span = (UtilEstimate::SETTLE_HALF_LIVES + 1) * UtilEstimate::HALF_LIFE_NS;
        let mut at = 1_000;
        let mut util = 0;
        while at < span {
            let q = Queued {
                last_run: Some(LastRun { start_ns: at, stop_ns: at + run }),
                ..wakeup(7, Some(cpu), &all)
            };
            c.handle(TimeNs::from(at + run + sleep), Input::Queued(q)).unwrap();
            util = c.poll_dispatch().unwrap().util;
            at += run + sleep;
        }
        let capacity = topo.info(cpu).unwrap().capacity;
        testkit::check_util_near(util, run, sleep, capacity)
            .map_err(|v| TestCaseError::fail(v.to_string()))?;
    });
}

/// Runs the fast path reported (`Input::Ran`) reach the estimate, the home and the task's
/// class: a task that keeps a CPU busy becomes class 1 (fits only the P-cores) on the first
/// report after its estimate crosses the E-cores' fit, and is given out once.
#[test]
fn reported_runs_class_a_task_once_per_hold() {
    let topo = vm_machine();
    let all = *topo.cpus();
    let mut c = core(&topo, &PolicyConfig::default(), CoreConfig::DEFAULT, 64);
    // The task is tracked from its first hand-over.
    feed(&mut c, 1_000, Input::Queued(wakeup(7, None, &all)));
    feed(&mut c, 1_000, Input::Snapshot(snapshot(&all)));
    assert!(matches!(c.poll(), Some(Output::Dispatch(_))));
    assert_eq!(c.poll(), None, "util 0 is class 0: nothing to give out");
    let e_cpu = CpuId(4);
    let mut at = 1_000;
    let mut classed = Vec::new();
    // Busy 9 ms of every 10 ms on an E-core, reported run by run.
    for _ in 0..40 {
        let run = LastRun {
            start_ns: at,
            stop_ns: at + 9_000_000,
        };
        feed(
            &mut c,
            run.stop_ns,
            Input::Ran {
                task: TaskId(7),
                cpu: e_cpu,
                run,
                weight: 100,
            },
        );
        at += 10_000_000;
        while let Some(o) = c.poll() {
            classed.push((at, o));
        }
    }
    let Some((_, Output::Class(k))) = classed.first() else {
        panic!("no class change: {classed:?}");
    };
    assert_eq!((k.task, k.class), (TaskId(7), crate::TaskClass(1)));
    assert_eq!(classed.len(), 1, "{classed:?}");
    assert_eq!(c.task_class(TaskId(7)), crate::TaskClass(1));
    assert_eq!(
        c.state().home_count(&topo, e_cpu),
        1,
        "the home moved there"
    );
    // A task not tracked is never classed; a run on a CPU the machine lacks is ignored.
    feed(
        &mut c,
        at,
        Input::Ran {
            task: TaskId(8),
            cpu: CpuId(999),
            run: LastRun {
                start_ns: at,
                stop_ns: at + 1,
            },
            weight: 100,
        },
    );
    assert_eq!(c.poll(), None);
}

/// A policy without a table is never classed.
#[test]
fn a_policy_without_a_table_is_not_classed() {
    let topo = vm_machine();
    let policy = crate::policies::Builtin::Spread
        .build(&topo, &PolicyConfig::default(), 0)
        .unwrap();
    let mut c = SchedCore::with_policy(
        topo.clone(),
        policy,
        CoreConfig::DEFAULT,
        vec![Slot::EMPTY; 64],
    )
    .unwrap();
    assert!(c.policy.wake_table(&topo).is_none());
    for n in 0..40u64 {
        let run = LastRun {
            start_ns: n * 10_000_000,
            stop_ns: n * 10_000_000 + 9_999_000,
        };
        c.handle(
            TimeNs(run.stop_ns),
            Input::Ran {
                task: TaskId(1),
                cpu: CpuId(4),
                run,
                weight: 100,
            },
        )
        .unwrap();
        assert_eq!(c.poll(), None);
    }
}
