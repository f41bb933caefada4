//! The discrete-event engine: replays a [`Trace`] on a machine under one [`SimPolicy`].
//!
//! Events (arrivals, wake-ups, work completions, slice ends, balance ticks) sit in an
//! [`EventQueue`] keyed by `(time_ns, seq)`. A running task progresses at the rate the
//! [`MachineModel`] gives for its CPU and neighbours; whenever a CPU's occupancy changes, the
//! rates of its SMT siblings and L2-cluster neighbours are recomputed after settling the work
//! they did at the old rate, and their completion events are re-issued (stale ones are
//! recognised by a per-CPU generation number and skipped).
//!
//! Placement happens at every wake-up and at every slice end. At a slice end the task's CPU is
//! released first and handed over as `prev_cpu`, so staying is the policy's own answer, not an
//! engine default (hybridland asks the policy crate's slice-end rule). When the policy finds
//! nothing idle the task waits in the shared queue in the policy crate's vtime order (with
//! its bounded credit), and the next CPU to free up that the task may use takes it. Slices,
//! utilisation estimates and vtime charges come from the policy crate too
//! ([`hybridland_policy::slice_ns`], [`TaskState`]); the engine only moves tasks and time.
//!
//! Nothing here reads a clock, iterates a hash map or draws a random number: the policy gets
//! its own seeded generator, so the same inputs give the same bytes out.

use crate::event_queue::{EventQueue, TimeNs};
use crate::machine::{MachineModel, WORK_SCALE};
use crate::metrics::{FrameCounter, LatencySamples};
use crate::report::{ClusterStats, KindStats, Report, StepCount, Summary, TaskReport};
use crate::sim_policy::{
    Decision, MachineView, Move, QueuedTask, Reason, SimPolicy, Target, TaskView,
};
use crate::trace::{FrameSpec, Phase, Trace, TraceError};
use hybridland_policy::{
    CoreKind, CpuId, CpuSet, CpuState, Placement, Policy, Run, Step, TaskState, Topology,
    VtimeClock, slice_ns as sized_slice,
};
use std::collections::{BTreeSet, VecDeque};

/// Replay options that are not part of the trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimOptions {
    /// Time slice, ns. Default 5 ms.
    pub slice_ns: u64,
    /// Period of balance ticks, ns. Default 4 ms.
    pub balance_interval_ns: u64,
    /// Window over which frames per second are counted, ns. Default 1 s.
    pub fps_window_ns: u64,
    /// Replaces the trace's seed when set.
    pub seed: Option<u64>,
    /// The replay stops with an error after this many events. Default 200 million.
    pub max_events: u64,
    /// The replay stops with an error when simulated time passes this. Default 10^15 ns
    /// (about 11.6 days), far beyond any trace's horizon and far below overflow.
    pub max_time_ns: u64,
    /// Where the utilisation the policy sees comes from. Default: the policy crate's
    /// estimator over what each task actually ran, as the live scheduler does.
    pub util_source: UtilSource,
}

/// Where a task's utilisation comes from in a replay.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum UtilSource {
    /// The policy crate's estimator ([`hybridland_policy::UtilEstimate`]) over the runs the
    /// replay gives the task: what the live scheduler sees.
    #[default]
    Estimator,
    /// The trace's static hint (`util`, or the duty cycle of its phases): an oracle, kept so
    /// figures from before the estimator can be compared.
    Hint,
}

impl UtilSource {
    /// The name `--set util_source=` takes.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Estimator => "estimator",
            Self::Hint => "hint",
        }
    }
}

impl Default for SimOptions {
    fn default() -> Self {
        Self {
            slice_ns: 5_000_000,
            balance_interval_ns: 4_000_000,
            fps_window_ns: 1_000_000_000,
            seed: None,
            max_events: 200_000_000,
            max_time_ns: 1_000_000_000_000_000,
            util_source: UtilSource::Estimator,
        }
    }
}

/// Why a replay could not start or finish.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// The trace does not fit the machine.
    #[error(transparent)]
    Trace(#[from] TraceError),
    /// The policy cannot run on this machine.
    #[error(transparent)]
    Policy(#[from] crate::sim_policy::PolicyError),
    /// The policy answered with a CPU that is busy, not allowed or not on the machine.
    #[error("policy `{policy}` placed task {task} on cpu {cpu} at {now_ns} ns: {reason}")]
    InvalidDecision {
        /// Policy name.
        policy: String,
        /// Task index.
        task: usize,
        /// The CPU.
        cpu: CpuId,
        /// Simulated time.
        now_ns: u64,
        /// What is wrong.
        reason: &'static str,
    },
    /// A runaway trace: the replay passed [`SimOptions::max_events`] events or
    /// [`SimOptions::max_time_ns`] of simulated time.
    #[error(
        "runaway replay stopped after {events} events at {now_ns} ns (limits: {limit} events, {max_time_ns} ns)"
    )]
    TooManyEvents {
        /// Events processed.
        events: u64,
        /// The event limit.
        limit: u64,
        /// Simulated time.
        now_ns: u64,
        /// The simulated-time limit.
        max_time_ns: u64,
    },
    /// Tasks wait while no event can ever run them (a policy left them queued).
    #[error("replay stalled at {now_ns} ns with {waiting} tasks unable to run")]
    Stalled {
        /// Simulated time.
        now_ns: u64,
        /// Tasks left.
        waiting: usize,
    },
}

/// Everything about one placement decision, for observers (the tests check each against the
/// policy crate's invariants).
#[derive(Debug)]
pub struct DecisionRecord<'a> {
    /// Simulated time.
    pub now_ns: TimeNs,
    /// Task index.
    pub task: usize,
    /// Why it was placed.
    pub reason: Reason,
    /// The topology.
    pub topo: &'a Topology,
    /// The state the policy saw.
    pub state: &'a CpuState,
    /// The task's allowed CPUs.
    pub allowed: &'a CpuSet,
    /// Its previous CPU.
    pub prev_cpu: Option<CpuId>,
    /// The utilisation the policy was given.
    pub util: u16,
    /// The answer.
    pub decision: &'a Decision,
    /// The policy crate's policy, when the policy is hybridland.
    pub core: Option<&'a Policy>,
}

/// Sees every decision of a replay.
pub trait DecisionObserver {
    /// Called after the policy answered and before the engine acts on it.
    fn on_decision(&mut self, record: &DecisionRecord<'_>);
}

impl<F: FnMut(&DecisionRecord<'_>)> DecisionObserver for F {
    fn on_decision(&mut self, record: &DecisionRecord<'_>) {
        self(record);
    }
}

#[derive(Copy, Clone, Debug)]
enum Event {
    /// A task's first wake-up.
    Arrive(usize),
    /// A task's sleep ends (or its next frame is released).
    Wake(usize),
    /// The work of the task on this CPU is done, if the generation still matches.
    WorkDone { cpu: CpuId, generation: u64 },
    /// The slice of the task on this CPU ends, if the generation still matches.
    SliceEnd { cpu: CpuId, generation: u64 },
    /// Periodic balancing, scheduled while any CPU queue holds a task.
    BalanceTick,
}

/// Where a task's behaviour stands.
#[derive(Clone, Debug)]
enum Program<'t> {
    Phases {
        /// Loop cursors, innermost last: (phases, next index, repetitions left).
        stack: Vec<(&'t [Phase], usize, u64)>,
        /// Pool being drained.
        pool: Option<usize>,
    },
    Frames {
        spec: &'t FrameSpec,
        next: u64,
        release_ns: u64,
    },
}

enum Action {
    Run(u64),
    Sleep(u64),
    Done,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Status {
    NotStarted,
    Sleeping,
    Queued,
    Running,
    Done,
}

#[derive(Clone, Debug)]
struct RunInfo {
    since_ns: TimeNs,
    settled_ns: TimeNs,
    rate: u64,
}

#[derive(Clone, Debug)]
struct Task<'t> {
    name: String,
    spec: usize,
    util_hint: u16,
    weight: u32,
    sensitivity: u8,
    start_ns: TimeNs,
    program: Program<'t>,
    status: Status,
    /// Work left in the current run action, in [`WORK_SCALE`] units.
    remaining: u128,
    run: Option<RunInfo>,
    last_cpu: Option<CpuId>,
    /// The policy crate's per-task state: utilisation estimate, vtime.
    state: TaskState,
    runnable_since: Option<TimeNs>,
    ran_by_kind: [u64; 3],
    migrations: u64,
    wakeups: u64,
    finish_ns: Option<TimeNs>,
    frames: Option<FrameCounter>,
}

#[derive(Clone, Debug)]
struct Cpu {
    kind: CoreKind,
    capacity: u16,
    core: usize,
    cluster: usize,
    running: Option<usize>,
    local: VecDeque<usize>,
    work_gen: u64,
    slice_gen: u64,
    busy_ns: u64,
    busy_since: Option<TimeNs>,
}

/// Energy integration per core.
#[derive(Clone, Debug)]
struct CoreMeter {
    kind: CoreKind,
    busy_threads: u32,
    since_ns: TimeNs,
    energy_pj: u128,
}

/// One replay, set up and ready to [`run`](Self::run).
pub struct Simulation<'a> {
    topo: &'a Topology,
    model: &'a MachineModel,
    trace: &'a Trace,
    policy: Box<dyn SimPolicy + 'a>,
    options: SimOptions,
    seed: u64,
    machine_name: String,
    trace_name: String,

    now: TimeNs,
    events: EventQueue<Event>,
    nr_events: u64,
    tasks: Vec<Task<'a>>,
    allowed: Vec<CpuSet>,
    cpus: Vec<Cpu>,
    cpu_ids: Vec<CpuId>,
    cores: Vec<CoreMeter>,
    state: CpuState,
    load: Vec<u32>,
    shared: BTreeSet<(u64, u64, usize)>,
    shared_seq: u64,
    /// Tasks waiting in CPU queues (not the shared one).
    nr_local: usize,
    vtime: VtimeClock,
    pools_left: Vec<u64>,
    alive: usize,
    tick_pending: bool,
    latency: LatencySamples,
    migrations: u64,
    steps: [[u64; 2]; 4],
}

impl<'a> Simulation<'a> {
    /// Sets up a replay of `trace` on the machine `topo` + `model` under `policy`. Checks the
    /// trace against the machine and binds the policy; nothing runs yet.
    pub fn new(
        topo: &'a Topology,
        model: &'a MachineModel,
        trace: &'a Trace,
        mut policy: Box<dyn SimPolicy + 'a>,
        options: SimOptions,
    ) -> Result<Self, SimError> {
        let trace_name = trace.name.clone().unwrap_or_else(|| "trace".into());
        trace.validate(&trace_name)?;
        trace.validate_for(topo, &trace_name)?;
        let seed = options.seed.unwrap_or(trace.seed);
        policy.prepare(topo, seed)?;

        let span = topo.cpus().span();
        let cpu_ids: Vec<CpuId> = topo.cpus().iter().collect();
        let mut cpus = Vec::with_capacity(span);
        for i in 0..span {
            let info = topo.info(CpuId(i as u16));
            cpus.push(Cpu {
                kind: info.map_or(CoreKind::Performance, |i| i.kind),
                capacity: info.map_or(1, |i| i.capacity),
                core: info.map_or(0, |i| usize::from(i.core)),
                cluster: info.map_or(0, |i| usize::from(i.cluster)),
                running: None,
                local: VecDeque::new(),
                work_gen: 0,
                slice_gen: 0,
                busy_ns: 0,
                busy_since: None,
            });
        }
        let cores = (0..topo.nr_cores())
            .map(|c| CoreMeter {
                kind: topo
                    .core_cpus(c)
                    .first()
                    .and_then(|cpu| topo.info(*cpu))
                    .map_or(CoreKind::Performance, |i| i.kind),
                busy_threads: 0,
                since_ns: 0,
                energy_pj: 0,
            })
            .collect();

        let allowed: Vec<CpuSet> = trace.tasks.iter().map(|t| t.allowed_set(topo)).collect();
        let mut tasks = Vec::with_capacity(trace.nr_tasks());
        let mut events = EventQueue::new();
        for (spec_index, spec) in trace.tasks.iter().enumerate() {
            for copy in 0..spec.copies {
                let name = if spec.copies == 1 {
                    spec.name.clone()
                } else {
                    format!("{}.{copy}", spec.name)
                };
                let program = match &spec.frames {
                    Some(f) => Program::Frames {
                        spec: f,
                        next: 0,
                        release_ns: spec.start_ns,
                    },
                    None => Program::Phases {
                        stack: vec![(spec.phases.as_slice(), 0, 1)],
                        pool: None,
                    },
                };
                let frames = spec
                    .frames
                    .as_ref()
                    .map(|_| FrameCounter::new(spec.start_ns, options.fps_window_ns));
                events.push(spec.start_ns, Event::Arrive(tasks.len()));
                tasks.push(Task {
                    name,
                    spec: spec_index,
                    util_hint: spec.util_hint(),
                    weight: spec.weight,
                    sensitivity: spec.cache_sensitivity_pct,
                    start_ns: spec.start_ns,
                    program,
                    status: Status::NotStarted,
                    remaining: 0,
                    run: None,
                    last_cpu: None,
                    state: TaskState::new(),
                    runnable_since: None,
                    ran_by_kind: [0; 3],
                    migrations: 0,
                    wakeups: 0,
                    finish_ns: None,
                    frames,
                });
            }
        }
        let alive = tasks.len();
        Ok(Self {
            topo,
            model,
            trace,
            policy,
            options,
            seed,
            machine_name: String::new(),
            trace_name,
            now: 0,
            events,
            nr_events: 0,
            tasks,
            allowed,
            cpus,
            cpu_ids,
            cores,
            state: CpuState::all_idle(topo),
            load: vec![0; span],
            shared: BTreeSet::new(),
            shared_seq: 0,
            nr_local: 0,
            vtime: VtimeClock::new(),
            pools_left: trace.pools.iter().map(|p| p.chunks).collect(),
            alive,
            tick_pending: false,
            latency: LatencySamples::default(),
            migrations: 0,
            steps: [[0; 2]; 4],
        })
    }

    /// Names the machine in the report (the topology itself carries no name).
    pub fn set_machine_name(&mut self, name: &str) {
        name.clone_into(&mut self.machine_name);
    }

    /// Runs the replay to the end.
    pub fn run(self) -> Result<Report, SimError> {
        self.run_observed(&mut |_: &DecisionRecord<'_>| {})
    }

    /// Runs the replay, showing every decision to `observer`.
    pub fn run_observed(mut self, observer: &mut dyn DecisionObserver) -> Result<Report, SimError> {
        let horizon = self.trace.duration_ns;
        while let Some((time, event)) = self.events.pop() {
            if horizon.is_some_and(|h| time > h) {
                self.now = horizon.unwrap_or(time);
                break;
            }
            if self.alive == 0 {
                break;
            }
            self.now = time;
            self.nr_events += 1;
            if self.nr_events > self.options.max_events || time > self.options.max_time_ns {
                return Err(SimError::TooManyEvents {
                    events: self.nr_events,
                    limit: self.options.max_events,
                    now_ns: self.now,
                    max_time_ns: self.options.max_time_ns,
                });
            }
            match event {
                Event::Arrive(t) | Event::Wake(t) => self.wake(t, observer)?,
                Event::WorkDone { cpu, generation } => {
                    if self.cpus[cpu.index()].work_gen == generation {
                        self.work_done(cpu)?;
                    }
                }
                Event::SliceEnd { cpu, generation } => {
                    if self.cpus[cpu.index()].slice_gen == generation {
                        self.slice_end(cpu, observer)?;
                    }
                }
                Event::BalanceTick => self.balance_tick()?,
            }
        }
        if horizon.is_none() && self.alive > 0 {
            return Err(SimError::Stalled {
                now_ns: self.now,
                waiting: self.alive,
            });
        }
        Ok(self.finish())
    }

    fn ensure_tick(&mut self) {
        if !self.tick_pending {
            self.tick_pending = true;
            self.events.push(
                self.now.saturating_add(self.options.balance_interval_ns),
                Event::BalanceTick,
            );
        }
    }

    /// The next thing task `t` does, taking pool chunks and unrolling loops.
    fn next_action(&mut self, t: usize) -> Action {
        let pools = &self.trace.pools;
        let pools_left = &mut self.pools_left;
        let task = &mut self.tasks[t];
        match &mut task.program {
            Program::Frames { spec, next, .. } => {
                if *next >= spec.count {
                    Action::Done
                } else {
                    Action::Run(spec.work_ns)
                }
            }
            Program::Phases { stack, pool } => loop {
                if let Some(p) = *pool {
                    if pools_left[p] > 0 {
                        pools_left[p] -= 1;
                        return Action::Run(pools[p].chunk_ns);
                    }
                    *pool = None;
                }
                let Some(top) = stack.last_mut() else {
                    return Action::Done;
                };
                if top.1 == top.0.len() {
                    if top.2 > 1 {
                        top.2 -= 1;
                        top.1 = 0;
                    } else {
                        stack.pop();
                    }
                    continue;
                }
                let phase = &top.0[top.1];
                top.1 += 1;
                match phase {
                    Phase::RunNs(0) | Phase::SleepNs(0) => {}
                    Phase::RunNs(ns) => return Action::Run(*ns),
                    Phase::SleepNs(ns) => return Action::Sleep(*ns),
                    Phase::Pool(name) => *pool = pools.iter().position(|p| &p.name == name),
                    Phase::Loop(l) => stack.push((l.phases.as_slice(), 0, l.times)),
                }
            },
        }
    }

    /// Task `t` wakes (first arrival, end of sleep, frame release).
    fn wake(&mut self, t: usize, observer: &mut dyn DecisionObserver) -> Result<(), SimError> {
        match self.next_action(t) {
            Action::Run(ns) => {
                let task = &mut self.tasks[t];
                task.remaining = u128::from(ns) * u128::from(WORK_SCALE);
                task.wakeups += 1;
                task.state.on_wakeup(self.now);
                task.runnable_since = Some(self.now);
                task.status = Status::Queued;
                if let Program::Frames { release_ns, .. } = &mut task.program {
                    *release_ns = self.now;
                }
                self.place(t, Reason::Wakeup, None, observer)
            }
            Action::Sleep(ns) => {
                self.tasks[t].status = Status::Sleeping;
                self.events
                    .push(self.now.saturating_add(ns), Event::Wake(t));
                Ok(())
            }
            Action::Done => {
                self.retire(t);
                Ok(())
            }
        }
    }

    fn retire(&mut self, t: usize) {
        let task = &mut self.tasks[t];
        task.status = Status::Done;
        task.finish_ns = Some(self.now);
        self.alive -= 1;
    }

    /// Asks the policy where runnable task `t` goes and puts it there. `vacated` is the CPU
    /// it just left at a slice end (already idle in the state).
    fn place(
        &mut self,
        t: usize,
        reason: Reason,
        vacated: Option<CpuId>,
        observer: &mut dyn DecisionObserver,
    ) -> Result<(), SimError> {
        let allowed = self.allowed[self.tasks[t].spec];
        let prev = self.tasks[t].last_cpu;
        let util = match self.options.util_source {
            UtilSource::Estimator => self.tasks[t].state.util(),
            UtilSource::Hint => self.tasks[t].util_hint,
        };
        let view = MachineView {
            topo: self.topo,
            state: &self.state,
            load: &self.load,
            now_ns: self.now,
        };
        let task_view = TaskView {
            id: t,
            allowed: &allowed,
            prev_cpu: prev,
            util,
            reason,
        };
        let decision = self.policy.place(&view, &task_view);
        observer.on_decision(&DecisionRecord {
            now_ns: self.now,
            task: t,
            reason,
            topo: self.topo,
            state: &self.state,
            allowed: &allowed,
            prev_cpu: prev,
            util,
            decision: &decision,
            core: self.policy.core(),
        });
        if let Some(p) = decision.placement {
            self.count_step(&p);
        }
        let invalid = |cpu: CpuId, reason: &'static str, s: &Self| SimError::InvalidDecision {
            policy: s.policy.name().to_owned(),
            task: t,
            cpu,
            now_ns: s.now,
            reason,
        };
        match decision.target {
            Target::Run(cpu) => {
                if self.topo.info(cpu).is_none() {
                    return Err(invalid(cpu, "no such CPU", self));
                }
                if !allowed.contains(cpu) {
                    return Err(invalid(cpu, "not allowed for the task", self));
                }
                if !self.state.is_idle(cpu) {
                    return Err(invalid(cpu, "CPU is busy", self));
                }
                if vacated == Some(cpu) && reason == Reason::Preempted {
                    // Staying put while someone waits means yielding: back of the line.
                    if self.cpus[cpu.index()].local.is_empty() {
                        self.enqueue_shared(t);
                    } else {
                        self.enqueue_local(t, cpu);
                    }
                    return self.dispatch(cpu);
                }
                self.start(t, cpu);
            }
            Target::QueueOn(cpu) => {
                if self.topo.info(cpu).is_none() {
                    return Err(invalid(cpu, "no such CPU", self));
                }
                if !allowed.contains(cpu) {
                    return Err(invalid(cpu, "not allowed for the task", self));
                }
                self.enqueue_local(t, cpu);
                if self.state.is_idle(cpu) {
                    self.dispatch(cpu)?;
                }
            }
            Target::QueueShared => {
                if let Some(cpu) = allowed.and(self.state.idle()).first() {
                    if vacated != Some(cpu) || allowed.and(self.state.idle()).count() > 1 {
                        return Err(invalid(
                            cpu,
                            "queued in the shared queue while an allowed CPU is idle",
                            self,
                        ));
                    }
                }
                self.enqueue_shared(t);
            }
        }
        if let Some(cpu) = vacated {
            if self.state.is_idle(cpu) {
                self.dispatch(cpu)?;
            }
        }
        Ok(())
    }

    fn count_step(&mut self, p: &Placement) {
        let i = match p.step {
            Step::IdlePCore => 0,
            Step::IdleECore => 1,
            Step::BusySibling => 2,
            Step::NoIdle => 3,
        };
        self.steps[i][0] += 1;
        self.steps[i][1] += u64::from(p.overflow);
    }

    fn enqueue_local(&mut self, t: usize, cpu: CpuId) {
        // Balancing only moves tasks between CPU queues, so ticks run only while one is used.
        self.ensure_tick();
        self.tasks[t].status = Status::Queued;
        self.cpus[cpu.index()].local.push_back(t);
        self.load[cpu.index()] += 1;
        self.nr_local += 1;
    }

    fn enqueue_shared(&mut self, t: usize) {
        let task = &mut self.tasks[t];
        let key = self.vtime.queue(&mut task.state, self.options.slice_ns);
        task.status = Status::Queued;
        self.shared.insert((key, self.shared_seq, t));
        self.shared_seq += 1;
    }

    /// An idle CPU takes the next task from its own queue, else from the shared queue.
    fn dispatch(&mut self, cpu: CpuId) -> Result<(), SimError> {
        if !self.state.is_idle(cpu) {
            return Ok(());
        }
        if let Some(t) = self.cpus[cpu.index()].local.pop_front() {
            self.load[cpu.index()] -= 1;
            self.nr_local -= 1;
            self.start(t, cpu);
            return Ok(());
        }
        let next = self
            .shared
            .iter()
            .find(|(_, _, t)| self.allowed[self.tasks[*t].spec].contains(cpu))
            .copied();
        if let Some(key) = next {
            self.shared.remove(&key);
            self.start(key.2, cpu);
        }
        Ok(())
    }

    /// Puts task `t` on idle `cpu`.
    fn start(&mut self, t: usize, cpu: CpuId) {
        let now = self.now;
        let i = cpu.index();
        let (same_cluster, moved) = match self.tasks[t].last_cpu {
            Some(last) if last != cpu => (
                self.cpus[last.index()].cluster == self.cpus[i].cluster,
                true,
            ),
            _ => (true, false),
        };
        let task = &mut self.tasks[t];
        if moved {
            task.migrations += 1;
            self.migrations += 1;
            let cost = if same_cluster {
                self.model.migration_ns
            } else {
                self.model.cross_cluster_migration_ns
            };
            task.remaining = task
                .remaining
                .saturating_add(u128::from(cost) * u128::from(WORK_SCALE));
        }
        if let Some(since) = task.runnable_since.take() {
            self.latency.record(now - since);
        }
        task.status = Status::Running;
        task.last_cpu = Some(cpu);
        // Rate 0: no completion event issued yet; `refresh_around` issues it.
        task.run = Some(RunInfo {
            since_ns: now,
            settled_ns: now,
            rate: 0,
        });
        self.vtime.on_start(task.state.vtime());
        let nr_waiting = (self.shared.len() + self.nr_local) as u64;
        let slice = sized_slice(self.options.slice_ns, nr_waiting);

        self.state.occupy(self.topo, cpu);
        self.load[i] += 1;
        let c = &mut self.cpus[i];
        c.running = Some(t);
        c.busy_since = Some(now);
        c.slice_gen += 1;
        let slice_gen = c.slice_gen;
        let core = c.core;
        self.meter(core, 1);
        self.events.push(
            now.saturating_add(slice),
            Event::SliceEnd {
                cpu,
                generation: slice_gen,
            },
        );
        self.refresh_around(cpu);
    }

    /// Takes the running task off `cpu`; returns it.
    fn stop(&mut self, cpu: CpuId) -> usize {
        let now = self.now;
        let i = cpu.index();
        let t = self.cpus[i].running.take().unwrap_or(usize::MAX);
        self.settle(t);
        let c = &mut self.cpus[i];
        c.work_gen += 1;
        c.slice_gen += 1;
        if let Some(since) = c.busy_since.take() {
            c.busy_ns += now - since;
        }
        let (kind, core) = (c.kind, c.core);
        self.meter(core, -1);
        self.state.release(self.topo, cpu);
        self.load[i] -= 1;
        let capacity = self.cpus[i].capacity;
        if let Some(task) = self.tasks.get_mut(t) {
            if let Some(run) = task.run.take() {
                task.ran_by_kind[kind.index()] += now - run.since_ns;
                let _counted = task.state.on_run(&Run {
                    cpu,
                    capacity,
                    start_ns: run.since_ns,
                    stop_ns: now,
                    weight: task.weight,
                });
            }
        }
        self.refresh_around(cpu);
        t
    }

    /// Brings a running task's remaining work up to now at its current rate.
    fn settle(&mut self, t: usize) {
        let now = self.now;
        if let Some(task) = self.tasks.get_mut(t) {
            if let Some(run) = &mut task.run {
                let done = u128::from(run.rate) * u128::from(now - run.settled_ns);
                task.remaining = task.remaining.saturating_sub(done);
                run.settled_ns = now;
            }
        }
    }

    /// Recomputes the rates of the tasks running beside `cpu` (its core and its L2 cluster)
    /// and re-issues their completion events.
    fn refresh_around(&mut self, cpu: CpuId) {
        let topo = self.topo;
        let cluster = topo.info(cpu).map_or(0, |i| usize::from(i.cluster));
        let members = topo.cluster_cpus(cluster);
        for &c in members {
            self.refresh(c);
        }
        for &s in topo.siblings(cpu) {
            if !members.contains(&s) {
                self.refresh(s);
            }
        }
    }

    fn refresh(&mut self, cpu: CpuId) {
        let i = cpu.index();
        let Some(t) = self.cpus[i].running else {
            return;
        };
        self.settle(t);
        let topo = self.topo;
        let sibling_busy = topo
            .siblings(cpu)
            .iter()
            .any(|s| *s != cpu && self.cpus[s.index()].running.is_some());
        let cluster = self.cpus[i].cluster;
        let others: u32 = topo
            .cluster_cpus(cluster)
            .iter()
            .filter(|c| **c != cpu)
            .filter_map(|c| self.cpus[c.index()].running)
            .map(|o| u32::from(self.tasks[o].sensitivity))
            .sum();
        let task = &self.tasks[t];
        let rate = self.model.rate(
            self.cpus[i].capacity,
            sibling_busy,
            task.sensitivity,
            others,
        );
        let remaining = task.remaining;
        if let Some(run) = &mut self.tasks[t].run {
            // Same speed as before: the pending completion event is still exact.
            if run.rate == rate {
                return;
            }
            run.rate = rate;
        }
        let c = &mut self.cpus[i];
        c.work_gen += 1;
        let generation = c.work_gen;
        let wait = remaining.div_ceil(u128::from(rate));
        let due = self
            .now
            .saturating_add(u64::try_from(wait).unwrap_or(u64::MAX));
        self.events.push(due, Event::WorkDone { cpu, generation });
    }

    /// Integrates a core's power up to now and changes its busy-thread count.
    fn meter(&mut self, core: usize, delta: i32) {
        let now = self.now;
        let model = self.model;
        let m = &mut self.cores[core];
        let mw = model.core_power_mw(m.kind, m.busy_threads);
        m.energy_pj += u128::from(mw) * u128::from(now - m.since_ns);
        m.since_ns = now;
        m.busy_threads = m.busy_threads.saturating_add_signed(delta);
    }

    /// The running task on `cpu` finished its current piece of work.
    fn work_done(&mut self, cpu: CpuId) -> Result<(), SimError> {
        let Some(t) = self.cpus[cpu.index()].running else {
            return Ok(());
        };
        self.settle(t);
        self.tasks[t].remaining = 0;
        let now = self.now;
        if let Program::Frames {
            spec,
            next,
            release_ns,
        } = &mut self.tasks[t].program
        {
            let deadline = spec.deadline_ns.unwrap_or(spec.period_ns);
            let missed = now > release_ns.saturating_add(deadline);
            let released = *release_ns;
            *next += 1;
            let next_release = released.saturating_add(spec.period_ns).max(now);
            let more = *next < spec.count;
            if let Some(f) = &mut self.tasks[t].frames {
                f.complete(released, now, missed);
            }
            // A render loop blocks once per frame (on the GPU fence or the frame clock) even
            // when it is late, so every frame is a fresh wake-up and placement.
            self.stop(cpu);
            if more {
                self.tasks[t].status = Status::Sleeping;
                self.events.push(next_release, Event::Wake(t));
            } else {
                self.retire(t);
            }
            return self.dispatch(cpu);
        }
        match self.next_action(t) {
            Action::Run(ns) => {
                self.tasks[t].remaining = u128::from(ns) * u128::from(WORK_SCALE);
                if let Some(run) = &mut self.tasks[t].run {
                    run.rate = 0;
                }
                self.refresh(cpu);
                Ok(())
            }
            Action::Sleep(ns) => {
                self.stop(cpu);
                self.tasks[t].status = Status::Sleeping;
                self.events.push(now.saturating_add(ns), Event::Wake(t));
                self.dispatch(cpu)
            }
            Action::Done => {
                self.stop(cpu);
                self.retire(t);
                self.dispatch(cpu)
            }
        }
    }

    /// The running task on `cpu` used up its slice: re-place it with its CPU released.
    fn slice_end(
        &mut self,
        cpu: CpuId,
        observer: &mut dyn DecisionObserver,
    ) -> Result<(), SimError> {
        let Some(t) = self.cpus[cpu.index()].running else {
            return Ok(());
        };
        let waiting = !self.cpus[cpu.index()].local.is_empty()
            || self
                .shared
                .iter()
                .any(|(_, _, w)| self.allowed[self.tasks[*w].spec].contains(cpu));
        self.stop(cpu);
        self.tasks[t].status = Status::Queued;
        let reason = if waiting {
            Reason::Preempted
        } else {
            Reason::SliceEnd
        };
        self.place(t, reason, Some(cpu), observer)
    }

    fn balance_tick(&mut self) -> Result<(), SimError> {
        self.tick_pending = false;
        if self.alive == 0 {
            return Ok(());
        }
        let mut queued = Vec::new();
        for &cpu in &self.cpu_ids {
            for &t in &self.cpus[cpu.index()].local {
                queued.push(QueuedTask {
                    id: t,
                    cpu,
                    allowed: &self.allowed[self.tasks[t].spec],
                });
            }
        }
        let moves = if queued.is_empty() {
            Vec::new()
        } else {
            let view = MachineView {
                topo: self.topo,
                state: &self.state,
                load: &self.load,
                now_ns: self.now,
            };
            self.policy.balance(&view, &queued)
        };
        drop(queued);
        for Move { task, to } in moves {
            self.apply_move(task, to)?;
        }
        // Nothing runs and nothing is due: the waiting tasks can never start (a policy left
        // them in a queue no CPU will look at). Say so instead of ticking forever.
        if self.events.is_empty() && self.cpus.iter().all(|c| c.running.is_none()) {
            let waiting = self
                .tasks
                .iter()
                .filter(|t| t.status == Status::Queued)
                .count();
            return Err(SimError::Stalled {
                now_ns: self.now,
                waiting,
            });
        }
        if self.cpus.iter().any(|c| !c.local.is_empty()) {
            self.ensure_tick();
        }
        Ok(())
    }

    fn apply_move(&mut self, t: usize, to: CpuId) -> Result<(), SimError> {
        let bad = |reason: &'static str, s: &Self| SimError::InvalidDecision {
            policy: s.policy.name().to_owned(),
            task: t,
            cpu: to,
            now_ns: s.now,
            reason,
        };
        if self.topo.info(to).is_none() {
            return Err(bad("no such CPU", self));
        }
        if t >= self.tasks.len() || !self.allowed[self.tasks[t].spec].contains(to) {
            return Err(bad("balance move to a CPU the task may not use", self));
        }
        let from = self
            .cpu_ids
            .iter()
            .copied()
            .find(|c| self.cpus[c.index()].local.contains(&t));
        let Some(from) = from else {
            return Err(bad(
                "balance move of a task that is not in a CPU queue",
                self,
            ));
        };
        self.cpus[from.index()].local.retain(|x| *x != t);
        self.load[from.index()] -= 1;
        self.nr_local -= 1;
        self.enqueue_local(t, to);
        self.dispatch(to)
    }

    fn finish(mut self) -> Report {
        let end = self.now;
        // Close the books on whatever still runs (a horizon cut it short).
        for i in 0..self.cpus.len() {
            if self.cpus[i].running.is_some() {
                self.stop(CpuId(i as u16));
            }
        }
        for core in 0..self.cores.len() {
            self.meter(core, 0);
        }
        let makespan = end;
        let secs = makespan as f64 / 1e9;
        let package_pj = u128::from(self.model.package_mw) * u128::from(makespan);
        let cores_pj: u128 = self.cores.iter().map(|c| c.energy_pj).sum();
        let energy_j = (package_pj + cores_pj) as f64 / 1e12;

        let mut kinds = Vec::new();
        for kind in CoreKind::ALL {
            let mask = self.topo.kind_mask(kind);
            if mask.is_empty() {
                continue;
            }
            let busy: u64 = mask.iter().map(|c| self.cpus[c.index()].busy_ns).sum();
            let pj: u128 = self
                .cores
                .iter()
                .filter(|c| c.kind == kind)
                .map(|c| c.energy_pj)
                .sum();
            kinds.push(KindStats {
                kind: kind.name().to_owned(),
                cpus: mask.count(),
                busy_ns: busy,
                utilisation_pct: ratio(busy as f64 * 100.0, mask.count() as f64 * makespan as f64),
                energy_j: pj as f64 / 1e12,
            });
        }
        let clusters = (0..self.topo.nr_clusters())
            .map(|cl| {
                let members = self.topo.cluster_cpus(cl);
                let busy: u64 = members.iter().map(|c| self.cpus[c.index()].busy_ns).sum();
                let set: CpuSet = members.iter().copied().collect();
                ClusterStats {
                    index: cl,
                    kind: members
                        .first()
                        .map_or(CoreKind::Performance, |c| self.cpus[c.index()].kind)
                        .name()
                        .to_owned(),
                    cpus: set.to_string(),
                    busy_ns: busy,
                    avg_running: ratio(busy as f64, makespan as f64),
                }
            })
            .collect();
        let steps = if self.policy.core().is_some() {
            [
                Step::IdlePCore,
                Step::IdleECore,
                Step::BusySibling,
                Step::NoIdle,
            ]
            .iter()
            .zip(self.steps)
            .map(|(s, [count, overflow])| StepCount {
                step: s.name().to_owned(),
                count,
                overflow,
            })
            .collect()
        } else {
            Vec::new()
        };

        let mut finished = 0usize;
        let mut turnaround_sum = 0u128;
        let mut turnaround_max = 0u64;
        let tasks: Vec<TaskReport> = self
            .tasks
            .iter()
            .map(|t| {
                let turnaround = t.finish_ns.map(|f| f - t.start_ns);
                if let Some(d) = turnaround {
                    finished += 1;
                    turnaround_sum += u128::from(d);
                    turnaround_max = turnaround_max.max(d);
                }
                TaskReport {
                    name: t.name.clone(),
                    start_ns: t.start_ns,
                    finish_ns: t.finish_ns,
                    turnaround_ns: turnaround,
                    ran_performance_ns: t.ran_by_kind[0],
                    ran_efficiency_ns: t.ran_by_kind[1],
                    ran_low_power_ns: t.ran_by_kind[2],
                    migrations: t.migrations,
                    wakeups: t.wakeups,
                    util: t.state.util(),
                    frames: t.frames.as_ref().map(|f| f.stats(&t.name)),
                }
            })
            .collect();
        let fps = tasks.iter().find_map(|t| t.frames.clone());
        Report {
            policy: self.policy.name().to_owned(),
            policy_config: self.policy.describe(),
            machine: self.machine_name.clone(),
            trace: self.trace_name.clone(),
            seed: self.seed,
            summary: Summary {
                makespan_ns: makespan,
                tasks: self.tasks.len(),
                tasks_finished: finished,
                throughput_per_s: ratio(finished as f64, secs),
                mean_turnaround_ns: if finished == 0 {
                    0
                } else {
                    (turnaround_sum / finished as u128) as u64
                },
                max_turnaround_ns: turnaround_max,
                migrations: self.migrations,
                energy_j,
                avg_power_w: ratio(energy_j, secs),
                events: self.nr_events,
            },
            wake_latency: self.latency.stats(),
            fps,
            kinds,
            clusters,
            steps,
            tasks,
        }
    }
}

fn ratio(a: f64, b: f64) -> f64 {
    if b == 0.0 { 0.0 } else { a / b }
}
