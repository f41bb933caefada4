//! Baseline policies that reproduce what the seed documents complain about, so a replay can
//! show the difference hybridland makes. Each names the seed it reproduces; `kernel-default`
//! is the default scheduler's documented wake-up path, the honest "what the kernel does".

mod capacity_blind;
mod count_cluster;
mod kernel_default;
mod spread;
mod summed_capacity;

pub use crate::asym_capacity::AsymCapacity;
pub use capacity_blind::CapacityBlind;
pub use count_cluster::CountCluster;
pub use kernel_default::{
    KernelDefault, KernelStep, Wakeup, fits, misfit_target, select_fork, select_wakeup,
    smt_balance_target, wake_affine,
};
pub use spread::Spread;
pub use summed_capacity::SummedCapacity;

use crate::rng::Pcg32;
use crate::sim_policy::{MachineView, Move, QueuedTask};
use hybridland_policy::CpuId;

/// RNG stream for policies, distinct from anything else drawn from the trace's seed.
const POLICY_STREAM: u64 = 0x706f_6c69_6379;

fn policy_rng(seed: u64) -> Pcg32 {
    Pcg32::new(seed, POLICY_STREAM)
}

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
