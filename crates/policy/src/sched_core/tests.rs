//! The core's sequence against the shared invariants, and each input that changes it.

use super::*;
use crate::testkit::{self, Scenario};
use crate::{
    ClusterBalance, CoreKind, Placement, Run, SliceEnd, Step, TopologyBuilder, UtilEstimate,
};
use proptest::prelude::*;
use std::string::ToString;
use std::vec;
use std::vec::Vec;

type Core = SchedCore<Vec<Slot>>;

fn core(topo: &Topology, policy: &PolicyConfig, config: CoreConfig, max_tasks: usize) -> Core {
    SchedCore::new(
        topo.clone(),
        policy,
        config,
        vec![Slot::EMPTY; Slot::count_for(max_tasks)],
    )
    .unwrap()
}

pub(super) fn wakeup(task: u32, cpu: Option<CpuId>, allowed: &CpuSet) -> Queued<'_> {
    Queued {
        task: TaskId(task),
        token: 0,
        arrival: Arrival::Wakeup { waker: None },
        cpu,
        last_run: None,
        weight: 100,
        affinity: Affinity::Cpus(allowed),
        util: UtilSource::Estimate,
    }
}

fn slice_end(task: u32, cpu: CpuId, waiting: Waiting, allowed: &CpuSet) -> Queued<'_> {
    Queued {
        arrival: Arrival::SliceEnd { waiting },
        ..wakeup(task, Some(cpu), allowed)
    }
}

pub(super) fn snapshot(idle: &CpuSet) -> Snapshot<'_> {
    Snapshot {
        idle,
        queued: Some(&CpuSet::EMPTY),
        caller_cpu: None,
    }
}

/// Gives the core's state the scenario's homes, through the tracked-state inputs (tasks
/// 10_000 and up ran there), then the scenario's idle CPUs through a snapshot.
fn core_for(s: &Scenario) -> Core {
    let mut c = core(&s.topology, &s.config, CoreConfig::DEFAULT, 4096);
    for (n, cpu) in s.homes.iter().enumerate() {
        let id = 10_000 + n as u32;
        let run = LastRun {
            start_ns: 0,
            stop_ns: 1,
        };
        c.handle_stopped(TaskId(id), cpu, run, 100);
        c.handle_started(TaskId(id), cpu);
        c.handle_stopped(TaskId(id), cpu, run, 100);
    }
    feed(&mut c, 1_000, Input::Snapshot(snapshot(&s.idle)));
    c
}

/// Hands `input` to the core at `at` ns; it must take it.
fn feed(c: &mut Core, at: u64, input: Input<'_>) {
    c.handle(TimeNs::from(at), input).unwrap();
}

fn poll_all(c: &mut Core) -> Vec<Dispatch> {
    core::iter::from_fn(|| c.poll_dispatch()).collect()
}

/// Runs `f` on a thread with a 64 MiB stack: a debug build keeps several `CpuState`s and the
/// core (kilobytes each) per frame and overflows the test thread's 2 MiB.
fn on_big_stack(f: impl FnOnce() + Send + 'static) {
    let joined = std::thread::Builder::new()
        .stack_size(64 << 20)
        .spawn(f)
        .unwrap()
        .join();
    if let Err(panic) = joined {
        std::panic::resume_unwind(panic);
    }
}

fn cases(n: u32) -> ProptestConfig {
    ProptestConfig {
        cases: n,
        ..ProptestConfig::default()
    }
}

/// A wake-up through the core is the idle order's decision on the state it knows, and
/// passes every shared invariant.
#[test]
fn a_wakeup_follows_the_idle_order() {
    on_big_stack(|| {
        proptest!(cases(500), |(s in testkit::arb_scenario())| {
            let mut c = core_for(&s);
            let before = c.state().clone();
            let want = s.state();
            prop_assert_eq!(before.homes(), want.homes());
            let q = Queued { util: UtilSource::Hint(s.util), ..wakeup(1, s.prev_cpu, &s.allowed) };
            feed(&mut c, 2_000, Input::Queued(q));
            let d = c.poll_dispatch().unwrap();
            let Why::Placed(p) = d.why else { return Err(TestCaseError::fail("not placed")) };
            testkit::check_placement(&s.topology, c.policy(), &before, &s.task(), &p)
                .map_err(|v| TestCaseError::fail(v.to_string()))?;
            match d.target {
                Target::Cpu(cpu) => {
                    prop_assert_eq!(Some(cpu), p.cpu);
                    prop_assert!(!c.state().is_idle(cpu));
                }
                Target::Shared => prop_assert_eq!(p.step, Step::NoIdle),
                Target::Preempt(_) => return Err(TestCaseError::fail("a new core knows of no task to preempt")),
            }
            testkit::check_state(&s.topology, c.state()).map_err(|v| TestCaseError::fail(v.to_string()))?;
            prop_assert!(c.poll_dispatch().is_none());
        })
    });
}

/// A slice end asks the slice-end rule about the machine with the task still on its CPU, the
/// typed account of who waits read as contended or not; the state follows the answer.
#[test]
fn a_slice_end_follows_the_rule() {
    on_big_stack(|| {
        proptest!(cases(500), |(s in testkit::arb_scenario())| {
            let Some(own) = s.prev_cpu else { return Ok(()) };
            for waiting in [Waiting::Nobody, Waiting::OwnQueue, Waiting::SharedQueue] {
                let mut c = core_for(&s);
                let mut running = c.state().clone();
                running.occupy(&s.topology, own);
                let q = Queued { util: UtilSource::Hint(s.util), ..slice_end(1, own, waiting, &s.allowed) };
                feed(&mut c, 2_000, Input::Queued(q));
                let d = c.poll_dispatch().unwrap();
                let Some(answer) = d.why.slice_end() else { return Err(TestCaseError::fail("no slice-end answer")) };
                testkit::check_slice_end(&s.topology, c.policy(), &running, &s.task(), waiting.contended(), answer)
                    .map_err(|v| TestCaseError::fail(v.to_string()))?;
                match answer {
                    SliceEnd::Keep => {
                        prop_assert_eq!(d.target, Target::Cpu(own));
                        prop_assert!(!c.state().is_idle(own));
                    }
                    SliceEnd::Yield => prop_assert_eq!(d.target, Target::Shared),
                    SliceEnd::Move(p) => {
                        prop_assert_eq!(d.target, p.cpu.map_or(Target::Shared, Target::Cpu));
                        prop_assert_eq!(c.state().is_idle(own), s.idle.contains(own));
                    }
                }
                testkit::check_state(&s.topology, c.state()).map_err(|v| TestCaseError::fail(v.to_string()))?;
            }
        })
    });
}

/// Batches never hand one CPU to two tasks, and fill an idle machine in the idle order (the
/// shared fill checker's answer), whether the batches hold one task or many.
#[test]
fn batches_fill_in_the_policy_order() {
    on_big_stack(|| {
        proptest!(cases(300), |(topo in testkit::arb_topology_sized(false), balance in 0u8..3, batch in 1usize..=BATCH_MAX)| {
            let config = PolicyConfig {
                cluster_balance: [ClusterBalance::Off, ClusterBalance::On, ClusterBalance::Auto][balance as usize],
                ..PolicyConfig::default()
            };
            let policy = Policy::new(&topo, &config).unwrap();
            let expected = testkit::check_fill(&topo, &policy).map_err(|v| TestCaseError::fail(v.to_string()))?;
            let mut c = core(&topo, &config, CoreConfig::DEFAULT, 4096);
            feed(&mut c, 1, Input::Snapshot(snapshot(topo.cpus())));
            let all = *topo.cpus();
            let mut got = Vec::new();
            let mut id = 0;
            while got.len() <= expected.len() {
                for _ in 0..batch {
                    feed(&mut c, 2, Input::Queued(wakeup(id, None, &all)));
                    id += 1;
                }
                got.extend(poll_all(&mut c));
            }
            let mut seen = CpuSet::EMPTY;
            for (d, want) in got.iter().zip(&expected) {
                prop_assert_eq!(d.why, Why::Placed(*want));
                let Target::Cpu(cpu) = d.target else { return Err(TestCaseError::fail("no cpu")) };
                prop_assert!(seen.insert(cpu), "cpu {} twice", cpu);
            }
            prop_assert_eq!(got[expected.len()].target, Target::Shared);
        })
    });
}

/// The VM check's machine: P-cores 0-1 and 2-3 with SMT, E-cores 4-7 in clusters 4-5, 6-7.
pub(super) fn vm_machine() -> Topology {
    let mut b = TopologyBuilder::new();
    for c in 0..8u16 {
        let (k, cap) = if c < 4 {
            (CoreKind::Performance, 1024)
        } else {
            (CoreKind::Efficiency, 640)
        };
        b.add_cpu(CpuId(c), k, cap, 0).unwrap();
    }
    b.add_core(&[CpuId(0), CpuId(1)]).unwrap();
    b.add_core(&[CpuId(2), CpuId(3)]).unwrap();
    b.add_cluster(&[CpuId(4), CpuId(5)]).unwrap();
    b.add_cluster(&[CpuId(6), CpuId(7)]).unwrap();
    b.build().unwrap()
}

/// The VM machine, all its CPUs, and a core on it with the default knobs.
fn vm_core() -> (Topology, CpuSet, Core) {
    let topo = vm_machine();
    let all = *topo.cpus();
    let c = core(&topo, &PolicyConfig::default(), CoreConfig::DEFAULT, 64);
    (topo, all, c)
}

pub(super) fn cpus(ids: &[u16]) -> CpuSet {
    ids.iter().copied().map(CpuId).collect()
}

fn targets(ds: &[Dispatch]) -> Vec<Option<u16>> {
    ds.iter().map(|d| d.target.cpu().map(|c| c.0)).collect()
}

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

/// Each core takes the inputs of its own occupancy mode only; a refused input changes nothing.
#[test]
fn an_input_of_the_other_occupancy_mode_is_a_typed_error() {
    let topo = vm_machine();
    let all = *topo.cpus();
    let run = LastRun {
        start_ns: 0,
        stop_ns: 10,
    };
    let mut live = core(&topo, &PolicyConfig::default(), CoreConfig::DEFAULT, 64);
    for input in [
        Input::Started {
            task: TaskId(1),
            cpu: CpuId(0),
        },
        Input::Stopped {
            task: TaskId(1),
            cpu: CpuId(0),
            run,
            weight: 100,
        },
    ] {
        assert_eq!(
            live.handle(TimeNs(1), input),
            Err(InputError::WrongOccupancy {
                input: input.name(),
                core: Occupancy::Snapshots,
            })
        );
    }
    assert_eq!(live.stats().tracked, 0, "the refused run was not counted");
    let tracked_config = CoreConfig {
        occupancy: Occupancy::Tracked,
        ..CoreConfig::DEFAULT
    };
    let mut sim = core(&topo, &PolicyConfig::default(), tracked_config, 64);
    sim.handle(TimeNs(1), Input::Queued(wakeup(1, None, &all)))
        .unwrap();
    let snap = snapshot(&CpuSet::EMPTY);
    for input in [
        Input::Snapshot(snap),
        Input::SnapshotFailed,
        Input::Recheck(snap),
    ] {
        let err = sim.handle(TimeNs(2), input).unwrap_err();
        assert!(matches!(
            err,
            InputError::WrongOccupancy {
                core: Occupancy::Tracked,
                ..
            }
        ));
        assert!(err.to_string().contains(input.name()), "{err}");
    }
    // The pending task is still decided against the tracked state (all idle), not blind.
    let Some(Output::Dispatch(d)) = sim.poll() else {
        panic!("the pending task")
    };
    assert!(matches!(d.target, Target::Cpu(_)), "{d:?}");
    assert_ne!(d.why, Why::Blind);
}

#[test]
fn a_knob_the_policy_lacks_is_refused_and_the_token_comes_back() {
    let topo = vm_machine();
    let all = *topo.cpus();
    let policy = crate::Builtin::Spread
        .build(&topo, &PolicyConfig::default(), 1)
        .unwrap();
    let mut c = SchedCore::with_policy(
        topo.clone(),
        policy,
        CoreConfig::DEFAULT,
        vec![Slot::EMPTY; Slot::count_for(8)],
    )
    .unwrap();
    let mode = ClusterBalance::On;
    assert_eq!(
        c.handle(TimeNs(0), Input::ClusterBalance { mode }),
        Err(InputError::NoSuchKnob {
            input: "cluster_balance"
        })
    );
    let q = Queued {
        token: 77,
        ..wakeup(5, None, &all)
    };
    c.handle(TimeNs(1), Input::Queued(q)).unwrap();
    c.handle(TimeNs(1), Input::Snapshot(snapshot(&all)))
        .unwrap();
    match c.poll() {
        Some(Output::Dispatch(d)) => assert_eq!((d.task.0, d.token), (5, 77)),
        other => panic!("{other:?}"),
    }
    assert_eq!(c.poll(), None);
}

/// The owned form hands back the input it was made from, and survives JSON.
#[test]
fn every_input_survives_its_owned_form_and_json() {
    let topo = vm_machine();
    let all = *topo.cpus();
    let some = cpus(&[1, 5]);
    let q = Queued {
        arrival: Arrival::Wakeup {
            waker: Some(Waker {
                task: Some(TaskId(3)),
                cpu: CpuId(2),
            }),
        },
        last_run: Some(LastRun {
            start_ns: 1,
            stop_ns: u64::MAX,
        }),
        util: UtilSource::Hint(512),
        ..wakeup(9, Some(CpuId(7)), &some)
    };
    let unknown = Queued {
        affinity: Affinity::Unknown,
        ..slice_end(4, CpuId(0), Waiting::SharedQueue, &all)
    };
    let snap = Snapshot {
        idle: &some,
        queued: None,
        caller_cpu: Some(CpuId(3)),
    };
    let inputs = [
        Input::Queued(q),
        Input::Queued(unknown),
        Input::Snapshot(snap),
        Input::Snapshot(snapshot(&CpuSet::EMPTY)),
        Input::SnapshotFailed,
        Input::Recheck(snap),
        Input::Backlog { waiting: 1 << 40 },
        Input::Tick,
        Input::Exit {
            task: TaskId(u32::MAX),
        },
        Input::Started {
            task: TaskId(1),
            cpu: CpuId(1023),
        },
        Input::Stopped {
            task: TaskId(1),
            cpu: CpuId(0),
            run: LastRun {
                start_ns: 0,
                stop_ns: 5,
            },
            weight: 3,
        },
        Input::ClusterBalance {
            mode: ClusterBalance::Auto,
        },
    ];
    for input in inputs {
        let owned = input.to_owned();
        assert_eq!(owned.as_input().to_owned(), owned);
        let text = serde_json::to_string(&owned).unwrap();
        let back: OwnedInput = serde_json::from_str(&text).unwrap();
        assert_eq!(back, owned, "{text}");
    }
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
