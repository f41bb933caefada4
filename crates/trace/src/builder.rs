//! Per-task run/sleep timelines turned into a [`Trace`]: the one builder behind every recording
//! of what tasks really did, whether it comes from the kernel's tracepoints
//! (`hybrid-sim import ftrace`) or from a live scheduler (`scx_hybridland --record`).
//!
//! The caller reports, per task (pid) and in time order for that task, when it was switched
//! in on a CPU, switched out (still runnable: preempted; or not: it sleeps), woken and ended.
//! Each stretch on a CPU becomes reference work by that CPU's capacity (10 ms on a
//! capacity-512 CPU is 5 ms of reference work); consecutive stretches with only preemptions
//! between them are one run, since the time spent waiting for a CPU is the replay's to
//! reproduce; a stretch switched out not runnable starts a sleep, which ends at the task's next
//! wake-up (or, failing one, its next switch-in). A task starts at its first event; trailing
//! sleeps are dropped (the recording ended, not the task); a task that never ran is left out.
//!
//! A wake-up whose waker is known ([`TimelineBuilder::wakeup_by`]: another task, running when
//! it woke this one) becomes the trace's wake-up relation: the sleep is a `wait_for` the
//! waker, and the waker's run is split where it woke the task by a `wake`, so a replay keeps
//! the chain (the sleep lasts until the waker gets there again). A relation is kept only when
//! both tasks are in the trace unfolded; otherwise the sleep keeps its recorded length.
//!
//! Besides the trace, the builder keeps what the recording says about placement, which is
//! what a replay of it is compared with: each CPU's busy time and the moves between CPUs.
//!
//! The types and the per-task bookkeeping live here; `events` takes the reports, `finish`
//! turns what they built into the trace.

use crate::format::{Trace, TraceError};
use hybridland_policy::{CpuId, Topology};
use std::collections::BTreeMap;

mod events;
mod finish;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Running { since_ns: u64, cpu: u16 },
    Runnable,
    Sleeping { since_ns: u64 },
    Done,
}

/// A phase as recorded, before the trace's names and relations are settled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Built {
    Run(u64),
    Sleep(u64),
    /// A sleep of `ns` ended by `waker`'s wake-up number `seq`.
    Wait {
        ns: u64,
        waker: u32,
        seq: u64,
    },
    /// This task woke `target` (its `Wait` of the same `seq`).
    Wake {
        target: u32,
        seq: u64,
    },
}

#[derive(Clone, Debug)]
struct TaskTrack {
    comm: String,
    first_ns: u64,
    /// Latest time reported for the task: a report before it is taken as at it.
    last_ns: u64,
    state: State,
    /// Reference work of the run being built, in ns x 1024 (capacity units).
    run_acc: u128,
    phases: Vec<Built>,
    cpus: Vec<u16>,
    last_cpu: Option<u16>,
    allowed: Option<String>,
}

impl TaskTrack {
    fn new(comm: &str, now: u64, state: State) -> Self {
        Self {
            comm: comm.to_owned(),
            first_ns: now,
            last_ns: now,
            state,
            run_acc: 0,
            phases: Vec::new(),
            cpus: Vec::new(),
            last_cpu: None,
            allowed: None,
        }
    }

    fn flush_run(&mut self) {
        let ns = u64::try_from(self.run_acc / 1024).unwrap_or(u64::MAX);
        if ns > 0 {
            match self.phases.last_mut() {
                Some(Built::Run(prev)) => *prev = prev.saturating_add(ns),
                _ => self.phases.push(Built::Run(ns)),
            }
        }
        self.run_acc = 0;
    }

    /// Ends a sleep at `now`; `by` is the waker and the relation's number when known.
    fn sleep_until(&mut self, now: u64, by: Option<(u32, u64)>) {
        if let State::Sleeping { since_ns } = self.state {
            let ns = now.saturating_sub(since_ns);
            match by {
                Some((waker, seq)) => self.phases.push(Built::Wait { ns, waker, seq }),
                None if ns > 0 => match self.phases.last_mut() {
                    Some(Built::Sleep(prev)) => *prev = prev.saturating_add(ns),
                    _ => self.phases.push(Built::Sleep(ns)),
                },
                None => {}
            }
        }
    }
}

/// What a finished timeline gives: the trace and what the recording showed about placement.
#[derive(Clone, Debug, PartialEq)]
pub struct Timeline {
    /// The trace (valid: it passed [`Trace::validate_for`] on the builder's topology).
    pub trace: Trace,
    /// Per task (by its name in the trace): the CPUs it was seen running on, as a CPU list.
    pub observed_cpus: BTreeMap<String, String>,
    /// Tasks whose phases were more than a trace task holds, folded into a loop of their
    /// average run and sleep with the same run and sleep totals.
    pub folded: Vec<String>,
    /// Per CPU that ran anything: the wall time it ran the recorded tasks, ns.
    pub busy_ns: BTreeMap<u16, u64>,
    /// Switch-ins on a CPU other than the task's previous one (the simulator's definition).
    pub migrations: u64,
    /// Wake-ups kept as relations (a `wait_for` and its `wake`).
    pub relations: u64,
}

/// Why a timeline gives no trace.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TimelineError {
    /// No task ran.
    #[error("no task ran in the recording")]
    Empty,
    /// The trace it became breaks a trace rule.
    #[error(transparent)]
    Trace(#[from] TraceError),
}

/// Builds a [`Trace`] from per-task scheduling events; see the module documentation.
#[derive(Clone, Debug)]
pub struct TimelineBuilder<'t> {
    topo: &'t Topology,
    tasks: BTreeMap<u32, TaskTrack>,
    first_ns: Option<u64>,
    last_ns: u64,
    busy_ns: BTreeMap<u16, u64>,
    migrations: u64,
    /// Wake-ups with a waker so far (each relation's number).
    relations: u64,
}

/// The task `pid` (created runnable at `now` if new) and `now` raised to its latest time:
/// a report older than one already made is taken as made then.
fn entry<'a>(
    tasks: &'a mut BTreeMap<u32, TaskTrack>,
    pid: u32,
    comm: &str,
    now: u64,
) -> (&'a mut TaskTrack, u64) {
    let t = tasks
        .entry(pid)
        .or_insert_with(|| TaskTrack::new(comm, now, State::Runnable));
    let now = now.max(t.last_ns);
    t.last_ns = now;
    (t, now)
}

/// Closes the stretch `t` is running, if any, at `now`: its work and its CPU's busy time.
fn close_run(topo: &Topology, busy: &mut BTreeMap<u16, u64>, t: &mut TaskTrack, now: u64) {
    if let State::Running { since_ns, cpu } = t.state {
        let cap = topo.info(CpuId(cpu)).map_or(1024, |i| i.capacity);
        let ns = now.saturating_sub(since_ns);
        t.run_acc = t.run_acc.saturating_add(u128::from(ns) * u128::from(cap));
        let b = busy.entry(cpu).or_default();
        *b = b.saturating_add(ns);
        t.state = State::Runnable;
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::format::Phase;
    use hybridland_policy::{CoreKind, TopologyBuilder};

    /// CPU 0: capacity 1024; CPU 1: capacity 512.
    fn machine() -> Topology {
        let mut b = TopologyBuilder::new();
        b.add_cpu(CpuId(0), CoreKind::Performance, 1024, 0).unwrap();
        b.add_cpu(CpuId(1), CoreKind::Efficiency, 512, 0).unwrap();
        b.build().unwrap()
    }

    #[test]
    fn runs_become_reference_work_and_preemptions_join_them() {
        let topo = machine();
        let mut b = TimelineBuilder::new(&topo);
        b.mark(0);
        b.wakeup(7, "w", 1_000);
        b.switch_in(7, "w", 1_000, 1);
        b.switch_out(7, "w", 11_000, true);
        b.switch_in(7, "w", 12_000, 0);
        b.switch_out(7, "w", 17_000, false);
        b.wakeup(7, "w", 27_000);
        b.switch_in(7, "w", 27_000, 0);
        b.switch_out(7, "w", 28_000, false);
        b.mark(40_000);
        let t = b.finish("test", "t", false).unwrap();
        let task = &t.trace.tasks[0];
        assert_eq!(task.name, "w-7");
        assert_eq!(task.start_ns, 1_000);
        // 10 us on the half-speed CPU is 5 us of work, plus 5 us on the full one.
        assert_eq!(
            task.phases,
            [
                Phase::RunNs(10_000),
                Phase::SleepNs(10_000),
                Phase::RunNs(1_000)
            ]
        );
        assert_eq!(t.trace.duration_ns, Some(40_000));
        assert_eq!(t.busy_ns, BTreeMap::from([(0, 6_000), (1, 10_000)]));
        assert_eq!(t.migrations, 1);
        assert_eq!(t.observed_cpus["w-7"], "0,1");
    }

    #[test]
    fn a_task_running_at_the_end_is_closed_there_and_one_that_never_ran_is_left_out() {
        let topo = machine();
        let mut b = TimelineBuilder::new(&topo);
        b.mark(0);
        b.switch_in(1, "spin", 0, 0);
        b.wakeup(2, "idle", 5);
        b.restrict(1, "0".into());
        b.mark(1_000);
        let t = b.finish("test", "t", false).unwrap();
        assert_eq!(t.trace.tasks.len(), 1);
        assert_eq!(t.trace.tasks[0].phases, [Phase::RunNs(1_000)]);
        assert_eq!(t.trace.tasks[0].allowed_cpus.as_deref(), Some("0"));
    }

    #[test]
    fn reports_out_of_order_for_a_task_are_taken_at_its_latest_time() {
        let topo = machine();
        let mut b = TimelineBuilder::new(&topo);
        b.switch_in(1, "a", 100, 0);
        b.switch_out(1, "a", 50, false);
        b.wakeup(1, "a", 300);
        b.switch_in(1, "a", 300, 0);
        b.exit(1, 400);
        b.switch_in(1, "a", 500, 0);
        let t = b.finish("test", "t", false).unwrap();
        // The switch-out at 50 counts at 100: a run of nothing, then a sleep to 300.
        assert_eq!(
            t.trace.tasks[0].phases,
            [Phase::SleepNs(200), Phase::RunNs(100)]
        );
        // The span still starts at the earliest time given.
        assert_eq!(t.trace.tasks[0].start_ns, 50);
        assert_eq!(t.trace.duration_ns, Some(450));
    }

    /// A wake-up by a running task is a relation: the sleep waits for the waker, whose run is
    /// split where it woke the sleeper. One by nobody (an interrupt), or by a task that is not
    /// running, stays a sleep of its recorded length.
    #[test]
    fn a_wakeup_by_a_running_task_is_a_wait_and_a_wake() {
        let topo = machine();
        let mut b = TimelineBuilder::new(&topo);
        b.mark(0);
        b.switch_in(1, "prod", 0, 0);
        b.switch_in(2, "cons", 0, 1);
        b.switch_out(2, "cons", 2_000, false);
        // prod wakes cons at 5 us, 5 us into its run.
        b.wakeup_by(2, "cons", 5_000, Some(1));
        b.switch_in(2, "cons", 5_000, 1);
        b.switch_out(2, "cons", 7_000, false);
        // An interrupt wakes cons at 9 us.
        b.wakeup_by(2, "cons", 9_000, None);
        b.switch_in(2, "cons", 9_000, 1);
        b.switch_out(2, "cons", 10_000, false);
        // A waker that is not running is not taken.
        b.wakeup_by(2, "cons", 12_000, Some(3));
        b.switch_in(2, "cons", 12_000, 1);
        b.switch_out(1, "prod", 20_000, false);
        b.mark(20_000);
        let t = b.finish("test", "t", false).unwrap();
        assert_eq!(t.relations, 1);
        let prod = &t.trace.tasks[0];
        assert_eq!(
            prod.phases,
            [
                Phase::RunNs(5_000),
                Phase::Wake("cons-2".into()),
                Phase::RunNs(15_000)
            ]
        );
        // cons ran on the half-speed CPU: 2 us there is 1 us of work.
        let cons = &t.trace.tasks[1];
        assert_eq!(
            cons.phases,
            [
                Phase::RunNs(1_000),
                Phase::WaitFor(vec!["prod-1".into()]),
                Phase::RunNs(1_000),
                Phase::SleepNs(2_000),
                Phase::RunNs(500),
                Phase::SleepNs(2_000),
                Phase::RunNs(4_000),
            ]
        );
        assert_eq!(
            t.busy_ns[&0], 20_000,
            "splitting the waker's run keeps its time"
        );
        Trace::from_json_str(&t.trace.to_json_string(), "again").unwrap();
    }

    /// A wake-up whose sleeper never runs again is a trailing sleep: both sides go.
    #[test]
    fn a_relation_whose_wait_is_dropped_leaves_no_wake() {
        let topo = machine();
        let mut b = TimelineBuilder::new(&topo);
        b.switch_in(1, "prod", 0, 0);
        b.switch_in(2, "cons", 0, 1);
        b.switch_out(2, "cons", 1_000, false);
        b.wakeup_by(2, "cons", 3_000, Some(1));
        b.switch_out(1, "prod", 4_000, false);
        let t = b.finish("test", "t", false).unwrap();
        assert_eq!(t.relations, 0);
        assert_eq!(t.trace.tasks[0].phases, [Phase::RunNs(4_000)]);
        assert_eq!(t.trace.tasks[1].phases, [Phase::RunNs(500)]);
    }

    #[test]
    fn nothing_that_ran_is_an_error() {
        let topo = machine();
        let mut b = TimelineBuilder::new(&topo);
        b.wakeup(1, "a", 5);
        assert_eq!(b.finish("x", "t", false).unwrap_err(), TimelineError::Empty);
    }
}
