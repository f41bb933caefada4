//! Baseline policies that reproduce what the seed documents complain about, so a replay can
//! show the difference hybridland makes. Each names the seed it reproduces.

mod capacity_blind;
mod count_cluster;
mod spread;
mod summed_capacity;

pub use capacity_blind::CapacityBlind;
pub use count_cluster::CountCluster;
pub use spread::Spread;
pub use summed_capacity::SummedCapacity;

use crate::rng::Pcg32;

/// RNG stream for policies, distinct from anything else drawn from the trace's seed.
const POLICY_STREAM: u64 = 0x706f_6c69_6379;

fn policy_rng(seed: u64) -> Pcg32 {
    Pcg32::new(seed, POLICY_STREAM)
}
