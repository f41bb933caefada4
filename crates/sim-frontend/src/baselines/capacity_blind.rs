//! Seed 003, point 1: "cpu_power is not used on wake-up which means that new tasks may end up
//! anywhere. Periodic load-balance generally bails out if there is only one task running on a
//! cpu, so the task isn't moved later." On TC2 a lone CPU-bound task took anywhere between
//! 2.09 s (fast CPU) and 4.33 s (slow CPU) and "the distribution can easily change depending on
//! other tasks, reordering the cpus".
//!
//! Model: the first idle allowed CPU by number, scanning from a start CPU drawn once per
//! replay from the trace's seed (which CPU the waker happened to run on); a task whose previous
//! CPU is idle stays there. Across seeds a lone task lands on each CPU with equal chance: on
//! TC2, 2 runs in 5 get a fast CPU.

use super::policy_rng;
use crate::sim_policy::{Decision, MachineView, PolicyError, SimPolicy, Target, TaskView};
use hybridland_policy::{CpuId, Topology};

/// First idle CPU by number from a seeded start.
#[derive(Clone, Debug)]
pub struct CapacityBlind {
    start: CpuId,
}

impl Default for CapacityBlind {
    fn default() -> Self {
        Self { start: CpuId(0) }
    }
}

impl SimPolicy for CapacityBlind {
    fn name(&self) -> &str {
        "capacity-blind"
    }

    fn describe(&self) -> String {
        format!("scan from cpu {}", self.start)
    }

    fn prepare(&mut self, topo: &Topology, seed: u64) -> Result<(), PolicyError> {
        let mut rng = policy_rng(seed);
        let nth = rng.below(topo.nr_cpus() as u32) as usize;
        self.start = topo.cpus().iter().nth(nth).unwrap_or(CpuId(0));
        Ok(())
    }

    fn place(&mut self, machine: &MachineView<'_>, task: &TaskView<'_>) -> Decision {
        let idle = task.allowed.and(machine.state.idle());
        if let Some(prev) = task.prev_cpu.filter(|p| idle.contains(*p)) {
            return Decision::plain(Target::Run(prev));
        }
        let from_start = idle.iter().find(|c| *c >= self.start);
        match from_start.or_else(|| idle.first()) {
            Some(cpu) => Decision::plain(Target::Run(cpu)),
            None => Decision::plain(Target::QueueShared),
        }
    }
}
