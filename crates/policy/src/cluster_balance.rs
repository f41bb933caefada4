//! When to spread work across L2 clusters, and how busy a cluster is.
//!
//! Seed 002 (the kernel's "Make Cluster Scheduling Configurable" series) measured +25% and
//! +19% for 6 and 12 copies of a cache-hungry job on a 24-core Atom server with clusters of 4,
//! and nothing at 1 or 24 copies: spreading pays while some clusters can be left uncrowded and
//! stops paying near full load. `auto` follows that curve with two thresholds on the share of
//! busy CPUs.

use crate::config::{ClusterBalance, PolicyConfig};
use crate::cpu_state::CpuState;
use crate::topology::Topology;
use core::cmp::Ordering;

/// Whether cluster balance applies in `state` under `config`.
#[inline]
pub(crate) fn active(config: &PolicyConfig, topo: &Topology, state: &CpuState) -> bool {
    match config.cluster_balance {
        ClusterBalance::Off => false,
        ClusterBalance::On => true,
        ClusterBalance::Auto => {
            let busy_pct = state.nr_busy() * 100 / topo.nr_cpus().max(1);
            busy_pct >= usize::from(config.auto_low_busy_pct)
                && busy_pct < usize::from(config.auto_high_busy_pct)
        }
    }
}

/// The busy share of one cluster, compared as a fraction so clusters of different sizes
/// (an SMT pair, four Atoms) compare fairly.
#[derive(Copy, Clone, Debug)]
pub struct ClusterLoad {
    /// Busy CPUs.
    pub busy: u16,
    /// CPUs in the cluster.
    pub size: u16,
}

impl ClusterLoad {
    /// Whether no CPU of the cluster is busy.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.busy == 0
    }
}

impl PartialEq for ClusterLoad {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for ClusterLoad {}

impl PartialOrd for ClusterLoad {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Orders by busy share `busy / size`; equal shares compare equal whatever the sizes.
impl Ord for ClusterLoad {
    fn cmp(&self, other: &Self) -> Ordering {
        (u32::from(self.busy) * u32::from(other.size))
            .cmp(&(u32::from(other.busy) * u32::from(self.size)))
    }
}
