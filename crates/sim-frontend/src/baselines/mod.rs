//! Baseline policies that reproduce what the seed documents complain about, so a replay can
//! show the difference hybridland makes. Each names the seed it reproduces; `kernel-default`
//! is the default scheduler's documented wake-up path, the honest "what the kernel does".

mod capacity_blind;
mod count_cluster;
mod kernel_default;
mod spread;
mod summed_capacity;

pub use capacity_blind::CapacityBlind;
pub use count_cluster::CountCluster;
pub use kernel_default::{
    AsymCapacity, KernelDefault, KernelStep, Wakeup, fits, misfit_target, select_fork,
    select_wakeup, smt_balance_target, wake_affine,
};
pub use spread::Spread;
pub use summed_capacity::SummedCapacity;

use crate::rng::Pcg32;

/// RNG stream for policies, distinct from anything else drawn from the trace's seed.
const POLICY_STREAM: u64 = 0x706f_6c69_6379;

fn policy_rng(seed: u64) -> Pcg32 {
    Pcg32::new(seed, POLICY_STREAM)
}
