//! Idle snapshots: the caller's own CPU, batches decided without one, rechecks of a pick, and
//! CPUs just dispatched to when the queue lengths are unknown.

use super::*;

/// The caller's own CPU is offered as idle for a wake-up, but not when a task of the batch
/// was running there until its slice ended.
#[test]
fn the_callers_cpu_is_idle_unless_a_task_was_preempted_there() {
    let topo = vm_machine();
    let all = *topo.cpus();
    let busy = CpuSet::EMPTY;
    let with_caller = Snapshot {
        idle: &busy,
        queued: Some(&CpuSet::EMPTY),
        caller_cpu: Some(CpuId(0)),
    };
    let mut c = core(&topo, &PolicyConfig::default(), CoreConfig::DEFAULT, 64);
    feed(&mut c, 1, Input::Queued(wakeup(1, Some(CpuId(0)), &all)));
    feed(&mut c, 1, Input::Snapshot(with_caller));
    let d = c.poll_dispatch().unwrap();
    assert_eq!(d.target, Target::Cpu(CpuId(0)));
    assert!(
        !c.wants_recheck(),
        "the caller's own CPU needs no second look"
    );

    let mut c = core(&topo, &PolicyConfig::default(), CoreConfig::DEFAULT, 64);
    feed(&mut c, 1, Input::Queued(wakeup(1, Some(CpuId(0)), &all)));
    feed(
        &mut c,
        1,
        Input::Queued(slice_end(2, CpuId(0), Waiting::SharedQueue, &all)),
    );
    feed(&mut c, 1, Input::Snapshot(with_caller));
    let ds = poll_all(&mut c);
    assert!(
        ds.iter().all(|d| d.target == Target::Shared),
        "nothing idle but the preempted task's CPU, which is contended: {ds:?}"
    );
    assert_eq!(ds[0].why, Why::Yielded);
}

/// Without a snapshot the batch goes to the shared queue with its vtime and slice as usual;
/// a task whose affinity is unknown too.
#[test]
fn blind_batches_and_unknown_affinities_go_to_the_shared_queue() {
    let (_, all, mut c) = vm_core();
    feed(&mut c, 5, Input::Queued(wakeup(1, None, &all)));
    feed(&mut c, 5, Input::SnapshotFailed);
    let d = c.poll_dispatch().unwrap();
    assert_eq!((d.target, d.why), (Target::Shared, Why::Blind));
    assert_eq!(d.slice_ns, CoreConfig::DEFAULT.slice_ns);
    // The next snapshot works again.
    let q = Queued {
        affinity: Affinity::Unknown,
        ..wakeup(2, None, &all)
    };
    feed(&mut c, 6, Input::Queued(q));
    feed(&mut c, 6, Input::Queued(wakeup(3, None, &all)));
    feed(&mut c, 6, Input::Snapshot(snapshot(&all)));
    let ds = poll_all(&mut c);
    assert_eq!(
        (ds[0].target, ds[0].why),
        (Target::Shared, Why::AffinityUnknown)
    );
    assert_eq!(ds[1].target, Target::Cpu(CpuId(0)));
    assert_eq!(
        ds[1].slice_ns,
        CoreConfig::DEFAULT.slice_ns / 2,
        "two waiting"
    );
}

/// A pick whose CPU the second look finds taken goes to the shared queue.
#[test]
fn a_recheck_reroutes_picks_whose_cpu_was_taken() {
    let (_, all, mut c) = vm_core();
    feed(&mut c, 1, Input::Queued(wakeup(1, None, &all)));
    feed(&mut c, 1, Input::Queued(wakeup(2, None, &all)));
    feed(
        &mut c,
        1,
        Input::Snapshot(snapshot(&cpus(&[0, 1, 2, 3, 4]))),
    );
    assert!(c.wants_recheck());
    c.handle(TimeNs(0), Input::Recheck(snapshot(&cpus(&[2, 3]))))
        .unwrap();
    let ds = poll_all(&mut c);
    assert_eq!(
        (ds[0].target, ds[0].why),
        (Target::Shared, Why::Stale(CpuId(0)))
    );
    assert_eq!(ds[1].target, Target::Cpu(CpuId(2)));
}

/// Without queue lengths, a CPU dispatched to within the claim window is not free.
#[test]
fn cpus_just_dispatched_to_count_as_queued_without_queue_lengths() {
    let topo = vm_machine();
    let all = *topo.cpus();
    let no_queues = Snapshot {
        idle: &all,
        queued: None,
        caller_cpu: None,
    };
    let mut c = core(&topo, &PolicyConfig::default(), CoreConfig::DEFAULT, 64);
    feed(&mut c, 1_000, Input::Queued(wakeup(1, None, &all)));
    feed(&mut c, 1_000, Input::Snapshot(no_queues));
    assert_eq!(c.poll_dispatch().unwrap().target, Target::Cpu(CpuId(0)));
    feed(&mut c, 2_000, Input::Queued(wakeup(2, None, &all)));
    feed(&mut c, 2_000, Input::Snapshot(no_queues));
    assert_eq!(c.poll_dispatch().unwrap().target, Target::Cpu(CpuId(2)));
    let later = 1_000 + CoreConfig::DEFAULT.claim_ns;
    c.handle(TimeNs::from(later), Input::Queued(wakeup(3, None, &all)))
        .unwrap();
    c.handle(TimeNs::from(later), Input::Snapshot(no_queues))
        .unwrap();
    assert_eq!(c.poll_dispatch().unwrap().target, Target::Cpu(CpuId(0)));
}
