//! Seed 003, point 1: "cpu_power is not used on wake-up which means that new tasks may end up
//! anywhere. Periodic load-balance generally bails out if there is only one task running on a
//! cpu, so the task isn't moved later." On TC2 a lone CPU-bound task took anywhere between
//! 2.09 s (fast CPU) and 4.33 s (slow CPU) and "the distribution can easily change depending on
//! other tasks, reordering the cpus".
//!
//! Model: the previous CPU when it is idle, else the first idle allowed CPU by number, scanning
//! from a start CPU drawn once from the caller's seed (which CPU the waker happened to run on).
//! Across seeds a lone task lands on each CPU with equal chance: on TC2, 2 runs in 5 get a fast
//! CPU.

use super::policy_rng;
use crate::cpu_set::CpuId;
use crate::idle_order::Placement;
use crate::placement_policy::{PlacementPolicy, View};
use crate::topology::Topology;

/// First idle CPU by number from a seeded start.
#[derive(Copy, Clone, Debug)]
pub struct CapacityBlind {
    start: CpuId,
}

impl CapacityBlind {
    /// The policy for `topo`, its start CPU drawn from `seed`.
    pub fn new(topo: &Topology, seed: u64) -> Self {
        let mut rng = policy_rng(seed);
        let nth = rng.below(topo.nr_cpus() as u32) as usize;
        Self {
            start: topo.cpus().iter().nth(nth).unwrap_or(CpuId(0)),
        }
    }

    /// The CPU the scan starts from.
    pub fn start(&self) -> CpuId {
        self.start
    }
}

impl PlacementPolicy for CapacityBlind {
    fn name(&self) -> &str {
        "capacity-blind"
    }

    fn wakeup(&mut self, view: &View<'_>) -> Placement {
        let idle = view.idle_allowed();
        if let Some(prev) = view.prev_cpu().filter(|p| idle.contains(*p)) {
            return view.place_on(Some(prev));
        }
        let from_start = idle.iter().find(|c| *c >= self.start);
        view.place_on(from_start.or_else(|| idle.first()))
    }
}
