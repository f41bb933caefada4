//! The hybridland policy from the policy crate, driven by the simulator.

use crate::sim_policy::{Decision, MachineView, PolicyError, SimPolicy, Target, TaskView};
use hybridland_policy::{Policy, PolicyConfig, TaskHints, Topology};

/// The policy crate's [`Policy`] behind the [`SimPolicy`] interface. Every wake-up and slice
/// end is one `select_cpu` call; with nothing idle the task waits in the shared queue and the
/// first allowed CPU to free up takes it (sched_ext's shared DSQ).
#[derive(Clone, Debug)]
pub struct Hybridland {
    config: PolicyConfig,
    policy: Option<Policy>,
}

impl Hybridland {
    /// The policy with these knobs, to be bound to a machine by `prepare`.
    pub fn new(config: PolicyConfig) -> Self {
        Self {
            config,
            policy: None,
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
        let policy = Policy::new(topo, &self.config).map_err(|e| PolicyError::Config {
            policy: "hybridland".into(),
            reason: e.to_string(),
        })?;
        self.policy = Some(policy);
        Ok(())
    }

    fn place(&mut self, machine: &MachineView<'_>, task: &TaskView<'_>) -> Decision {
        let Some(policy) = &self.policy else {
            return Decision::plain(Target::QueueShared);
        };
        let hints = TaskHints {
            allowed: task.allowed,
            prev_cpu: task.prev_cpu,
            util: task.util,
        };
        let placement = policy.select_cpu(machine.topo, machine.state, &hints);
        Decision {
            target: placement.cpu.map_or(Target::QueueShared, Target::Run),
            placement: Some(placement),
        }
    }

    fn core(&self) -> Option<&Policy> {
        self.policy.as_ref()
    }
}
