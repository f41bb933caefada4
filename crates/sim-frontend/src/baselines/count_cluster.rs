//! Seed 000: when Linux 5.16 first enabled cluster scheduling on x86 hybrid parts, "single
//! threaded task often ended up on Atom core (or E-core) instead on idle Big core (or P-core)",
//! because load balancing compared a cluster made of one P-core's SMT pair with a cluster of
//! four Atoms by counting idle CPUs, and four idle Atoms beat two idle hyperthreads.
//!
//! Model: among L2 clusters with an idle allowed CPU, the one with the most idle allowed CPUs
//! (ties: the previous CPU's cluster, then the lowest cluster index); inside it the previous
//! CPU if idle, else the lowest idle CPU. Capacity and core kind play no part.

use crate::sim_policy::{Decision, MachineView, PolicyError, SimPolicy, Target, TaskView};
use hybridland_policy::Topology;

/// Count-based cluster spreading.
#[derive(Copy, Clone, Debug, Default)]
pub struct CountCluster;

impl SimPolicy for CountCluster {
    fn name(&self) -> &str {
        "count-cluster"
    }

    fn describe(&self) -> String {
        "most idle CPUs per cluster".into()
    }

    fn prepare(&mut self, _topo: &Topology, _seed: u64) -> Result<(), PolicyError> {
        Ok(())
    }

    fn place(&mut self, machine: &MachineView<'_>, task: &TaskView<'_>) -> Decision {
        let topo = machine.topo;
        let idle = task.allowed.and(machine.state.idle());
        let prev_cluster = task
            .prev_cpu
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
            return Decision::plain(Target::QueueShared);
        };
        let members = topo.cluster_cpus(cluster);
        let cpu = task
            .prev_cpu
            .filter(|p| members.contains(p) && idle.contains(*p))
            .or_else(|| members.iter().copied().find(|c| idle.contains(*c)));
        match cpu {
            Some(cpu) => Decision::plain(Target::Run(cpu)),
            None => Decision::plain(Target::QueueShared),
        }
    }
}
