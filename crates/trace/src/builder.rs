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

use crate::format::{
    LoopSpec, MAX_LOOP_TIMES, MAX_PHASES, Phase, TRACE_VERSION, TaskSpec, Trace, TraceError,
};
use hybridland_policy::{CpuId, Topology};
use std::collections::BTreeMap;

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

impl<'t> TimelineBuilder<'t> {
    /// An empty timeline on `topo`, whose capacities turn run time into reference work.
    pub fn new(topo: &'t Topology) -> Self {
        Self {
            topo,
            tasks: BTreeMap::new(),
            first_ns: None,
            last_ns: 0,
            busy_ns: BTreeMap::new(),
            migrations: 0,
            relations: 0,
        }
    }

    /// Extends the recording's span to `now` without touching any task: the trace runs from
    /// the earliest time given to any method to the latest, and tasks still running at the
    /// end are closed there.
    pub fn mark(&mut self, now: u64) {
        self.first_ns = Some(self.first_ns.map_or(now, |f| f.min(now)));
        self.last_ns = self.last_ns.max(now);
    }

    /// `pid` starts running on `cpu` at `now`. A sleep not ended by a wake-up ends here.
    pub fn switch_in(&mut self, pid: u32, comm: &str, now: u64, cpu: u16) {
        self.mark(now);
        let (t, now) = entry(&mut self.tasks, pid, comm, now);
        if t.state == State::Done {
            return;
        }
        // Two switch-ins in a row: the first stretch ends where the second begins.
        close_run(self.topo, &mut self.busy_ns, t, now);
        t.sleep_until(now, None);
        t.comm.clear();
        t.comm.push_str(comm);
        if t.last_cpu.is_some_and(|c| c != cpu) {
            self.migrations += 1;
        }
        t.last_cpu = Some(cpu);
        t.state = State::Running { since_ns: now, cpu };
        if !t.cpus.contains(&cpu) {
            t.cpus.push(cpu);
        }
    }

    /// `pid` leaves its CPU at `now`: preempted when `runnable`, else it starts to sleep.
    pub fn switch_out(&mut self, pid: u32, comm: &str, now: u64, runnable: bool) {
        self.mark(now);
        let (t, now) = entry(&mut self.tasks, pid, comm, now);
        if t.state == State::Done {
            return;
        }
        close_run(self.topo, &mut self.busy_ns, t, now);
        if runnable {
            t.state = State::Runnable;
        } else {
            t.flush_run();
            // Already asleep (a second report of the same sleep): it began at the first.
            if !matches!(t.state, State::Sleeping { .. }) {
                t.state = State::Sleeping { since_ns: now };
            }
        }
    }

    /// `pid` is woken at `now` (a new task's first wake-up starts it).
    pub fn wakeup(&mut self, pid: u32, comm: &str, now: u64) {
        self.wakeup_by(pid, comm, now, None);
    }

    /// `pid` is woken at `now` by the task `waker` when known (the task that was running where
    /// the wake-up was reported, not in an interrupt). The sleep it ends becomes a wait for the
    /// waker, and the waker's run is split there by a wake, when the waker is another task
    /// and is running at `now`; otherwise as [`wakeup`](Self::wakeup).
    pub fn wakeup_by(&mut self, pid: u32, comm: &str, now: u64, waker: Option<u32>) {
        self.mark(now);
        let asleep = self
            .tasks
            .get(&pid)
            .is_some_and(|t| matches!(t.state, State::Sleeping { .. }));
        let waker = waker.filter(|w| {
            *w != pid
                && asleep
                && self
                    .tasks
                    .get(w)
                    .is_some_and(|t| matches!(t.state, State::Running { .. }))
        });
        let by = waker.map(|w| {
            self.relations += 1;
            (w, self.relations)
        });
        if let Some((w, seq)) = by {
            if let Some(t) = self.tasks.get_mut(&w) {
                let at = now.max(t.last_ns);
                t.last_ns = at;
                if let State::Running { cpu, .. } = t.state {
                    close_run(self.topo, &mut self.busy_ns, t, at);
                    t.flush_run();
                    t.phases.push(Built::Wake { target: pid, seq });
                    t.state = State::Running { since_ns: at, cpu };
                }
            }
        }
        let (t, now) = entry(&mut self.tasks, pid, comm, now);
        if matches!(t.state, State::Sleeping { .. }) {
            t.sleep_until(now, by);
            t.state = State::Runnable;
        }
    }

    /// `pid` ends at `now`; later reports of it are ignored.
    pub fn exit(&mut self, pid: u32, now: u64) {
        self.mark(now);
        let Some(t) = self.tasks.get_mut(&pid) else {
            return;
        };
        let now = now.max(t.last_ns);
        t.last_ns = now;
        close_run(self.topo, &mut self.busy_ns, t, now);
        t.flush_run();
        t.state = State::Done;
    }

    /// The CPUs `pid` may use, as a kernel CPU list (its trace task's `allowed_cpus`).
    pub fn restrict(&mut self, pid: u32, cpus: String) {
        if let Some(t) = self.tasks.get_mut(&pid) {
            t.allowed = Some(cpus);
        }
    }

    /// Whether `pid` has been reported.
    pub fn knows(&self, pid: u32) -> bool {
        self.tasks.contains_key(&pid)
    }

    /// The trace: one task per pid that ran, named `COMM-PID`, starting at its first event
    /// counted from the start of the span ([`mark`](Self::mark)); tasks still running are
    /// closed at its end, which is also the trace's `duration_ns`. `pin_observed` makes the
    /// CPUs a task ran on its `allowed_cpus` where [`restrict`](Self::restrict) gave none.
    /// `source_name` names the recording in the description and in errors.
    pub fn finish(
        mut self,
        source_name: &str,
        trace_name: &str,
        pin_observed: bool,
    ) -> Result<Timeline, TimelineError> {
        let start = self.first_ns.unwrap_or(0);
        let end = self.last_ns;
        let mut tracks = core::mem::take(&mut self.tasks);
        // What each task keeps: trailing sleeps go (the recording ended, not the task), a
        // task that never ran is left out, one with more phases than a trace task holds is
        // folded. A relation stays only between two tasks kept unfolded.
        let mut names: BTreeMap<u32, String> = BTreeMap::new();
        let mut unfolded: BTreeMap<u32, bool> = BTreeMap::new();
        for (pid, t) in &mut tracks {
            close_run(self.topo, &mut self.busy_ns, t, end);
            t.flush_run();
            while matches!(t.phases.last(), Some(Built::Sleep(_) | Built::Wait { .. })) {
                t.phases.pop();
            }
            if !t.phases.iter().any(|p| matches!(p, Built::Run(_))) {
                continue;
            }
            names.insert(
                *pid,
                format!("{}-{pid}", t.comm.replace(char::is_whitespace, "_")),
            );
            unfolded.insert(*pid, t.phases.len() <= MAX_PHASES);
        }
        let mut kept = std::collections::BTreeSet::new();
        for (pid, t) in &tracks {
            if unfolded.get(pid) != Some(&true) {
                continue;
            }
            for p in &t.phases {
                if let Built::Wait { waker, seq, .. } = p {
                    if unfolded.get(waker) == Some(&true) {
                        kept.insert(*seq);
                    }
                }
            }
        }
        let mut specs = Vec::new();
        let mut observed = BTreeMap::new();
        let mut folded = Vec::new();
        for (pid, t) in tracks {
            let Some(name) = names.get(&pid).cloned() else {
                continue;
            };
            let mut cpus = t.cpus.clone();
            cpus.sort_unstable();
            let list = cpus
                .iter()
                .map(u16::to_string)
                .collect::<Vec<_>>()
                .join(",");
            let mut phases = settle(&t.phases, &kept, &names);
            if phases.len() > MAX_PHASES {
                phases = fold(&phases);
                folded.push(name.clone());
            }
            observed.insert(name.clone(), list.clone());
            let allowed = t.allowed.or_else(|| pin_observed.then_some(list));
            specs.push(TaskSpec {
                name,
                copies: 1,
                start_ns: t.first_ns.saturating_sub(start),
                weight: 100,
                allowed_cpus: allowed,
                util: None,
                cache_sensitivity_pct: 0,
                phases,
                frames: None,
            });
        }
        if specs.is_empty() {
            return Err(TimelineError::Empty);
        }
        let trace = Trace {
            version: TRACE_VERSION,
            name: Some(trace_name.to_owned()),
            description: Some(format!("recorded: {source_name}")),
            machine: None,
            seed: 0,
            duration_ns: Some(end.saturating_sub(start).max(1)),
            pools: Vec::new(),
            tasks: specs,
        };
        trace.validate(source_name)?;
        trace.validate_for(self.topo, source_name)?;
        Ok(Timeline {
            trace,
            observed_cpus: observed,
            folded,
            busy_ns: self.busy_ns,
            migrations: self.migrations,
            relations: kept.len() as u64,
        })
    }
}

/// A task's recorded phases as trace phases: a wait whose relation is `kept` names its waker,
/// any other is a sleep of its recorded length; a wake whose relation is kept names its target,
/// any other goes (the runs around it join again).
fn settle(
    built: &[Built],
    kept: &std::collections::BTreeSet<u64>,
    names: &BTreeMap<u32, String>,
) -> Vec<Phase> {
    let mut out: Vec<Phase> = Vec::with_capacity(built.len());
    for b in built {
        match *b {
            Built::Run(ns) => match out.last_mut() {
                Some(Phase::RunNs(prev)) => *prev = prev.saturating_add(ns),
                _ => out.push(Phase::RunNs(ns)),
            },
            Built::Wait { waker, seq, .. } if kept.contains(&seq) => {
                if let Some(w) = names.get(&waker) {
                    out.push(Phase::WaitFor(vec![w.clone()]));
                }
            }
            Built::Sleep(ns) | Built::Wait { ns, .. } => {
                if ns > 0 {
                    match out.last_mut() {
                        Some(Phase::SleepNs(prev)) => *prev = prev.saturating_add(ns),
                        _ => out.push(Phase::SleepNs(ns)),
                    }
                }
            }
            Built::Wake { target, seq } => {
                if kept.contains(&seq) {
                    if let Some(n) = names.get(&target) {
                        out.push(Phase::Wake(n.clone()));
                    }
                }
            }
        }
    }
    out
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

/// More phases than a task holds: a loop of the average run and sleep, then what the
/// averages' rounding left, so the run and sleep totals are the recording's to the nanosecond.
/// More runs than a loop repeats ([`MAX_LOOP_TIMES`]) are taken several to an iteration.
fn fold(phases: &[Phase]) -> Vec<Phase> {
    let (mut run, mut sleep, mut runs) = (0u128, 0u128, 0u64);
    for p in phases {
        match p {
            Phase::RunNs(n) => {
                run = run.saturating_add(u128::from(*n));
                runs += 1;
            }
            Phase::SleepNs(n) => sleep = sleep.saturating_add(u128::from(*n)),
            _ => {}
        }
    }
    let times = runs.clamp(1, MAX_LOOP_TIMES);
    let split = |total: u128| {
        let each = total / u128::from(times);
        let rest = total - each * u128::from(times);
        (
            u64::try_from(each).unwrap_or(u64::MAX),
            u64::try_from(rest).unwrap_or(u64::MAX),
        )
    };
    let ((run_each, run_rest), (sleep_each, sleep_rest)) = (split(run), split(sleep));
    let mut body = Vec::new();
    if run_each > 0 {
        body.push(Phase::RunNs(run_each));
    }
    if sleep_each > 0 {
        body.push(Phase::SleepNs(sleep_each));
    }
    let mut out = Vec::new();
    if body.is_empty() {
        // Less than a nanosecond per iteration: the totals as one run and one sleep.
        return [Phase::RunNs(run_rest), Phase::SleepNs(sleep_rest)]
            .into_iter()
            .filter(|p| !matches!(p, Phase::RunNs(0) | Phase::SleepNs(0)))
            .collect();
    }
    out.push(Phase::Loop(LoopSpec {
        times,
        phases: body,
    }));
    if sleep_rest > 0 {
        out.push(Phase::SleepNs(sleep_rest));
    }
    if run_rest > 0 {
        out.push(Phase::RunNs(run_rest));
    }
    out
}

#[cfg(test)]
mod test {
    use super::*;
    use hybridland_policy::{CoreKind, TopologyBuilder};

    /// CPU 0: capacity 1024; CPU 1: capacity 512.
    fn machine() -> Topology {
        let mut b = TopologyBuilder::new();
        b.add_cpu(CpuId(0), CoreKind::Performance, 1024, 0).unwrap();
        b.add_cpu(CpuId(1), CoreKind::Efficiency, 512, 0).unwrap();
        b.build().unwrap()
    }

    /// Run and sleep totals of phases, loops multiplied out.
    fn totals(phases: &[Phase]) -> (u128, u128) {
        phases.iter().fold((0, 0), |(r, s), p| match p {
            Phase::RunNs(n) => (r + u128::from(*n), s),
            Phase::SleepNs(n) => (r, s + u128::from(*n)),
            Phase::Loop(l) => {
                let (lr, ls) = totals(&l.phases);
                (r + lr * u128::from(l.times), s + ls * u128::from(l.times))
            }
            _ => (r, s),
        })
    }

    /// Folding keeps the recording's totals exactly, for uneven runs that do not divide, and
    /// for more runs than a loop may repeat.
    #[test]
    fn folding_keeps_the_run_and_sleep_totals() {
        for runs in [MAX_PHASES as u64 + 7, 2 * MAX_LOOP_TIMES + 3] {
            let mut phases = Vec::new();
            for k in 0..runs {
                phases.push(Phase::RunNs(1_000 + k % 7));
                phases.push(Phase::SleepNs(k % 3));
            }
            let folded = fold(&phases);
            assert!(folded.len() <= 3, "{folded:?}");
            assert_eq!(totals(&folded), totals(&phases), "{runs} runs");
        }
        let tiny = [Phase::RunNs(0), Phase::SleepNs(1), Phase::RunNs(0)];
        assert_eq!(totals(&fold(&tiny)), (0, 1));
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
