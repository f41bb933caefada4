//! The hybridland policy from the policy crate, driven by the simulator.

use crate::sim_policy::{Decision, MachineView, PolicyError, Reason, SimPolicy, Target, TaskView};
use hybridland_policy::{Policy, PolicyConfig, SliceEnd, TaskHints, Topology};

/// The policy crate's [`Policy`] behind the [`SimPolicy`] interface: a wake-up is one
/// `select_cpu` call, a slice end one `slice_end` call (the rule lives in the policy crate);
/// with nothing idle the task waits in the shared queue and the first allowed CPU to free up
/// takes it (sched_ext's shared DSQ).
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
        if task.reason == Reason::Wakeup {
            let placement = policy.select_cpu(machine.topo, machine.state, &hints);
            return Decision {
                target: placement.cpu.map_or(Target::QueueShared, Target::Run),
                placement: Some(placement),
                slice_end: None,
            };
        }
        // The engine hands over the state with the task's CPU already released; the rule
        // asks about the machine as it was, the task still running there.
        let mut running = machine.state.clone();
        if let Some(own) = task.prev_cpu {
            running.occupy(machine.topo, own);
        }
        let contended = task.reason == Reason::Preempted;
        let answer = policy.slice_end(machine.topo, &running, &hints, contended);
        let (target, placement) = match answer {
            SliceEnd::Move(p) => (p.cpu.map_or(Target::QueueShared, Target::Run), Some(p)),
            SliceEnd::Keep => (task.prev_cpu.map_or(Target::QueueShared, Target::Run), None),
            SliceEnd::Yield => (Target::QueueShared, None),
        };
        Decision {
            target,
            placement,
            slice_end: Some(answer),
        }
    }

    fn core(&self) -> Option<&Policy> {
        self.policy.as_ref()
    }
}
