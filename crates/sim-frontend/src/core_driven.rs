//! Policies the policy crate's scheduler core drives ([`SchedCore`]): hybridland, the built-in
//! baselines that run live too, and any [`PlacementPolicy`] a user registers. The simulator
//! runs the same per-task sequence around them that the live loop runs.

use crate::sim_policy::{
    Decision, MachineView, PolicyError, Reason, SimCore, SimPolicy, Target, TaskView,
};
pub use hybridland_policy::CustomPolicy;
use hybridland_policy::{
    Affinity, Arrival, BalanceRange, Builtin, BuiltinPolicy, CoreConfig, FastWake, Input,
    Occupancy, Output, Placement, PlacementPolicy, Policy, PolicyConfig, Queued, Reach, SchedCore,
    Slot, TimeNs, Topology, UtilSource, Waiting, WakePreempt,
};

/// Where a core-driven policy comes from.
#[derive(Clone, Debug)]
enum Source {
    Builtin(Builtin, PolicyConfig),
    Custom(CustomPolicy),
}

/// A policy behind the scheduler core, behind the [`SimPolicy`] interface: a wake-up or a
/// slice end is one batch of one task handed to the core and its dispatch polled out; with
/// nothing idle the task waits in the shared queue (sched_ext's shared DSQ) with the core's
/// vtime, and the first allowed CPU to free up takes it.
pub struct CoreDriven {
    source: Source,
    description: String,
    /// Built by `prepare`.
    prepared: Option<(Topology, Box<dyn PlacementPolicy>)>,
    /// Built by `reserve`.
    core: Option<Box<SimCore>>,
    /// Whether to model the live scheduler's in-kernel wake-up fast path (hybridland only).
    fast_wake: bool,
    /// Its table, built by `reserve` when modelled.
    fast: Option<FastTable>,
    /// The core's wake-up preemption.
    wake_preempt: bool,
}

/// The live fast path's table (`scx_hybridland`'s `src/fast_wake.rs` writes the same one into
/// the kernel): per CPU, when a waking task that last ran there stays there without the core.
#[derive(Clone, Debug)]
struct FastTable {
    entries: Vec<FastWake>,
    balance: BalanceRange,
    slice_ns: u64,
}

impl FastTable {
    fn new(topo: &Topology, policy: &Policy, slice_ns: u64) -> Self {
        Self {
            entries: policy.fast_wake_table(topo).collect(),
            balance: policy.balance_range(topo),
            slice_ns,
        }
    }

    /// The fast path's decision for woken `task`, if it keeps it: its previous CPU with the
    /// base slice, as live.
    fn keeps(&self, machine: &MachineView<'_>, task: &TaskView<'_>) -> Option<Decision> {
        let prev = task.prev_cpu?;
        let entry = self.entries.get(prev.index())?;
        entry
            .keeps(machine.topo, machine.idle, task.allowed, prev, self.balance)
            .then_some(Decision {
                target: Target::Run(prev),
                placement: Some(Placement {
                    cpu: Some(prev),
                    step: entry.step,
                    reach: Reach::Primary,
                }),
                slice_end: None,
                slice_ns: Some(self.slice_ns),
                vtime: None,
                util: None,
            })
    }
}

impl CoreDriven {
    /// The built-in policy `kind`; `config` are hybridland's knobs (the baselines have none).
    pub fn builtin(kind: Builtin, config: PolicyConfig) -> Self {
        let description = match kind {
            Builtin::Hybridland => {
                let c = &config;
                format!(
                    "primary_domain={} cluster_balance={} auto_low_busy_pct={} auto_high_busy_pct={} fit_margin_pct={}",
                    c.primary_domain,
                    c.cluster_balance,
                    c.auto_low_busy_pct,
                    c.auto_high_busy_pct,
                    c.fit_margin_pct
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

    /// A user's policy.
    pub fn custom(policy: CustomPolicy) -> Self {
        Self::from_source(Source::Custom(policy), policy.description.to_owned())
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

    fn config_error(&self, reason: String) -> PolicyError {
        PolicyError::Config {
            policy: self.name().to_owned(),
            reason,
        }
    }
}

impl SimPolicy for CoreDriven {
    fn name(&self) -> &str {
        match &self.source {
            Source::Builtin(kind, _) => kind.name(),
            Source::Custom(c) => c.name,
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
            Source::Custom(c) => (c.build)(topo, seed).map_err(|e| self.config_error(e))?,
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
            wake_preempt: if self.wake_preempt {
                WakePreempt::SliceAhead
            } else {
                WakePreempt::Off
            },
            occupancy: Occupancy::Tracked,
            ..CoreConfig::DEFAULT
        };
        let storage = vec![Slot::EMPTY; Slot::count_for(nr_tasks)];
        self.fast = policy
            .hybridland()
            .filter(|_| self.fast_wake)
            .map(|p| FastTable::new(&topo, p, slice_ns));
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
        let Some(core) = self.core.as_mut() else {
            return Decision::plain(Target::QueueShared);
        };
        // Live, a wake-up the fast path keeps never reaches the core: it runs on its previous
        // CPU with the base slice, and the core learns of it only through the task's later runs.
        if task.reason == Reason::Wakeup
            && let Some(kept) = self.fast.as_ref().and_then(|f| f.keeps(machine, task))
        {
            return kept;
        }
        let arrival = match task.reason {
            Reason::Wakeup => Arrival::Wakeup {
                waker: task
                    .waker_cpu
                    .map(|cpu| hybridland_policy::Waker { task: None, cpu }),
            },
            // Nothing of a core-driven policy waits in a CPU's own queue: a waiter is in the
            // shared one.
            Reason::Preempted => Arrival::SliceEnd {
                waiting: Waiting::SharedQueue,
            },
            Reason::SliceEnd => Arrival::SliceEnd {
                waiting: Waiting::Nobody,
            },
        };
        let queued = Queued {
            // Task indices are below the trace's task limit, far from u32::MAX.
            task: u32::try_from(task.id).unwrap_or(u32::MAX),
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
        // A batch of one, polled at once: the core's batch is never full here.
        let _ = core.handle(TimeNs(machine.now_ns), Input::Queued(queued));
        let Some(Output::Dispatch(d)) = core.poll() else {
            return Decision::plain(Target::QueueShared);
        };
        Decision {
            target: match d.target {
                hybridland_policy::Target::Cpu(cpu) if machine.idle.contains(cpu) => {
                    Target::Run(cpu)
                }
                // A policy may name a busy CPU: the task waits in that CPU's queue, as it does
                // live in the CPU's local queue.
                hybridland_policy::Target::Cpu(cpu) => Target::QueueOn(cpu),
                hybridland_policy::Target::Shared => Target::QueueShared,
                hybridland_policy::Target::Preempt(cpu) => Target::Preempt(cpu),
            },
            placement: d.why.placement(),
            slice_end: d.why.slice_end(),
            slice_ns: Some(d.slice_ns),
            vtime: Some(d.vtime),
            util: Some(d.util),
        }
    }

    fn core(&self) -> Option<&Policy> {
        self.core.as_deref().and_then(|c| c.policy().hybridland())
    }

    fn sched_core(&mut self) -> Option<&mut SimCore> {
        self.core.as_deref_mut()
    }
}
