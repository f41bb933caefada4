//! What a policy sees through the [`View`](crate::View): fresh figures at every question.

use super::TaskKey;
use super::tests::{cpus, slice_end, snapshot, vm_machine, wakeup};
use super::*;
use crate::placement_policy::View;
use crate::{Placement, UtilEstimate};
use std::vec;
use std::vec::Vec;

/// Places every wake-up on the lowest idle CPU and records what up-migration was asked with.
#[derive(Default)]
struct Recorder {
    asked: Vec<(u64, u16, u32)>,
}

impl PlacementPolicy for Recorder {
    fn name(&self) -> &str {
        "recorder"
    }

    fn wakeup(&mut self, view: &View<'_>) -> Placement {
        view.place_on(view.idle_allowed().first())
    }

    fn up_migration(&mut self, view: &View<'_>) -> Option<Placement> {
        self.asked.push((view.now_ns(), view.util(), view.weight()));
        None
    }
}

fn recording_core() -> SchedCore<Vec<Slot>, Recorder> {
    SchedCore::with_policy(
        vm_machine(),
        Recorder::default(),
        CoreConfig::DEFAULT,
        vec![Slot::EMPTY; Slot::count_for(64)],
    )
    .unwrap()
}

/// Up-migration is asked with the task's estimate brought up to the tick (it waited until
/// sent, then ran on its E-core all along) and the weight it was handed over with, not the
/// estimate it was placed with and nice 0.
#[test]
fn up_migration_sees_the_estimate_at_the_tick_and_the_real_weight() {
    let mut c = recording_core();
    let all = *c.topology().cpus();
    let q = Queued {
        weight: 300,
        ..wakeup(1, None, &all)
    };
    // Woken at 1 ms and sent to CPU 4 (an E-core of capacity 640), the only idle one.
    c.handle(TimeNs(1_000_000), Input::Queued(q)).unwrap();
    c.handle(TimeNs(1_000_000), Input::Snapshot(snapshot(&cpus(&[4]))))
        .unwrap();
    let d = c.poll_dispatch().unwrap();
    assert_eq!((d.target, d.util), (Target::Cpu(CpuId(4)), 0));
    for at in [23_000_000u64, 43_000_000, 63_000_000] {
        c.handle(TimeNs(at), Input::Snapshot(snapshot(&cpus(&[0, 1]))))
            .unwrap();
        c.handle(TimeNs(at), Input::Tick).unwrap();
        let mut want = UtilEstimate::new();
        want.advance(1_000_000, 0);
        want.advance(at, 640);
        assert_eq!(
            c.policy().asked.last(),
            Some(&(at, want.util(), 300)),
            "at {at} ns"
        );
    }
    let utils: Vec<u16> = c.policy().asked.iter().map(|a| a.1).collect();
    assert!(utils.windows(2).all(|w| w[0] < w[1]), "{utils:?}");
    assert!(
        utils[2] > 256,
        "past a quarter of a P-core by 60 ms: {utils:?}"
    );
}

/// A task decided on the caller's hint is asked with the hint: a replay that tests the rules
/// apart from the estimator keeps doing so between batches.
#[test]
fn up_migration_keeps_a_hint() {
    let mut c = recording_core();
    let all = *c.topology().cpus();
    let q = Queued {
        util: UtilSource::Hint(77),
        ..wakeup(1, None, &all)
    };
    c.handle(TimeNs(1_000_000), Input::Queued(q)).unwrap();
    c.handle(TimeNs(1_000_000), Input::Snapshot(snapshot(&cpus(&[4]))))
        .unwrap();
    let _ = c.poll_dispatch().unwrap();
    c.handle(TimeNs(40_000_000), Input::Snapshot(snapshot(&cpus(&[0]))))
        .unwrap();
    c.handle(TimeNs(40_000_000), Input::Tick).unwrap();
    assert_eq!(c.policy().asked, vec![(40_000_000, 77, 100)]);
}

/// Counts each task's wake-ups in its own value and records what each wake-up saw.
#[derive(Default)]
struct Counter {
    seen: Vec<(TaskKey, u64)>,
}

impl PlacementPolicy for Counter {
    fn name(&self) -> &str {
        "counter"
    }

    fn wakeup(&mut self, view: &View<'_>) -> Placement {
        self.seen.push((view.task(), view.task_value()));
        view.set_task_value(view.task_value() + 1);
        view.place_on(view.idle_allowed().first())
    }
}

fn counting_core(max_tasks: usize, config: CoreConfig) -> SchedCore<Vec<Slot>, Counter> {
    SchedCore::with_policy(
        vm_machine(),
        Counter::default(),
        config,
        vec![Slot::EMPTY; Slot::count_for(max_tasks)],
    )
    .unwrap()
}

fn wake(c: &mut SchedCore<Vec<Slot>, Counter>, task: u32, at: u64) -> (TaskKey, u64) {
    let all = *c.topology().cpus();
    c.handle(TimeNs(at), Input::Queued(wakeup(task, None, &all)))
        .unwrap();
    c.handle(TimeNs(at), Input::Snapshot(snapshot(&all)))
        .unwrap();
    let _ = c.poll_dispatch().unwrap();
    *c.policy().seen.last().unwrap()
}

/// A policy's value for a task is kept across wake-ups; an exit, the age prune, or a reused
/// id after either starts a new task (a new generation) from 0.
#[test]
fn a_task_value_lives_as_long_as_the_task() {
    let mut c = counting_core(64, CoreConfig::DEFAULT);
    let (first, v) = wake(&mut c, 1, 1_000);
    assert_eq!((first.id, v), (TaskId(1), 0));
    assert!(first.generation > 0);
    assert_eq!(wake(&mut c, 1, 2_000), (first, 1));
    assert_eq!(wake(&mut c, 1, 3_000), (first, 2));
    assert_eq!(c.task_value(TaskId(1)), Some((first, 3)));
    let (other, v) = wake(&mut c, 2, 3_000);
    assert_eq!(v, 0, "each task has its own");
    assert_ne!(other.generation, first.generation);

    // The pid is reused after the exit: a new task.
    c.handle(
        TimeNs(4_000),
        Input::Exit {
            task: TaskId(1),
            life: Life::UNKNOWN,
        },
    )
    .unwrap();
    assert_eq!(c.task_value(TaskId(1)), None);
    let (again, v) = wake(&mut c, 1, 5_000);
    assert_eq!((again.id, v), (TaskId(1), 0));
    assert!(again.generation > other.generation);
    assert_ne!(again, first);

    // The age prune forgets task 2 with its value.
    let after = 5_000 + CoreConfig::DEFAULT.forget_after_ns + CoreConfig::PRUNE_EVERY_NS;
    assert_eq!(wake(&mut c, 1, after), (again, 1));
    c.handle(TimeNs(after), Input::Tick).unwrap();
    assert_eq!(c.task_value(TaskId(2)), None, "pruned");
    let (reborn, v) = wake(&mut c, 2, after + 1);
    assert_eq!(v, 0);
    assert_ne!(reborn, other);
}

/// A task the full storage does not hold has no memory: generation 0, value 0 every time.
#[test]
fn an_untracked_task_starts_from_zero_every_time() {
    // 8 slots hold 7 tasks.
    let mut c = counting_core(1, CoreConfig::DEFAULT);
    assert_eq!(c.stats().capacity, 7);
    for t in 0..7 {
        let _ = wake(&mut c, t, 1_000);
    }
    for at in [2_000, 3_000] {
        let (key, v) = wake(&mut c, 99, at);
        assert_eq!((key.generation, v), (0, 0));
    }
    assert_eq!(wake(&mut c, 0, 4_000).1, 1, "the held ones keep theirs");
}

/// Moves a task up to the first idle P-core when asked between batches; nothing else.
struct UpOnly;

impl PlacementPolicy for UpOnly {
    fn name(&self) -> &str {
        "up-only"
    }

    fn wakeup(&mut self, view: &View<'_>) -> Placement {
        view.place_on(view.idle_allowed().iter().last())
    }

    fn up_migration(&mut self, view: &View<'_>) -> Option<Placement> {
        let p = view.idle_allowed().first()?;
        (view.topology().info(p)?.capacity == 1024).then(|| view.place_on(Some(p)))
    }
}

/// The default slice end asks `up_migration` when nobody waits: a task the core nudged comes
/// back to a slice end with the helper gone from its CPU's queue, and must take the move it
/// was nudged for (live, the helper runs before the loop sees the slice end).
#[test]
fn the_default_slice_end_takes_the_up_migration_when_nobody_waits() {
    let mut c = SchedCore::with_policy(
        vm_machine(),
        UpOnly,
        CoreConfig::DEFAULT,
        vec![Slot::EMPTY; Slot::count_for(64)],
    )
    .unwrap();
    let all = *c.topology().cpus();
    c.handle(TimeNs(1_000_000), Input::Queued(wakeup(1, None, &all)))
        .unwrap();
    c.handle(TimeNs(1_000_000), Input::Snapshot(snapshot(&cpus(&[7]))))
        .unwrap();
    assert_eq!(c.poll_dispatch().unwrap().target, Target::Cpu(CpuId(7)));
    // Its slice ends on the E-core with nobody waiting, while P-core CPU 0 is idle.
    c.handle(
        TimeNs(30_000_000),
        Input::Queued(slice_end(1, CpuId(7), Waiting::Nobody, &all)),
    )
    .unwrap();
    c.handle(TimeNs(30_000_000), Input::Snapshot(snapshot(&cpus(&[0]))))
        .unwrap();
    assert_eq!(c.poll_dispatch().unwrap().target, Target::Cpu(CpuId(0)));
}
