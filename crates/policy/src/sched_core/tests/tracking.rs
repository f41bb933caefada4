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

/// Wake-ups the caller placed (`Input::Placed`) reach the estimate, the home and the task's
/// class: a task that keeps a CPU busy becomes class 1 (fits only the P-cores) on the first
/// report after its estimate crosses the E-cores' fit, and is given out once.
#[test]
fn placed_wakeups_class_a_task_once_per_hold() {
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
    let mut class = 0;
    // Busy 9 ms of every 10 ms on an E-core, placed back there each time; the caller writes
    // what the core gives out.
    for _ in 0..40 {
        at += 10_000_000;
        feed(
            &mut c,
            at,
            placed(7, e_cpu, 9_000_000, at - 1_000_000, e_cpu, class, &all),
        );
        while let Some(o) = c.poll() {
            if let Output::Class(k) = o {
                class = k.class.0;
            }
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
    assert_eq!((c.stats().placed, c.stats().class_drift), (40, 0));
    // A placement on a CPU the machine lacks is refused and changes nothing.
    let refused = c.stats().refused;
    feed(&mut c, at, placed(8, e_cpu, 1, at, CpuId(999), 0, &all));
    assert_eq!(c.poll(), None);
    assert_eq!(c.stats().refused, refused + 1);
    assert!(c.task(TaskId(8)).is_none());
}

/// A placement that read another class than the core gave out, long enough after it, is a
/// lost write (or a forgotten task): the core takes the caller's class and gives its own again.
/// One within the hold is a write still on its way and changes nothing.
#[test]
fn a_placement_with_a_lost_class_write_gets_the_class_again() {
    let topo = vm_machine();
    let all = *topo.cpus();
    let mut c = core(&topo, &PolicyConfig::default(), CoreConfig::DEFAULT, 64);
    let e_cpu = CpuId(4);
    let mut at = 1_000_000;
    // Busy: classed 1 at some placement.
    let mut given = None;
    for _ in 0..40 {
        at += 10_000_000;
        feed(&mut c, at, placed(7, e_cpu, 9_000_000, at, e_cpu, 0, &all));
        while let Some(o) = c.poll() {
            if let Output::Class(k) = o {
                given.get_or_insert(at);
                assert_eq!(k.class.0, 1);
            }
        }
        if given.is_some() {
            break;
        }
    }
    let given = given.expect("classed");
    assert_eq!(
        c.stats().class_drift,
        0,
        "the first placements read class 0: never given"
    );
    // Still class 0 in the caller 1 ms after: the write is on its way.
    feed(
        &mut c,
        given + 1_000_000,
        placed(7, e_cpu, 900_000, given + 1_000_000, e_cpu, 0, &all),
    );
    assert_eq!(c.poll(), None);
    assert_eq!(c.stats().class_drift, 0);
    // Still class 0 a hold later: lost. Given again, at once.
    let late = given + CLASS_HOLD_NS + 2_000_000;
    feed(
        &mut c,
        late,
        placed(7, e_cpu, late - given - 1_100_000, late, e_cpu, 0, &all),
    );
    assert_eq!(c.stats().class_drift, 1);
    let Some(Output::Class(k)) = c.poll() else {
        panic!("the class is not given again");
    };
    assert_eq!((k.task, k.class.0), (TaskId(7), 1));
    // A task the core forgot (a fresh record, never classed) that the caller holds at class 1
    // while it is idle now: the core gives it class 0.
    feed(&mut c, late, Input::Exit { task: TaskId(7) });
    feed(
        &mut c,
        late + 1,
        placed(7, e_cpu, 1, late + 1, e_cpu, 1, &all),
    );
    assert_eq!(c.stats().class_drift, 2);
    assert_eq!(
        c.poll().map(|o| match o {
            Output::Class(k) => k.class.0,
            _ => 99,
        }),
        Some(0)
    );
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
        let all = *topo.cpus();
        let input = placed(1, CpuId(4), 9_999_000, run.stop_ns, CpuId(4), 0, &all);
        c.handle(TimeNs(run.stop_ns), input).unwrap();
        assert_eq!(c.poll(), None);
    }
}
