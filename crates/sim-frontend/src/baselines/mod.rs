//! Baseline policies that reproduce what the seed documents complain about, so a replay can
//! show the difference hybridland makes. Each names the seed it reproduces; `kernel-default`
//! is the default scheduler's documented wake-up path, the honest "what the kernel does".
//!
//! The ones here keep per-CPU queues with pull balancing, which the live framework has no
//! equivalent of, so they run without a scheduler core, driven by
//! [`Accounted`](crate::sim_policy::Accounted). The baselines that need no balancer
//! (`capacity-blind`, `count-cluster`, `spread`) live in the policy crate and run through its
//! scheduler core, here and live.

mod kernel_default;
mod summed_capacity;

pub use crate::asym_capacity::AsymCapacity;
pub use hybridland_policy::policies::{CapacityBlind, CountCluster, Spread};
pub use kernel_default::{
    KernelDefault, KernelStep, Wakeup, fits, misfit_target, select_fork, select_wakeup,
    smt_balance_target, wake_affine,
};
pub use summed_capacity::SummedCapacity;

use crate::sim_policy::{MachineView, Move, QueuedTask};
use hybridland_policy::CpuId;
use hybridland_policy::policies::policy_rng;

/// The load balancer both load-aware baselines share: each idle CPU, in id order, pulls the
/// task waiting on the busiest queue among those it may take (`may_pull(idle, task)` and the
/// task's affinity), at most one move per task.
fn pull_from_busiest(
    machine: &MachineView<'_>,
    queued: &[QueuedTask<'_>],
    may_pull: impl Fn(CpuId, &QueuedTask<'_>) -> bool,
) -> Vec<Move> {
    let mut moves = Vec::new();
    let mut taken = vec![false; queued.len()];
    for idle in machine.state.idle().iter() {
        let mut pick: Option<(u32, usize)> = None;
        for (i, q) in queued.iter().enumerate() {
            if taken[i] || !q.allowed.contains(idle) || !may_pull(idle, q) {
                continue;
            }
            let l = machine.load.get(q.cpu.index()).copied().unwrap_or(0);
            if pick.is_none_or(|(bl, _)| l > bl) {
                pick = Some((l, i));
            }
        }
        if let Some((_, i)) = pick {
            taken[i] = true;
            moves.push(Move {
                task: queued[i].id,
                to: idle,
            });
        }
    }
    moves
}
