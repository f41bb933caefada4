//! Setting a replay up: the trace checked against the machine, the policy bound, copies
//! expanded into tasks and their arrivals scheduled.

use super::contention::ClusterContention;
use super::power::CoreMeter;
use super::program::Program;
use super::{Cpu, Event, SimError, Simulation, Status, Task};
use crate::event_queue::EventQueue;
use crate::machine::MachineModel;
use crate::metrics::{FrameCounter, LatencySamples};
use crate::options::SimOptions;
use crate::replay_limits::ReplayLimits;
use crate::sim_policy::SimPolicy;
use crate::trace::Trace;
use hybridland_policy::{CoreKind, CpuId, CpuSet, Topology};
use std::collections::{BTreeSet, VecDeque};

impl<'a> Simulation<'a> {
    /// Sets up a replay of `trace` on the machine `topo` + `model` under `policy`. Checks the
    /// trace against the machine and binds the policy; nothing runs yet.
    pub fn new(
        topo: &'a Topology,
        model: &'a MachineModel,
        trace: &'a Trace,
        policy: Box<dyn SimPolicy + 'a>,
        options: SimOptions,
    ) -> Result<Self, SimError> {
        let trace_name = trace.name.clone().unwrap_or_else(|| "trace".into());
        trace.validate(&trace_name)?;
        trace.validate_for(topo, &trace_name)?;
        trace.check_replay_limits(&options, &trace_name)?;
        let seed = options.seed.unwrap_or(trace.seed);
        let mut policy = policy.into_driver();
        policy.prepare(topo, options.policy_seed.unwrap_or(seed))?;

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
                cluster_pos: 0,
                running: None,
                local: VecDeque::new(),
                busy_ns: 0,
                busy_since: None,
                // Awake at 0: a task started then pays no wake-up cost.
                idle_since: Some(0),
                nudged: false,
            });
        }
        let siblings = (0..span).map(|i| topo.siblings(CpuId(i as u16))).collect();
        for cluster in 0..topo.nr_clusters() {
            for (pos, cpu) in topo.cluster_cpus(cluster).iter().enumerate() {
                if let Some(c) = cpus.get_mut(cpu.index()) {
                    c.cluster_pos = pos as u16;
                }
            }
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
        let mut spec_first = Vec::with_capacity(trace.tasks.len());
        let spec_by_name = trace
            .tasks
            .iter()
            .enumerate()
            .map(|(i, t)| (t.name.as_str(), i))
            .collect();
        for (spec_index, spec) in trace.tasks.iter().enumerate() {
            spec_first.push(tasks.len());
            for copy in 0..spec.copies {
                let name = spec.copy_name(copy).into_owned();
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
                    runnable_since: None,
                    ran_by_kind: [0; 3],
                    placed_by: None,
                    placed_util: 0,
                    run_latency: None,
                    queued: false,
                    run_queued: false,
                    frame_done: false,
                    slice_ns: None,
                    migrations: 0,
                    wakeups: 0,
                    finish_ns: None,
                    frames,
                    waiting_for: None,
                    pending: Vec::new(),
                    waker_cpu: None,
                    sync_waker: None,
                    woken_by: None,
                    run_woken_by: None,
                });
            }
        }
        let alive = tasks.len();
        policy.reserve(alive, options.slice_ns)?;
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
            spec_first,
            spec_by_name,
            allowed,
            cpus,
            siblings,
            contention: vec![ClusterContention::default(); topo.nr_clusters().max(1)],
            rerate_scratch: Vec::new(),
            rate_refreshes: 0,
            cpu_ids,
            cores,
            idle: *topo.cpus(),
            load: vec![0; span],
            shared: BTreeSet::new(),
            shared_seq: 0,
            nr_local: 0,
            pools_left: trace.pools.iter().map(|p| p.chunks).collect(),
            alive,
            tick_pending: false,
            driver_tick_at: None,
            latency: LatencySamples::default(),
            migrations: 0,
            record_runs: false,
            record_decisions: false,
            pending: Vec::new(),
        })
    }
}
