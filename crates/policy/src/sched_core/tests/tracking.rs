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
    c.handle(
        TimeNs(0),
        Input::Exit {
            task: TaskId(0),
            life: Life::UNKNOWN,
        },
    )
    .unwrap();
    assert_eq!(c.stats().exits_tracked, 1, "held");
    c.handle(
        TimeNs(0),
        Input::Exit {
            task: TaskId(0),
            life: Life::UNKNOWN,
        },
    )
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
    feed(
        &mut c,
        late,
        Input::Exit {
            task: TaskId(7),
            life: Life::UNKNOWN,
        },
    );
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

/// A pid the kernel reused before the old thread's exit arrived: the new thread's first
/// wake-up (handed over or placed by the caller) ends the old record, so the new task starts
/// from a fresh state with a new key, and the old thread's exit that comes after leaves the
/// new task's record alone. Without lives, the new task read the old one's estimate and home,
/// and the late exit threw the new task's record away.
#[test]
fn a_reused_id_is_a_new_task_whatever_order_the_exit_comes_in() {
    let p_cpu = CpuId(4);
    let (old, new) = (Life(1_000), Life(2_000));
    let at = 300_000_000;
    for placed_first in [false, true] {
        let (topo, all, mut c) = vm_core();
        for i in 1..=20u64 {
            let q = Queued {
                life: old,
                last_run: Some(LastRun {
                    start_ns: i * 10_000_000 - 9_000_000,
                    stop_ns: i * 10_000_000,
                }),
                ..wakeup(7, Some(p_cpu), &all)
            };
            feed(&mut c, i * 10_000_000, Input::Queued(q));
            feed(&mut c, i * 10_000_000, Input::Snapshot(snapshot(&all)));
            let _ = poll_all(&mut c);
        }
        let homes = |c: &Core| c.state().home_count(&topo, p_cpu);
        let (old_key, _) = c.task_value(TaskId(7)).unwrap();
        assert!(
            c.task(TaskId(7)).unwrap().util() > 500,
            "the old thread was busy"
        );
        assert_eq!(homes(&c), 1);
        // The new thread's first wake-up, with no run before it.
        let woken = Queued {
            life: new,
            ..wakeup(7, None, &all)
        };
        if placed_first {
            feed(
                &mut c,
                at,
                Input::Placed {
                    woken,
                    cpu: CpuId(0),
                    class: crate::TaskClass(0),
                    woke: TimeNs(at),
                },
            );
        } else {
            feed(&mut c, at, Input::Queued(woken));
            feed(&mut c, at, Input::Snapshot(snapshot(&all)));
            let _ = poll_all(&mut c);
        }
        let (key, _) = c.task_value(TaskId(7)).expect("the new task is held");
        assert_eq!(c.stats().renewed, 1, "{placed_first}");
        assert_ne!(
            key.generation, old_key.generation,
            "{placed_first}: a new key"
        );
        assert_eq!(
            c.task(TaskId(7)).unwrap().util(),
            0,
            "{placed_first}: a fresh record"
        );
        assert_eq!(homes(&c), 0, "{placed_first}: the old home is gone");
        // The old thread's exit, late: ignored.
        feed(
            &mut c,
            at + 1,
            Input::Exit {
                task: TaskId(7),
                life: old,
            },
        );
        let s = c.stats();
        assert_eq!((s.exits, s.exits_tracked, s.stale_exits), (1, 0, 1));
        assert_eq!(
            c.task_value(TaskId(7)).map(|(k, _)| k),
            Some(key),
            "{placed_first}"
        );
        // The new thread's own exit ends it.
        feed(
            &mut c,
            at + 2,
            Input::Exit {
                task: TaskId(7),
                life: new,
            },
        );
        assert!(c.task(TaskId(7)).is_none(), "{placed_first}");
        assert_eq!(c.stats().exits_tracked, 1);
    }
}

/// A caller that cannot tell lives apart ([`Life::UNKNOWN`]) keeps the id as the key: the
/// record goes on, and any exit ends it.
#[test]
fn with_no_lives_the_id_is_the_key() {
    let (_, all, mut c) = vm_core();
    let run = |at: u64, life| Queued {
        life,
        last_run: Some(LastRun {
            start_ns: at - 9_000_000,
            stop_ns: at,
        }),
        ..wakeup(7, Some(CpuId(4)), &all)
    };
    feed(&mut c, 10_000_000, Input::Queued(run(10_000_000, Life(5))));
    feed(
        &mut c,
        20_000_000,
        Input::Queued(run(20_000_000, Life::UNKNOWN)),
    );
    feed(&mut c, 20_000_000, Input::Snapshot(snapshot(&all)));
    let _ = poll_all(&mut c);
    assert_eq!(c.stats().renewed, 0);
    assert!(c.task(TaskId(7)).unwrap().util() > 0);
    feed(
        &mut c,
        30_000_000,
        Input::Exit {
            task: TaskId(7),
            life: Life::UNKNOWN,
        },
    );
    assert!(c.task(TaskId(7)).is_none());
}
