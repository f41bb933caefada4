//! The hybridland policy from the policy crate, driven by the simulator through the crate's
//! scheduler core ([`SchedCore`](hybridland_policy::SchedCore)): the same per-task sequence
//! the live loop runs.

use crate::sim_policy::{
    Decision, MachineView, PolicyError, Reason, SimCore, SimPolicy, Target, TaskView,
};
use hybridland_policy::{
    Affinity, Arrival, CoreConfig, Policy, PolicyConfig, Queued, SchedCore, Slot, Topology,
    UtilSource, Waiting,
};

/// The policy crate's scheduler core behind the [`SimPolicy`] interface: a wake-up or a
/// slice end is one batch of one task handed to the core and its dispatch polled out; with
/// nothing idle the task waits in the shared queue (sched_ext's shared DSQ) with the core's
/// vtime, and the first allowed CPU to free up takes it.
pub struct Hybridland {
    config: PolicyConfig,
    /// Bound by `prepare`.
    topo: Option<Topology>,
    /// Built by `reserve`.
    core: Option<Box<SimCore>>,
}

impl Hybridland {
    /// The policy with these knobs, to be bound to a machine by `prepare`.
    pub fn new(config: PolicyConfig) -> Self {
        Self {
            config,
            topo: None,
            core: None,
        }
    }
}

impl SimPolicy for Hybridland {
    fn name(&self) -> &str {
        "hybridland"
    }

    fn describe(&self) -> String {
        let c = &self.config;
        format!(
            "primary_domain={} cluster_balance={} auto_low_busy_pct={} auto_high_busy_pct={} fit_margin_pct={}",
            c.primary_domain,
            c.cluster_balance,
            c.auto_low_busy_pct,
            c.auto_high_busy_pct,
            c.fit_margin_pct
        )
    }

    fn prepare(&mut self, topo: &Topology, _seed: u64) -> Result<(), PolicyError> {
        // The knobs are checked against the machine now; the core that uses them is built by
        // `reserve`.
        Policy::new(topo, &self.config).map_err(|e| PolicyError::Config {
            policy: "hybridland".into(),
            reason: e.to_string(),
        })?;
        self.topo = Some(topo.clone());
        Ok(())
    }

    fn reserve(&mut self, nr_tasks: usize, slice_ns: u64) -> Result<(), PolicyError> {
        let err = |reason: String| PolicyError::Config {
            policy: "hybridland".into(),
            reason,
        };
        let topo = self
            .topo
            .clone()
            .ok_or_else(|| err("not bound to a machine".into()))?;
        let config = CoreConfig {
            slice_ns,
            ..CoreConfig::DEFAULT
        };
        let storage = vec![Slot::EMPTY; Slot::count_for(nr_tasks)];
        let core =
            SchedCore::new(topo, &self.config, config, storage).map_err(|e| err(e.to_string()))?;
        self.core = Some(Box::new(core));
        Ok(())
    }

    fn place(&mut self, machine: &MachineView<'_>, task: &TaskView<'_>) -> Decision {
        let Some(core) = self.core.as_mut() else {
            return Decision::plain(Target::QueueShared);
        };
        let arrival = match task.reason {
            Reason::Wakeup => Arrival::Wakeup { waker: None },
            // Nothing of this policy waits in a CPU's own queue: a waiter is in the shared one.
            Reason::Preempted => Arrival::SliceEnd {
                waiting: Waiting::SharedQueue,
            },
            Reason::SliceEnd => Arrival::SliceEnd {
                waiting: Waiting::Nobody,
            },
        };
        core.handle_backlog(machine.waiting);
        let queued = Queued {
            // Task indices are below the trace's task limit, far from u32::MAX.
            task: u32::try_from(task.id).unwrap_or(u32::MAX),
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
        let _ = core.handle_queued(machine.now_ns, &queued);
        let Some(d) = core.poll_dispatch() else {
            return Decision::plain(Target::QueueShared);
        };
        Decision {
            target: match d.target {
                hybridland_policy::Target::Cpu(cpu) => Target::Run(cpu),
                hybridland_policy::Target::Shared => Target::QueueShared,
            },
            placement: d.why.placement(),
            slice_end: d.why.slice_end(),
            slice_ns: Some(d.slice_ns),
            vtime: Some(d.vtime),
        }
    }

    fn core(&self) -> Option<&Policy> {
        self.core.as_deref().map(SchedCore::policy)
    }

    fn sched_core(&mut self) -> Option<&mut SimCore> {
        self.core.as_deref_mut()
    }
}
