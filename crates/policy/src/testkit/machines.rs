use crate::{CoreKind, CpuId, Topology, TopologyBuilder};
use std::vec::Vec;

/// A run of identical cores, `cores_per_cluster` of them to each L2 cluster.
#[derive(Clone, Debug)]
pub struct CoreGroup {
    /// Kind of every core.
    pub kind: CoreKind,
    /// Capacity of every CPU.
    pub capacity: u16,
    /// Number of cores.
    pub cores: usize,
    /// Logical CPUs per core (1 = no SMT).
    pub smt: usize,
    /// Cores sharing one cluster; 0 leaves clustering to the builder (one cluster per core).
    pub cores_per_cluster: usize,
    /// Ranks of the cores, cycled; empty means rank 0 everywhere.
    pub ranks: Vec<u16>,
}

impl CoreGroup {
    /// `cores` cores of `kind` and `capacity`, `smt` threads each, `per_cluster` per cluster.
    pub fn new(
        kind: CoreKind,
        capacity: u16,
        cores: usize,
        smt: usize,
        per_cluster: usize,
    ) -> Self {
        Self {
            kind,
            capacity,
            cores,
            smt,
            cores_per_cluster: per_cluster,
            ranks: Vec::new(),
        }
    }
}

/// How logical CPU ids are assigned to SMT threads.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Numbering {
    /// Siblings get consecutive ids (Intel client parts: 0-1 is P-core 0).
    Consecutive,
    /// All first threads, then all second threads (many servers: 0 and N are siblings).
    Split,
}

/// The smallest machine with a favoured core: E-cores 0-1 (capacity 600) and P-cores 2-3
/// (capacity 1024), of which 3 is the favoured core (higher rank); no SMT, one cluster a core.
///
/// # Panics
/// Never (the machine is valid); this is a test helper.
pub fn favoured_core_machine() -> Topology {
    let mut b = TopologyBuilder::new();
    b.add_cpu(CpuId(0), CoreKind::Efficiency, 600, 0).unwrap();
    b.add_cpu(CpuId(1), CoreKind::Efficiency, 600, 0).unwrap();
    b.add_cpu(CpuId(2), CoreKind::Performance, 1024, 1).unwrap();
    b.add_cpu(CpuId(3), CoreKind::Performance, 1024, 2).unwrap();
    b.build().unwrap()
}

/// Builds a machine from core groups, numbering CPUs in group order.
///
/// # Panics
/// If the description is invalid (more than 1024 CPUs, capacity 0); this is a test helper.
pub fn machine(groups: &[CoreGroup], numbering: Numbering) -> Topology {
    let total_cores: usize = groups.iter().map(|g| g.cores).sum();
    let mut b = TopologyBuilder::new();
    let mut core_index = 0;
    let mut next_id = 0;
    let mut clusters = Vec::new();
    for g in groups {
        let mut cluster = Vec::new();
        for c in 0..g.cores {
            let rank = if g.ranks.is_empty() {
                0
            } else {
                g.ranks[c % g.ranks.len()]
            };
            let mut siblings = Vec::new();
            for t in 0..g.smt {
                let id = match numbering {
                    Numbering::Consecutive => {
                        next_id += 1;
                        next_id - 1
                    }
                    Numbering::Split => t * total_cores + core_index,
                };
                let cpu = CpuId(id as u16);
                b.add_cpu(cpu, g.kind, g.capacity, rank).expect("valid cpu");
                siblings.push(cpu);
            }
            b.add_core(&siblings).expect("valid core");
            core_index += 1;
            if g.cores_per_cluster > 0 {
                cluster.extend_from_slice(&siblings);
                if (c + 1) % g.cores_per_cluster == 0 || c + 1 == g.cores {
                    clusters.push(core::mem::take(&mut cluster));
                }
            }
        }
    }
    for cluster in &clusters {
        b.add_cluster(cluster).expect("valid cluster");
    }
    b.build().expect("valid machine")
}
