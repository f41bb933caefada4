//! The core's sequence against the shared invariants, and each input that changes it: here
//! the harness and the invariants (a wake-up, a slice end and a batch each decided as the
//! policy decides on the state the core knows); batches in `batches`, idle snapshots in
//! `snapshots`, the per-task state (storage, the age prune, the estimate, classes) in
//! `tracking`, vtime, slices, preemption and the up-migration scan in `timing`, and the
//! inputs' typed errors and owned form in `inputs`.

mod batches;
mod inputs;
mod snapshots;
mod timing;
mod tracking;

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
        life: Life::UNKNOWN,
        token: 0,
        arrival: Arrival::Wakeup { waker: None },
        cpu,
        last_run: None,
        weight: 100,
        affinity: Affinity::Cpus(allowed),
        util: UtilSource::Estimate,
    }
}

pub(super) fn slice_end(task: u32, cpu: CpuId, waiting: Waiting, allowed: &CpuSet) -> Queued<'_> {
    Queued {
        arrival: Arrival::SliceEnd { waiting },
        ..wakeup(task, Some(cpu), allowed)
    }
}

/// Task `task`'s wake-up at `at` onto `cpu`, placed by the caller with `class`, after a run
/// on `prev` of `run` ns that ended at `at`.
pub(super) fn placed<'a>(
    task: u32,
    prev: CpuId,
    run: u64,
    at: u64,
    cpu: CpuId,
    class: u8,
    allowed: &'a CpuSet,
) -> Input<'a> {
    Input::Placed {
        woken: Queued {
            last_run: Some(LastRun {
                start_ns: at - run,
                stop_ns: at,
            }),
            ..wakeup(task, Some(prev), allowed)
        },
        cpu,
        class: crate::TaskClass(class),
        woke: TimeNs(at),
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
            let waker = s.sync_waker.map(|cpu| Waker { task: None, cpu, sync: true });
            let q = Queued {
                util: UtilSource::Hint(s.util),
                arrival: Arrival::Wakeup { waker },
                ..wakeup(1, s.prev_cpu, &s.allowed)
            };
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
                // Nothing idle, and the task may use one CPU only: it takes that one (a new
                // core knows of no other task to preempt).
                Target::Preempt(cpu) => {
                    prop_assert_eq!(p.step, Step::NoIdle);
                    prop_assert_eq!(crate::pinned_cpu(&s.allowed), Some(cpu));
                }
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
            // Past the fill nothing is idle: the shared queue. On a machine of one CPU every
            // task may use that CPU alone, and the pinned rule preempts it for a task of a
            // later batch (an earlier task of the same batch took it).
            let past = got[expected.len()].target;
            if topo.cpus().count() == 1 && batch == 1 {
                prop_assert_eq!(past, Target::Preempt(CpuId(0)));
            } else {
                prop_assert_eq!(past, Target::Shared);
            }
        })
    });
}
