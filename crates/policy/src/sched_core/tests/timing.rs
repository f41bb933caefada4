//! Time in the core's decisions: the up-migration scan's nudges, bounded vtime credit and
//! slice limits, a fixed slice, and preemption when a woken task finds nothing idle.

use super::*;

/// A task sent to an E-core while the P-cores were busy is nudged once a P-core idles; the
/// helper then goes to that CPU with the helper's slice; nudges keep their gap.
#[test]
fn the_scan_nudges_a_task_an_idle_p_core_would_serve_better() {
    let (_, all, mut c) = vm_core();
    c.set_helper(Some(TaskId(99)));
    let q = Queued {
        util: UtilSource::Hint(900),
        ..wakeup(1, None, &all)
    };
    feed(&mut c, 1_000, Input::Queued(q));
    feed(
        &mut c,
        1_000,
        Input::Snapshot(snapshot(&cpus(&[4, 5, 6, 7]))),
    );
    assert_eq!(c.poll_dispatch().unwrap().target, Target::Cpu(CpuId(4)));
    let at = c.poll_timeout().unwrap();
    // Still every P-core busy: nothing to do.
    c.handle(at, Input::Snapshot(snapshot(&cpus(&[5, 6, 7]))))
        .unwrap();
    c.handle(at, Input::Tick).unwrap();
    assert_eq!(c.nudges.pop(), None);
    let at = c.poll_timeout().unwrap();
    c.handle(at, Input::Snapshot(snapshot(&cpus(&[0, 1, 5, 6, 7]))))
        .unwrap();
    c.handle(at, Input::Tick).unwrap();
    let n = c.nudges.pop().unwrap();
    assert_eq!(
        (n.cpu, n.task.0, n.better.step),
        (CpuId(4), 1, Step::IdlePCore)
    );
    assert_eq!(c.stats().nudges, 1);
    c.handle(at, Input::Queued(wakeup(99, None, &all))).unwrap();
    c.handle(at, Input::Snapshot(snapshot(&cpus(&[0, 1, 5, 6, 7]))))
        .unwrap();
    let h = c.poll_dispatch().unwrap();
    assert_eq!((h.target, h.why), (Target::Cpu(CpuId(4)), Why::Helper));
    assert_eq!(h.slice_ns, CoreConfig::DEFAULT.helper_slice_ns);
    // A second candidate within the gap waits.
    let q = Queued {
        util: UtilSource::Hint(900),
        ..wakeup(2, None, &all)
    };
    c.handle(at, Input::Queued(q)).unwrap();
    c.handle(at, Input::Snapshot(snapshot(&cpus(&[6]))))
        .unwrap();
    assert_eq!(c.poll_dispatch().unwrap().target, Target::Cpu(CpuId(6)));
    let soon = at.ns() + 20_000_000;
    c.handle(
        TimeNs::from(soon),
        Input::Snapshot(snapshot(&cpus(&[0, 1]))),
    )
    .unwrap();
    c.handle(TimeNs::from(soon), Input::Tick).unwrap();
    assert_eq!(c.nudges.pop(), None, "within the 50 ms gap");
    let later = at.ns() + 60_000_000;
    c.handle(
        TimeNs::from(later),
        Input::Snapshot(snapshot(&cpus(&[0, 1]))),
    )
    .unwrap();
    c.handle(TimeNs::from(later), Input::Tick).unwrap();
    assert_eq!(c.nudges.pop().map(|n| n.task.0), Some(2));
}

/// A task the caller placed is the scan's as a task the core sent is: busy on an E-core while
/// the P-cores are, it is nudged once one idles. One that went to sleep (its CPU idle at the
/// tick) is dropped, and keeps no scan due.
#[test]
fn the_scan_sees_the_tasks_the_caller_placed() {
    let (_, all, mut c) = vm_core();
    c.set_helper(Some(TaskId(99)));
    let mut at = 1_000_000;
    let mut class = 0;
    for _ in 0..20 {
        at += 10_000_000;
        feed(
            &mut c,
            at,
            placed(1, CpuId(4), 9_000_000, at, CpuId(4), class, &all),
        );
        while let Some(o) = c.poll() {
            if let Output::Class(k) = o {
                class = k.class.0;
            }
        }
    }
    assert_eq!(class, 1, "busy: fits only the P-cores");
    let due = c
        .poll_timeout()
        .expect("the scan is due for the placed task");
    assert!(due.ns() <= at, "{due} after the last placement at {at} ns");
    feed(&mut c, at, Input::Snapshot(snapshot(&cpus(&[5, 6, 7]))));
    feed(&mut c, at, Input::Tick);
    assert_eq!(c.nudges.pop(), None, "every P-core busy");
    let at = c.poll_timeout().unwrap();
    c.handle(at, Input::Snapshot(snapshot(&cpus(&[0, 1, 5, 6, 7]))))
        .unwrap();
    c.handle(at, Input::Tick).unwrap();
    let n = c.nudges.pop().expect("nudged");
    assert_eq!((n.cpu, n.task.0), (CpuId(4), 1));
    // A light task placed on E-core 6 that slept again: at the next due tick its CPU is idle,
    // the task is dropped, and nothing more is due but the age prune.
    let later = at.ns() + 100_000_000;
    feed(
        &mut c,
        later,
        placed(2, CpuId(6), 100_000, later, CpuId(6), 0, &all),
    );
    let due = c.poll_timeout().unwrap();
    feed(&mut c, due.ns().max(later), Input::Snapshot(snapshot(&all)));
    feed(&mut c, due.ns().max(later), Input::Tick);
    assert!(
        c.poll_timeout()
            .is_none_or(|t| t.ns() >= later + CoreConfig::PRUNE_EVERY_NS / 2),
        "{:?}",
        c.poll_timeout()
    );
}

/// The helper goes ahead of everything in the shared queue: a new task (raised to one slice
/// behind the clock) would otherwise go ahead of it, and a stream of them, which never moves
/// the clock, starved it until the kernel's watchdog ejected the scheduler.
#[test]
fn the_helper_queues_ahead_of_a_new_task() {
    let (_, all, mut c) = vm_core();
    c.set_helper(Some(TaskId(99)));
    // Task 1 ran 100 ms: the clock follows it when it is sent again.
    let q = Queued {
        last_run: Some(LastRun {
            start_ns: 1,
            stop_ns: 100_000_001,
        }),
        ..slice_end(1, CpuId(0), Waiting::Nobody, &all)
    };
    feed(&mut c, 100_000_001, Input::Queued(q));
    feed(
        &mut c,
        100_000_001,
        Input::Snapshot(snapshot(&CpuSet::EMPTY)),
    );
    let _ = poll_all(&mut c);
    assert!(c.vtime_now() >= 100_000_000);
    for task in [2, 99] {
        feed(&mut c, 100_000_002, Input::Queued(wakeup(task, None, &all)));
    }
    feed(
        &mut c,
        100_000_002,
        Input::Snapshot(snapshot(&CpuSet::EMPTY)),
    );
    let ds = poll_all(&mut c);
    let [new, helper] = [TaskId(2), TaskId(99)].map(|t| ds.iter().find(|d| d.task == t).unwrap());
    assert_eq!(
        (new.target, helper.target),
        (Target::Shared, Target::Shared)
    );
    assert!(
        helper.vtime < new.vtime,
        "helper {} behind the new task's {}",
        helper.vtime,
        new.vtime
    );
}

/// Every dispatch's vtime keeps the bounded credit, and its slice the slice limits, whatever
/// the order of tasks, runs and batch sizes.
#[test]
fn dispatches_keep_bounded_credit_and_slice_limits() {
    let topo = vm_machine();
    let all = *topo.cpus();
    proptest!(cases(300), |(ops in proptest::collection::vec((0u32..4, 0u64..20_000_000, 1u32..1000, 0u64..10), 1..40),
                            base in 100_000u64..20_000_000)| {
        let config = CoreConfig { slice_ns: base, ..CoreConfig::DEFAULT };
        let mut c = core(&topo, &PolicyConfig::default(), config, 64);
        let mut at = 1u64;
        for (task, ran, weight, backlog) in ops {
            let before = c.task(TaskId(task)).unwrap_or_default();
            let charged = {
                let mut t = before;
                let _ = t.on_run(&Run { cpu: CpuId(0), capacity: 1024, start_ns: at, stop_ns: at + ran, weight });
                t
            };
            let clock = c.vtime_now();
            let q = Queued {
                arrival: Arrival::SliceEnd { waiting: Waiting::OwnQueue },
                last_run: Some(LastRun { start_ns: at, stop_ns: at + ran }),
                weight,
                ..wakeup(task, Some(CpuId(0)), &all)
            };
            c.handle(TimeNs(0), Input::Backlog { waiting: backlog }).unwrap();
            c.handle(TimeNs::from(at + ran), Input::Queued(q)).unwrap();
            let d = c.poll_dispatch().unwrap();
            testkit::check_vtime_queue(clock, base, &charged, d.vtime, &c.task(TaskId(task)).unwrap())
                .map_err(|v| TestCaseError::fail(v.to_string()))?;
            testkit::check_slice(base, backlog + 1, d.slice_ns)
                .map_err(|v| TestCaseError::fail(v.to_string()))?;
            prop_assert!(c.vtime_now() >= clock);
            at += ran + 1;
        }
    });
}

#[test]
fn a_fixed_slice_ignores_the_queue() {
    let topo = vm_machine();
    let all = *topo.cpus();
    let config = CoreConfig {
        slice: SliceMode::Fixed,
        ..CoreConfig::DEFAULT
    };
    let mut c = core(&topo, &PolicyConfig::default(), config, 64);
    c.handle(TimeNs(0), Input::Backlog { waiting: 100 })
        .unwrap();
    feed(&mut c, 1, Input::Queued(wakeup(1, None, &all)));
    assert_eq!(c.poll_dispatch().unwrap().slice_ns, config.slice_ns);
}

/// The VM machine with every CPU given a new task at 1 ns (vtime 0), and CPU 3's task told at
/// 3 ms that its slice ended with nobody waiting (kept there: sent again at 3 ms).
fn all_busy(config: CoreConfig) -> Core {
    let topo = vm_machine();
    let all = *topo.cpus();
    let mut c = core(&topo, &PolicyConfig::default(), config, 64);
    feed(&mut c, 1, Input::Snapshot(snapshot(&all)));
    for id in 0..8 {
        feed(&mut c, 1, Input::Queued(wakeup(id, None, &all)));
    }
    assert!(poll_all(&mut c).iter().all(|d| d.target.cpu().is_some()));
    let on_3 = (0..8)
        .find(|id| c.placed_task(CpuId(3)) == Some(TaskId(*id)))
        .unwrap();
    feed(
        &mut c,
        3_000_000,
        Input::Queued(slice_end(on_3, CpuId(3), Waiting::Nobody, &all)),
    );
    feed(&mut c, 3_000_000, Input::Snapshot(snapshot(&CpuSet::EMPTY)));
    assert_eq!(poll_all(&mut c)[0].target, Target::Cpu(CpuId(3)));
    c
}

/// A woken task that finds every CPU busy takes one whose task is a base slice ahead of it by
/// the core's estimate (sent with vtime 0, running since): its previous CPU when that
/// qualifies, else the one furthest ahead; never a CPU sent to within the lead, one given to an
/// earlier task of the batch, or one with tasks queued; never with it off.
#[test]
fn a_wakeup_with_nothing_idle_preempts_a_task_far_ahead() {
    let all = *vm_machine().cpus();
    let on = CoreConfig {
        wake_preempt: WakePreempt::SliceAhead,
        ..CoreConfig::DEFAULT
    };
    let lead = on.slice_ns;
    let later = 1 + lead + 1_000_000;
    let decide = |c: &mut Core, at: u64, prevs: &[Option<u16>], queued: &CpuSet| {
        for (n, prev) in prevs.iter().enumerate() {
            c.handle(
                TimeNs::from(at),
                Input::Queued(wakeup(100 + n as u32, prev.map(CpuId), &all)),
            )
            .unwrap();
        }
        let snap = Snapshot {
            idle: &CpuSet::EMPTY,
            queued: Some(queued),
            caller_cpu: None,
        };
        c.handle(TimeNs::from(at), Input::Snapshot(snap)).unwrap();
        poll_all(c).iter().map(|d| d.target).collect::<Vec<_>>()
    };
    let none = CpuSet::EMPTY;
    let p = |c: u16| Target::Preempt(CpuId(c));

    let mut c = all_busy(on);
    assert_eq!(decide(&mut c, later, &[Some(5)], &none), [p(5)]);
    assert_eq!(c.stats().preempts, 1);
    // The woken task runs there next: the CPU is not taken from it again at once.
    assert_eq!(c.placed_task(CpuId(5)), Some(TaskId(100)));

    // CPU 3's task was sent again at 3 ms: not a lead ahead yet. Then the furthest ahead (all
    // others equal: the lowest id), and a second task of the batch takes the next one.
    let mut c = all_busy(on);
    assert_eq!(
        decide(&mut c, later, &[Some(3), Some(3)], &none),
        [p(0), p(1)]
    );
    // A CPU with tasks queued is passed over.
    let mut c = all_busy(on);
    assert_eq!(decide(&mut c, later, &[None], &cpus(&[0])), [p(1)]);
    // Within the lead, or with preemption off: the shared queue.
    let mut c = all_busy(on);
    assert_eq!(decide(&mut c, lead, &[Some(5)], &none), [Target::Shared]);
    assert_eq!(c.stats().preempts, 0);
    assert_eq!(CoreConfig::DEFAULT.wake_preempt, WakePreempt::Off);
    let mut c = all_busy(CoreConfig::DEFAULT);
    assert_eq!(decide(&mut c, later, &[Some(5)], &none), [Target::Shared]);
}

/// The pinned rule: a woken task allowed on one busy CPU takes it, with preemption off (the
/// default), and the table the kernel walks gives the same CPU on the same inputs; the caller's
/// CPU it is placed on (that frees after the batch), and one given to an earlier task of the
/// batch it does not take again. A
/// task allowed on two busy CPUs waits in the shared queue, and the table leaves it to the core.
#[test]
fn a_pinned_wakeup_takes_its_busy_cpu() {
    let topo = vm_machine();
    let decide = |c: &mut Core, tasks: &[(u32, &CpuSet)], caller: Option<CpuId>| {
        for &(id, allowed) in tasks {
            let q = wakeup(id, allowed.first(), allowed);
            c.handle(TimeNs::from(10_000_000), Input::Queued(q))
                .unwrap();
        }
        let snap = Snapshot {
            idle: &CpuSet::EMPTY,
            queued: None,
            caller_cpu: caller,
        };
        c.handle(TimeNs::from(10_000_000), Input::Snapshot(snap))
            .unwrap();
        poll_all(c).iter().map(|d| d.target).collect::<Vec<_>>()
    };
    let (five, two) = (cpus(&[5]), cpus(&[4, 5]));
    let table = Policy::new(&topo, &PolicyConfig::default())
        .unwrap()
        .wake_table(&topo);
    let q = |allowed, free| crate::WakeQuestion {
        free,
        allowed,
        prev: Some(CpuId(5)),
        class: crate::TaskClass(0),
        homes: &CpuSet::EMPTY,
        sync_waker: None,
    };

    let mut c = all_busy(CoreConfig::DEFAULT);
    assert_eq!(
        decide(&mut c, &[(100, &five)], None),
        [Target::Preempt(CpuId(5))]
    );
    assert_eq!(c.stats().preempts, 1);
    assert_eq!(table.decide(&q(&five, &CpuSet::EMPTY)).cpu, None);
    assert_eq!(table.pinned(&q(&five, &CpuSet::EMPTY)), Some(CpuId(5)));
    // Free, it is the walk's to place; on two CPUs, nobody's to take.
    assert_eq!(table.pinned(&q(&five, &five)), None);
    assert_eq!(table.pinned(&q(&two, &CpuSet::EMPTY)), None);
    let mut c = all_busy(CoreConfig::DEFAULT);
    assert_eq!(decide(&mut c, &[(100, &two)], None), [Target::Shared]);
    let mut c = all_busy(CoreConfig::DEFAULT);
    assert_eq!(
        decide(&mut c, &[(100, &five)], Some(CpuId(5))),
        [Target::Cpu(CpuId(5))]
    );
    let mut c = all_busy(CoreConfig::DEFAULT);
    assert_eq!(
        decide(&mut c, &[(100, &five), (101, &five)], None),
        [Target::Preempt(CpuId(5)), Target::Shared]
    );
}
