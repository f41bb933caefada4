//! Batches: the VM check's machine filled as it expects, slice ends decided before the
//! wake-ups beside them, the audit of each decision, tasks that took turns on one CPU, and
//! the batch's size limit.

use super::*;

#[test]
fn the_vm_machine_fills_as_vm_check_expects() {
    let topo = vm_machine();
    let all = *topo.cpus();
    for (balance, want) in [
        (ClusterBalance::On, [0, 2, 4, 6, 5, 7, 1, 3]),
        (ClusterBalance::Off, [0, 2, 4, 5, 6, 7, 1, 3]),
    ] {
        let config = PolicyConfig {
            cluster_balance: balance,
            ..PolicyConfig::default()
        };
        let mut c = core(&topo, &config, CoreConfig::DEFAULT, 64);
        feed(&mut c, 1, Input::Snapshot(snapshot(&all)));
        for id in 0..9 {
            feed(&mut c, 2, Input::Queued(wakeup(id, None, &all)));
        }
        let mut expect: Vec<Option<u16>> = want.iter().map(|c| Some(*c)).collect();
        expect.push(None);
        assert_eq!(targets(&poll_all(&mut c)), expect, "{balance}");
    }
}

/// Tasks whose slice ended get their CPUs back before a woken task of the same batch is
/// placed, whatever the order they were handed over in.
#[test]
fn slice_ends_are_decided_before_wakeups() {
    let (_, all, mut c) = vm_core();
    feed(&mut c, 1, Input::Queued(wakeup(1, Some(CpuId(0)), &all)));
    feed(
        &mut c,
        1,
        Input::Queued(slice_end(2, CpuId(0), Waiting::Nobody, &all)),
    );
    feed(&mut c, 1, Input::Snapshot(snapshot(&cpus(&[0, 1, 2, 3]))));
    let ds = poll_all(&mut c);
    assert_eq!((ds[0].task, ds[0].why), (TaskId(2), Why::Kept));
    assert_eq!(ds[0].target, Target::Cpu(CpuId(0)));
    assert_eq!(
        (ds[1].task, ds[1].target),
        (TaskId(1), Target::Cpu(CpuId(2)))
    );
}

/// A wake-up of the batch that finds nothing idle it may use makes one slice end on a CPU it
/// may use contended: that task goes back in line (the shared queue) and the woken task gets
/// the CPU, where keeping the task would leave the woken one waiting a whole slice. A CPU
/// whose slice end is in the batch is not idle for this.
#[test]
fn a_wakeup_with_nothing_idle_makes_one_slice_end_it_may_use_yield() {
    // One batch: task 1 woken, allowed on `allowed`; tasks 2 and 3 at slice ends on the CPUs
    // given; the CPUs in `idle` show idle (their tasks' slices ended and the loop has them).
    let batch = |allowed: &CpuSet, ends: [u16; 2], idle: &[u16]| {
        let (_, all, mut c) = vm_core();
        feed(&mut c, 1, Input::Queued(wakeup(1, Some(CpuId(0)), allowed)));
        for (task, cpu) in [2, 3].into_iter().zip(ends) {
            let q = slice_end(task, CpuId(cpu), Waiting::Nobody, &all);
            feed(&mut c, 1, Input::Queued(q));
        }
        feed(&mut c, 1, Input::Snapshot(snapshot(&cpus(idle))));
        poll_all(&mut c)
            .into_iter()
            .map(|d| (d.task.0, d.why, d.target))
            .collect::<Vec<_>>()
    };
    let cpu = |c: u16| Target::Cpu(CpuId(c));
    assert_eq!(
        batch(&cpus(&[0]), [1, 0], &[0])[..2],
        [(2, Why::Kept, cpu(1)), (3, Why::Yielded, Target::Shared)]
    );
    assert_eq!(batch(&cpus(&[0]), [1, 0], &[0])[2].2, cpu(0));
    // One waiter that may run anywhere: only the first slice end yields.
    let all = *vm_machine().cpus();
    let ds = batch(&all, [4, 6], &[4]);
    assert_eq!(
        ds[..2],
        [(2, Why::Yielded, Target::Shared), (3, Why::Kept, cpu(6))]
    );
    assert_eq!(ds[2].2, cpu(4));
}

/// The audit checks each decision of a batch on the state the core had at that point, and
/// names the task of the first one that breaks a rule.
#[test]
fn the_audit_checks_each_decision_and_names_a_violation() {
    let (_, all, mut c) = vm_core();
    c.start_audit();
    feed(&mut c, 1, Input::Queued(wakeup(1, Some(CpuId(0)), &all)));
    feed(
        &mut c,
        1,
        Input::Queued(slice_end(2, CpuId(0), Waiting::Nobody, &all)),
    );
    feed(&mut c, 1, Input::Queued(wakeup(3, None, &all)));
    feed(&mut c, 1, Input::Snapshot(snapshot(&cpus(&[0, 1, 2, 3]))));
    let ds = poll_all(&mut c);
    let audit = c.audit().unwrap();
    assert_eq!((audit.wakeups, audit.slice_ends), (2, 1));
    assert!(
        audit.first_violation.is_none(),
        "{:?}",
        audit.first_violation
    );

    // An answer naming a CPU the batch just took is wrong on this state.
    let Target::Cpu(busy) = ds[1].target else {
        panic!("{:?}", ds[1])
    };
    let hints = crate::idle_order::TaskHints {
        allowed: &all,
        prev_cpu: None,
        util: 0,
        sync_waker: None,
    };
    let wrong = Placement {
        cpu: Some(busy),
        step: Step::IdleECore,
        reach: crate::Reach::Primary,
    };
    c.audit_wakeup(TaskId(9), &hints, &wrong);
    let (task, rule) = c.audit().unwrap().first_violation.clone().unwrap();
    assert_eq!((task, rule.rule), (TaskId(9), "idle"), "{rule}");
}

/// Three tasks that took turns on CPU 2 are not all sent back to it.
#[test]
fn tasks_sharing_a_cpu_are_not_all_sent_back_to_it() {
    let (_, all, mut c) = vm_core();
    for id in 0..3 {
        let q = Queued {
            util: UtilSource::Hint(1024),
            ..slice_end(id, CpuId(2), Waiting::Nobody, &all)
        };
        feed(&mut c, 1, Input::Queued(q));
    }
    feed(
        &mut c,
        1,
        Input::Snapshot(snapshot(&cpus(&[1, 3, 4, 5, 6, 7]))),
    );
    assert_eq!(
        targets(&poll_all(&mut c)),
        [Some(2), Some(4), Some(6)],
        "the first keeps it, the others go where the idle order says"
    );
}

#[test]
fn a_batch_holds_at_most_batch_max_tasks_and_bad_storage_is_refused() {
    let (topo, all, mut c) = vm_core();
    for id in 0..BATCH_MAX as u32 {
        feed(&mut c, 1, Input::Queued(wakeup(id, None, &all)));
    }
    assert_eq!(
        c.handle(TimeNs::from(1), Input::Queued(wakeup(999, None, &all))),
        Err(InputError::BatchFull)
    );
    assert_eq!(poll_all(&mut c).len(), BATCH_MAX);
    let bad = SchedCore::new(
        topo.clone(),
        &PolicyConfig::default(),
        CoreConfig::DEFAULT,
        vec![Slot::EMPTY; 100],
    );
    assert!(matches!(
        bad.err(),
        Some(CoreError::Storage(StorageError::BadSlotCount {
            slots: 100
        }))
    ));
}
