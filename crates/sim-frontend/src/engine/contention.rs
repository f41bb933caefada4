//! Per-cluster L2 contention state, kept up to date as tasks start and stop so that re-rating
//! a CPU costs O(1) instead of a walk over its cluster (a 1024-CPU
//! cluster made every event cost about a million steps).

use std::collections::BTreeSet;

/// What the machine model needs to know about one L2 cluster's running tasks.
#[derive(Clone, Debug, Default)]
pub(super) struct ClusterContention {
    /// Sum of the cache sensitivities (percent) of the tasks running in the cluster.
    pub(super) sensitivity_sum: u32,
    /// Positions (in [`Topology::cluster_cpus`](hybridland_policy::Topology::cluster_cpus)
    /// order) of the CPUs running a task whose sensitivity is not 0: the only tasks whose rate
    /// changes when a co-runner's sensitivity joins or leaves the sum. Ordered, so re-rating
    /// visits them in cluster order as the full walk did and the replay's bytes do not change.
    pub(super) sensitive: BTreeSet<u16>,
}

impl ClusterContention {
    /// A task of `sensitivity` starts on the CPU at `pos`.
    pub(super) fn start(&mut self, pos: u16, sensitivity: u8) {
        self.sensitivity_sum += u32::from(sensitivity);
        if sensitivity > 0 {
            self.sensitive.insert(pos);
        }
    }

    /// The task of `sensitivity` on the CPU at `pos` stops.
    pub(super) fn stop(&mut self, pos: u16, sensitivity: u8) {
        self.sensitivity_sum -= u32::from(sensitivity);
        if sensitivity > 0 {
            self.sensitive.remove(&pos);
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn sums_and_members_follow_starts_and_stops() {
        let mut c = ClusterContention::default();
        c.start(3, 50);
        c.start(1, 0);
        c.start(0, 20);
        assert_eq!(c.sensitivity_sum, 70);
        assert_eq!(c.sensitive.iter().copied().collect::<Vec<_>>(), [0, 3]);
        c.stop(3, 50);
        c.stop(1, 0);
        assert_eq!(c.sensitivity_sum, 20);
        assert_eq!(c.sensitive.iter().copied().collect::<Vec<_>>(), [0]);
    }
}
