//! Policies the policy crate's scheduler core drives ([`SchedCore`]): hybridland, the built-in
//! baselines that run live too, and any [`PlacementPolicy`] a user registers. The simulator
//! runs the same per-task sequence around them that the live loop runs.

use crate::sim_policy::{
    Decision, Destination, EngineView, MachineView, PolicyDriver, PolicyError, Reason, SimCore,
    SimPolicy, TaskView,
};
mod driver;
mod fast;
mod pids;

use driver::life_of;
use fast::{FastTable, settle};
pub use hybridland_policy::CustomPolicy;
use hybridland_policy::{
    Affinity, Arrival, Builtin, BuiltinPolicy, CoreConfig, CpuState, Input, KnobValues, Occupancy,
    Output, PlacementPolicy, Policy, PolicyConfig, Queued, SchedCore, Slot, Step, TimeNs, Topology,
    UtilSource, Waiting,
};
use pids::Pids;

/// Where a core-driven policy comes from.
#[derive(Clone, Debug)]
enum Source {
    Builtin(Builtin, PolicyConfig),
    /// With its knob values (`None`: the defaults).
    Custom(CustomPolicy, Option<KnobValues>),
}

/// A policy behind the scheduler core, behind the [`SimPolicy`] interface: a wake-up or a
/// slice end is one batch of one task handed to the core and its dispatch polled out; with
/// nothing idle the task waits in the shared queue (sched_ext's shared DSQ) with the core's
/// vtime, and the first allowed CPU to free up takes it. As its own [`PolicyDriver`] it plays
/// the live framework's part: it tells the core every start, stop and exit, runs its timer,
/// and lets the engine refill an uncontended slice without asking (as scx_rustland_core does).
pub struct CoreDriven {
    source: Source,
    description: String,
    /// Built by `prepare`.
    prepared: Option<(Topology, Box<dyn PlacementPolicy>)>,
    /// Built by `reserve`.
    core: Option<Box<SimCore>>,
    /// Whether to model the live scheduler's in-kernel wake-up fast path (hybridland only).
    fast_wake: bool,
    /// The live fast path's table, built by `reserve` when modelled.
    fast: Option<FastTable>,
    /// The core's wake-up preemption.
    wake_preempt: bool,
    /// The core's up-migration scan (`up_scan`, on by default, as live).
    up_scan: bool,
    /// Class changes the core gave (live: writes into the kernel's class table).
    classed: u64,
    /// Per task: its estimate when it ended (the core forgets it then).
    final_util: Vec<Option<u16>>,
    /// The ids the core knows the tasks by, reused as pids are.
    pids: Pids,
    /// Per step of the idle order: placements, and overflows among them.
    steps: [[u64; 2]; Step::ALL.len()],
    /// A copy of the core's state before the last decision, when decisions are watched (the
    /// decision changes the core's state; the checkers test it against the one it was made
    /// on).
    seen: Option<CpuState>,
}

impl CoreDriven {
    /// The built-in policy `kind`; `config` are hybridland's knobs (the baselines have none).
    pub fn builtin(kind: Builtin, config: PolicyConfig) -> Self {
        let description = match kind {
            Builtin::Hybridland => {
                let c = &config;
                format!(
                    "primary_domain={} cluster_balance={} auto_low_busy_pct={} auto_high_busy_pct={} fit_margin_pct={} wake_affine={}",
                    c.primary_domain,
                    c.cluster_balance,
                    c.auto_low_busy_pct,
                    c.auto_high_busy_pct,
                    c.fit_margin_pct,
                    if c.wake_affine { "on" } else { "off" }
                )
            }
            other => other.description().to_owned(),
        };
        Self::from_source(Source::Builtin(kind, config), description)
    }

    /// The hybridland policy with these knobs.
    pub fn hybridland(config: PolicyConfig) -> Self {
        Self::builtin(Builtin::Hybridland, config)
    }

    /// A user's policy, its knobs at their defaults.
    pub fn custom(policy: CustomPolicy) -> Self {
        Self::from_source(Source::Custom(policy, None), policy.description.to_owned())
    }

    /// A user's policy with its knobs at `values` (in the order of [`CustomPolicy::knobs`],
    /// checked against them).
    pub fn custom_with(policy: CustomPolicy, values: KnobValues) -> Self {
        let shown: Vec<String> = policy
            .knobs
            .iter()
            .zip(values.as_slice())
            .map(|(k, v)| format!("{}={}", k.name, k.show(*v)))
            .collect();
        let description = if shown.is_empty() {
            policy.description.to_owned()
        } else {
            shown.join(" ")
        };
        Self::from_source(Source::Custom(policy, Some(values)), description)
    }

    fn from_source(source: Source, description: String) -> Self {
        Self {
            source,
            description,
            prepared: None,
            core: None,
            fast_wake: true,
            fast: None,
            wake_preempt: false,
            up_scan: true,
            classed: 0,
            final_util: Vec::new(),
            pids: Pids::default(),
            steps: [[0; 2]; Step::ALL.len()],
            seen: None,
        }
    }

    /// Models the live scheduler's in-kernel wake-up fast path (`on`, the default, as live)
    /// or sends every wake-up to the core (as `scx_hybridland --no-fast-wake`). Only
    /// hybridland's policy has a fast path.
    pub fn with_fast_wake(mut self, on: bool) -> Self {
        self.fast_wake = on;
        self
    }

    /// The core's wake-up preemption on (as `scx_hybridland --wake-preempt`) or off (the
    /// default, as live).
    pub fn with_wake_preempt(mut self, on: bool) -> Self {
        self.wake_preempt = on;
        self
    }

    /// The core's up-migration scan on (the default, as live) or off (as `scx_hybridland
    /// --no-up-scan`: a task moves to a better CPU only when the core next decides for it).
    pub fn with_up_scan(mut self, on: bool) -> Self {
        self.up_scan = on;
        self
    }

    fn config_error(&self, reason: String) -> PolicyError {
        PolicyError::Config {
            policy: SimPolicy::name(self).to_owned(),
            reason,
        }
    }

    /// The core's decision for `task` (or the fast path's).
    fn decide(&mut self, machine: &EngineView<'_>, task: &TaskView<'_>) -> Decision {
        let Some(core) = self.core.as_deref_mut() else {
            return Decision::plain(Destination::QueueShared);
        };
        // Between decisions the core and the engine agree on which CPUs are idle: the core's
        // decision reads its own, the engine acts on its own.
        debug_assert_eq!(
            core.state().idle(),
            machine.idle,
            "the scheduler core's idle CPUs differ from the engine's at {} ns",
            machine.now_ns
        );
        if let Some(seen) = &mut self.seen {
            seen.clone_from(core.state());
        }
        let arrival = match task.reason {
            Reason::Wakeup => Arrival::Wakeup {
                waker: task.waker_cpu.map(|cpu| hybridland_policy::Waker {
                    task: None,
                    cpu,
                    sync: task.sync_waker == Some(cpu),
                }),
            },
            // Nothing of a core-driven policy waits in a CPU's own queue: a waiter is in the
            // shared one.
            Reason::Preempted => Arrival::SliceEnd {
                waiting: Waiting::SharedQueue,
            },
            // The task that stopped it (a pinned wake-up, a wake-up preemption, the nudge
            // helper) is first in the CPU's own queue and runs before it whatever the core
            // says; live, the snapshot does not show it (it is in the kernel's local queue,
            // not the framework's queue for the CPU), so the core hears that nobody waits.
            Reason::Displaced => Arrival::SliceEnd {
                waiting: Waiting::Nobody,
            },
            Reason::SliceEnd => Arrival::SliceEnd {
                waiting: Waiting::Nobody,
            },
        };
        let queued = Queued {
            task: self.pids.id(task.id),
            life: life_of(task.id),
            token: 0,
            arrival,
            cpu: task.prev_cpu,
            last_run: None,
            weight: task.weight,
            affinity: Affinity::Cpus(task.allowed),
            util: if task.from_hint {
                UtilSource::Hint(task.util)
            } else {
                UtilSource::Estimate
            },
        };
        // Live, a wake-up the fast path places is placed in the kernel, with the base slice,
        // where the table's walk puts it; the core learns of it afterwards (`Input::Placed`),
        // here at once. A task's first placement (live: a fork, not a wake-up) goes to the core.
        if task.reason == Reason::Wakeup
            && task.prev_cpu.is_some()
            && let Some(fast) = &self.fast
        {
            let class = core.task_class(queued.task);
            let util = core
                .policy()
                .hybridland()
                .map(|p| p.class_util(machine.topo, class));
            if let Some(placed) = fast.place(machine, task, (class, util), core.state().homes()) {
                let cpu = match placed.target {
                    Destination::Run(cpu)
                    | Destination::QueueOn(cpu)
                    | Destination::Preempt(cpu) => Some(cpu),
                    Destination::QueueShared => None,
                };
                if let Some(cpu) = cpu {
                    let now = TimeNs(machine.now_ns);
                    let input = Input::Placed {
                        woken: queued,
                        cpu,
                        class,
                        woke: now,
                    };
                    let _ = core.handle(now, input);
                    let _ = settle(core, &mut self.classed);
                }
                return placed;
            }
        }
        // A batch of one, polled at once: the core's batch is never full here.
        let _ = core.handle(TimeNs(machine.now_ns), Input::Queued(queued));
        let polled = core.poll();
        let _ = settle(core, &mut self.classed);
        let Some(Output::Dispatch(d)) = polled else {
            return Decision::plain(Destination::QueueShared);
        };
        Decision {
            target: match d.target {
                hybridland_policy::Target::Cpu(cpu) if machine.idle.contains(cpu) => {
                    Destination::Run(cpu)
                }
                // A policy may name a busy CPU: the task waits in that CPU's queue, as it does
                // live in the CPU's local queue.
                hybridland_policy::Target::Cpu(cpu) => Destination::QueueOn(cpu),
                hybridland_policy::Target::Shared => Destination::QueueShared,
                hybridland_policy::Target::Preempt(cpu) => Destination::Preempt(cpu),
            },
            placement: d.why.placement(),
            slice_end: d.why.slice_end(),
            slice_ns: Some(d.slice_ns),
            vtime: Some(d.vtime),
            util: Some(d.util),
        }
    }
}

impl SimPolicy for CoreDriven {
    fn name(&self) -> &str {
        match &self.source {
            Source::Builtin(kind, _) => kind.name(),
            Source::Custom(c, _) => c.name,
        }
    }

    fn describe(&self) -> String {
        self.description.clone()
    }

    fn prepare(&mut self, topo: &Topology, seed: u64) -> Result<(), PolicyError> {
        let policy: Box<dyn PlacementPolicy> = match &self.source {
            Source::Builtin(kind, config) => {
                let built = kind
                    .build(topo, config, seed)
                    .map_err(|e| self.config_error(e.to_string()))?;
                if let BuiltinPolicy::CapacityBlind(p) = &built {
                    self.description = format!("scan from cpu {}", p.start());
                }
                Box::new(built)
            }
            Source::Custom(c, values) => {
                let mut knobs = c
                    .default_knobs()
                    .map_err(|e| self.config_error(e.to_string()))?;
                for (i, v) in values.iter().flat_map(KnobValues::as_slice).enumerate() {
                    knobs
                        .set(c.knobs, i, *v)
                        .map_err(|e| self.config_error(e.to_string()))?;
                }
                (c.build)(topo, seed, &knobs).map_err(|e| self.config_error(e))?
            }
        };
        self.prepared = Some((topo.clone(), policy));
        Ok(())
    }

    fn reserve(&mut self, nr_tasks: usize, slice_ns: u64) -> Result<(), PolicyError> {
        let (topo, policy) = self
            .prepared
            .take()
            .ok_or_else(|| self.config_error("not bound to a machine".into()))?;
        let config = CoreConfig {
            slice_ns,
            occupancy: Occupancy::Tracked,
            ..CoreConfig::DEFAULT
        }
        .with_wake_preempt(self.wake_preempt)
        .with_up_scan(self.up_scan);
        let storage = vec![Slot::EMPTY; Slot::count_for(nr_tasks)];
        self.fast = policy
            .wake_table(&topo)
            .filter(|_| self.fast_wake)
            .map(|table| FastTable {
                table: Box::new(table),
                slice_ns,
            });
        self.final_util = vec![None; nr_tasks];
        self.pids = Pids::new(nr_tasks);
        let core = SchedCore::with_policy(topo, policy, config, storage)
            .map_err(|e| self.config_error(e.to_string()))?;
        // Never handed a backlog (`Input::Backlog`), the core keeps its initial 0. It divides the
        // slice by the tasks waiting for its decision: live, the framework's count of tasks still
        // on their way to user space, not the kernel's shared queue; here every wake-up is
        // decided the moment it happens, so none is waiting. Fed the shared queue instead, the
        // replay cut hackbench's slices to 625 us and migrated 25 times as often as the live run
        // it replayed (docs/FIDELITY.md).
        self.core = Some(Box::new(core));
        Ok(())
    }

    fn place(&mut self, machine: &MachineView<'_>, task: &TaskView<'_>) -> Decision {
        PolicyDriver::place(self, &machine.into(), task)
    }

    fn core(&self) -> Option<&Policy> {
        self.core.as_deref().and_then(|c| c.policy().hybridland())
    }

    fn into_driver<'p>(self: Box<Self>) -> Box<dyn PolicyDriver + 'p>
    where
        Self: 'p,
    {
        self
    }
}
