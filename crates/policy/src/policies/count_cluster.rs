//! Seed 000: when Linux 5.16 first enabled cluster scheduling on x86 hybrid parts, "single
//! threaded task often ended up on Atom core (or E-core) instead on idle Big core (or P-core)",
//! because load balancing compared a cluster made of one P-core's SMT pair with a cluster of
//! four Atoms by counting idle CPUs, and four idle Atoms beat two idle hyperthreads.
//!
//! Model: among L2 clusters with an idle allowed CPU, the one with the most idle allowed CPUs
//! (ties: the previous CPU's cluster, then the lowest cluster index); inside it the previous
//! CPU if idle, else the lowest idle CPU. Capacity and core kind play no part.

use crate::idle_order::Placement;
use crate::placement_policy::{PlacementPolicy, View};

/// Count-based cluster spreading.
#[derive(Copy, Clone, Debug, Default)]
pub struct CountCluster;

impl PlacementPolicy for CountCluster {
    fn name(&self) -> &str {
        "count-cluster"
    }

    fn wakeup(&mut self, view: &View<'_>) -> Placement {
        let topo = view.topology();
        let idle = view.idle_allowed();
        let prev_cluster = view
            .prev_cpu()
            .and_then(|p| topo.info(p))
            .map(|i| usize::from(i.cluster));
        let mut best: Option<(usize, usize)> = None; // (idle count, cluster)
        for cluster in 0..topo.nr_clusters() {
            let n = topo
                .cluster_cpus(cluster)
                .iter()
                .filter(|c| idle.contains(**c))
                .count();
            if n == 0 {
                continue;
            }
            let better = match best {
                None => true,
                Some((bn, bc)) => {
                    n > bn || (n == bn && prev_cluster == Some(cluster) && bc != cluster)
                }
            };
            if better {
                best = Some((n, cluster));
            }
        }
        let Some((_, cluster)) = best else {
            return Placement::NO_IDLE;
        };
        let members = topo.cluster_cpus(cluster);
        let cpu = view
            .prev_cpu()
            .filter(|p| members.contains(p) && idle.contains(*p))
            .or_else(|| members.iter().copied().find(|c| idle.contains(*c)));
        view.place_on(cpu)
    }
}
