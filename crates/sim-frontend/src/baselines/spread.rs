//! Seed 004: with the default scheduler (EEVDF) a steady WebGL render loop on an i7-13800H
//! averaged 31.0 fps with a standard deviation of 1.73, against 33.5 fps and 0.29 on P-cores
//! only, "due to the fact that tasks are evenly distributed across all the cores in the system
//! (both slow and fast cores)".
//!
//! Model: at every wake-up a CPU drawn at random (from the trace's seed) among the idle allowed
//! CPUs whose whole core is idle, else among all idle allowed CPUs, fast or slow alike; a task
//! at the end of its slice stays where it is when that CPU is free.

use super::policy_rng;
use crate::rng::Pcg32;
use crate::sim_policy::{Decision, MachineView, PolicyError, Reason, SimPolicy, Target, TaskView};
use hybridland_policy::{CpuSet, Topology};

/// Random spread over every core kind.
#[derive(Clone, Debug)]
pub struct Spread {
    rng: Pcg32,
}

impl Default for Spread {
    fn default() -> Self {
        Self { rng: policy_rng(0) }
    }
}

impl Spread {
    fn pick(&mut self, set: &CpuSet) -> Option<hybridland_policy::CpuId> {
        let n = set.count() as u32;
        if n == 0 {
            return None;
        }
        set.iter().nth(self.rng.below(n) as usize)
    }
}

impl SimPolicy for Spread {
    fn name(&self) -> &str {
        "spread"
    }

    fn describe(&self) -> String {
        "random idle CPU at wake-up".into()
    }

    fn prepare(&mut self, _topo: &Topology, seed: u64) -> Result<(), PolicyError> {
        self.rng = policy_rng(seed);
        Ok(())
    }

    fn place(&mut self, machine: &MachineView<'_>, task: &TaskView<'_>) -> Decision {
        let idle = task.allowed.and(machine.state.idle());
        if task.reason != Reason::Wakeup {
            if let Some(prev) = task.prev_cpu.filter(|p| idle.contains(*p)) {
                return Decision::plain(Target::Run(prev));
            }
        }
        let whole = idle.and(machine.state.idle_cores());
        let cpu = if whole.is_empty() {
            self.pick(&idle)
        } else {
            self.pick(&whole)
        };
        Decision::plain(cpu.map_or(Target::QueueShared, Target::Run))
    }
}
